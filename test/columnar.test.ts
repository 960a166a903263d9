import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { allocate } from '../src/allocate/allocate.js';
import { planToJson } from '../src/allocate/plan.js';
import { decodeArrow } from '../src/forest/arrow.js';
import { encodeArrow } from '../src/forest/arrow-write.js';
import { ndArraysOfForest, packNdArrays, type NdArray } from '../src/forest/columnar.js';
import { loadForestFile, parseColumnarForest, parseForest } from '../src/forest/load.js';
import { decodeNpy, encodeNpy } from '../src/forest/npy.js';
import { decodeNpz, encodeNpz } from '../src/forest/npz.js';
import { packForest, type PackedForest } from '../src/forest/packed.js';
import { writeForestFile } from '../src/forest/write.js';
import { scoreCpu } from '../src/score/cpu.js';
import { generateForest } from '../src/synth/generate.js';
import { runCli } from './cli-helpers.js';
import { PYTHON } from './python.js';

const dir = mkdtempSync(join(tmpdir(), 'trace-alloc-columnar-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const small = () => packForest({ dim: 2, trees: [
  { id: 'a', nodes: [{ embedding: [1, 0] }, { parent: 0, reward: 1, visits: 2, embedding: [1, 0.1] }, { parent: 0, visits: 1, uncertainty: 0.3, embedding: [0, 1] }] },
  { id: 'b', nodes: [{ embedding: [0, 1] }, { parent: 0, embedding: [0.5, 1] }, { parent: 1, terminal: true, embedding: [0.4, 1] }, { parent: 1, embedding: [0.6, 1] }] },
] });

function planOf(forest: PackedForest) {
  const scores = scoreCpu(forest, { alpha: 1, tau: 0.5 });
  return planToJson(forest, scores, allocate(forest, scores, { budget: 16 }), { includeScores: true });
}

function expectSameForest(a: PackedForest, b: PackedForest) {
  expect(b.treeIds).toEqual(a.treeIds);
  for (const k of ['treeOffset', 'parentRow', 'reward', 'visits', 'uncertainty', 'terminal', 'embedding'] as const) expect(Array.from(b[k]), k).toEqual(Array.from(a[k]));
}

/** The columns of `small()` with one column changed, encoded as an .npz. */
function npzWith(change: (cols: Map<string, NdArray>) => void): Uint8Array {
  const cols = ndArraysOfForest(small()) as Map<string, NdArray>;
  change(cols);
  return encodeNpz(cols);
}

/** The message a JSON forest with the same defect gets: errors must read the same. */
function jsonError(edit: (trees: any[]) => void): string {
  const trees = JSON.parse(JSON.stringify([
    { id: 'a', nodes: [{ embedding: [1, 0] }, { parent: 0, reward: 1, visits: 2, embedding: [1, 0.1] }, { parent: 0, visits: 1, uncertainty: 0.3, embedding: [0, 1] }] },
    { id: 'b', nodes: [{ embedding: [0, 1] }, { parent: 0, embedding: [0.5, 1] }, { parent: 1, terminal: true, embedding: [0.4, 1] }, { parent: 1, embedding: [0.6, 1] }] },
  ]));
  edit(trees);
  try { packForest({ dim: 2, trees }); } catch (err) { return (err as Error).message; }
  throw new Error('the JSON forest was accepted');
}

describe('columnar forests (.npz, Arrow IPC)', () => {
  it('round-trips a forest through .npz and Arrow (file and stream), float32 embeddings kept float32', () => {
    const f = generateForest({ trees: 30, dim: 7, seed: 11 });
    expect(f.embedding).toBeInstanceOf(Float32Array);
    const viaNpz = packNdArrays(decodeNpz(encodeNpz(ndArraysOfForest(f)), 'x.npz'), 'x.npz');
    expectSameForest(f, viaNpz);
    expect(viaNpz.embedding).toBeInstanceOf(Float32Array);
    const compressed = encodeNpz(ndArraysOfForest(f), true);
    expectSameForest(f, packNdArrays(decodeNpz(compressed, 'c.npz'), 'c.npz'));
    for (const format of ['file', 'stream'] as const) {
      const back = parseColumnarForest(encodeArrow(f, format), 'x.arrow');
      expectSameForest(f, back);
      expect(back.embedding).toBeInstanceOf(Float32Array);
    }
  });

  it('reads what numpy.savez and numpy.savez_compressed write (int64, bool, <U ids)', () => {
    const script = `
import numpy as np, sys
for name, save in (("plain", np.savez), ("zipped", np.savez_compressed)):
    save(sys.argv[1] + "/" + name + ".npz", tree_offset=np.array([0, 3, 7]), tree_id=np.array(["a", "b"]),
         parent=np.array([-1, 0, 0, -1, 0, 1, 1]), reward=np.array([0, 1, 0, 0, 0, 0, 0.0]), visits=np.array([0, 2, 1, 0, 0, 0, 0]),
         uncertainty=np.array([0, 0, 0.3, 0, 0, 0, 0]), terminal=np.array([0, 0, 0, 0, 0, 1, 0], dtype=bool),
         embedding=np.array([[1, 0], [1, 0.1], [0, 1], [0, 1], [0.5, 1], [0.4, 1], [0.6, 1]]))
`;
    const run = spawnSync(PYTHON, ['-c', script, dir], { encoding: 'utf8' });
    expect(run.status, `${PYTHON} with numpy is needed: ${run.stderr}`).toBe(0);
    for (const name of ['plain', 'zipped']) expectSameForest(small(), loadForestFile(join(dir, `${name}.npz`)));
  });

  it('scores a generated forest to the same plan from .jsonl, .json, .npz and .arrow (convert both ways)', () => {
    const f = generateForest({ trees: 40, dim: 16, seed: 3 });
    writeForestFile(f, join(dir, 'g.npz'), 'npz');
    const plans: string[] = [];
    for (const [from, to] of [['g.npz', 'g.jsonl'], ['g.jsonl', 'g.arrow'], ['g.arrow', 'g.json'], ['g.json', 'g2.npz']]) {
      const r = runCli(['convert', join(dir, from), join(dir, to)]);
      expect(r.code, r.stderr).toBe(0);
    }
    for (const file of ['g.npz', 'g.jsonl', 'g.arrow', 'g.json', 'g2.npz']) {
      const r = runCli(['score', join(dir, file), '--backend', 'cpu', '--scores']);
      expect(r.code, r.stderr).toBe(0);
      plans.push(r.stdout);
    }
    expect(new Set(plans).size).toBe(1);
    expect(JSON.parse(plans[0])).toEqual(JSON.parse(JSON.stringify(planOf(f))));
    // Sniffed without an extension, and from standard input.
    writeFileSync(join(dir, 'noext'), readFileSync(join(dir, 'g.arrow')));
    expect(runCli(['score', join(dir, 'noext'), '--backend', 'cpu', '--scores']).stdout).toBe(plans[0]);
    const stdin = spawnSync(process.execPath, [join(__dirname, '../dist/cli/main.js'), 'score', '-', '--backend', 'cpu', '--scores'], { input: readFileSync(join(dir, 'g.npz')), encoding: 'utf8' });
    expect(stdin.stdout).toBe(plans[0]);
  });

  it('rejects bad values with the same message as JSON (tree, node and field named)', () => {
    const cases: [string, (c: Map<string, NdArray>) => void, (t: any[]) => void][] = [
      ['visits', (c) => { (c.get('visits')!.data as Float64Array)[5] = 1.5; }, (t) => { t[1].nodes[2].visits = 1.5; }],
      ['reward', (c) => { (c.get('reward')!.data as Float64Array)[1] = NaN; }, (t) => { t[0].nodes[1].reward = NaN; }],
      ['parent', (c) => { (c.get('parent')!.data as Int32Array)[6] = 3; }, (t) => { t[1].nodes[3].parent = 3; }],
      ['embedding', (c) => { (c.get('embedding')!.data as Float64Array)[9] = Infinity; }, (t) => { t[1].nodes[1].embedding[1] = Infinity; }],
      ['uncertainty', (c) => { (c.get('uncertainty')!.data as Float64Array)[2] = -1; }, (t) => { t[0].nodes[2].uncertainty = -1; }],
    ];
    for (const [name, edit, editJson] of cases) {
      const expected = jsonError(editJson);
      expect(() => parseColumnarForest(npzWith(edit), 'x.npz'), name).toThrow(expected);
    }
  });

  it('names the column on dtype, shape and container errors', () => {
    const bad = (edit: (c: Map<string, NdArray>) => void) => () => parseColumnarForest(npzWith(edit), 'x.npz');
    expect(bad((c) => c.set('parent', { kind: 'numeric', dtype: 'float64', shape: [7], data: new Float64Array(7) }))).toThrow('field "parent": x.npz: must be integers, got dtype float64');
    expect(bad((c) => c.set('embedding', { kind: 'numeric', dtype: 'int32', shape: [7, 2], data: new Int32Array(14) }))).toThrow('field "embedding": x.npz: must be float32 or float64, got dtype int32');
    expect(bad((c) => c.set('embedding', { kind: 'numeric', dtype: 'float64', shape: [14], data: new Float64Array(14) }))).toThrow('field "embedding": x.npz: must be 2-D (nodes × dim), got shape (14)');
    expect(bad((c) => c.set('embedding', { kind: 'numeric', dtype: 'float64', shape: [6, 2], data: new Float64Array(12) }))).toThrow('has 6 rows, expected 7');
    expect(bad((c) => c.set('reward', { kind: 'numeric', dtype: 'float64', shape: [6], data: new Float64Array(6) }))).toThrow('field "reward": column has 6 entries, expected 7');
    expect(bad((c) => c.set('rewrd', { kind: 'numeric', dtype: 'float64', shape: [7], data: new Float64Array(7) }))).toThrow('field "rewrd": x.npz: unknown column');
    expect(bad((c) => c.delete('parent'))).toThrow('field "parent": x.npz: the column is required');
    expect(bad((c) => c.set('terminal', { kind: 'numeric', dtype: 'int8', shape: [7], data: Int8Array.of(0, 0, 0, 0, 0, -1, 0) }))).toThrow('tree #1, node 2, field "terminal": must be 0 or 1, got -1');
    expect(() => parseColumnarForest(encodeNpz(ndArraysOfForest(small())).subarray(0, 200), 'cut.npz')).toThrow(/cut\.npz/);
    expect(() => parseColumnarForest(new Uint8Array([0xff, 0xff, 0xff, 0xff, 1, 2, 3]), 'junk')).toThrow(/junk: not a valid Arrow IPC/);
  });

  it('parses .npy headers strictly', () => {
    const [head, body] = encodeNpy({ kind: 'numeric', dtype: 'float32', shape: [2, 3], data: new Float32Array(6).fill(1.5) });
    expect(head.length % 64).toBe(0);
    const whole = new Uint8Array([...head, ...body]);
    expect(decodeNpy(whole, 'e')).toMatchObject({ dtype: 'float32', shape: [2, 3] });
    const withHeader = (h: string) => {
      const text = h.padEnd(118, ' ') + '\n';
      const bytes = new Uint8Array(10 + text.length);
      bytes.set([0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59, 1, 0, text.length, 0]);
      for (let i = 0; i < text.length; i++) bytes[10 + i] = text.charCodeAt(i);
      return bytes;
    };
    expect(() => decodeNpy(withHeader("{'descr': '|O', 'fortran_order': False, 'shape': (2,), }"), 'ids')).toThrow('field "ids": has dtype \'|O\'');
    expect(() => decodeNpy(withHeader("{'descr': '>f8', 'fortran_order': False, 'shape': (0,), }"), 'r')).toThrow('big-endian');
    expect(() => decodeNpy(withHeader("{'descr': '<f8', 'fortran_order': True, 'shape': (2, 2), }"), 'e')).toThrow('Fortran');
    expect(() => decodeNpy(withHeader("{'descr': '<f8', 'shape': (2,), }"), 'r')).toThrow("no 'fortran_order'");
    expect(() => decodeNpy(withHeader("{'descr': '<f8', 'fortran_order': False, 'shape': (2,), 'x': __import__('os')}"), 'r')).toThrow('unexpected header text');
    expect(() => decodeNpy(withHeader("{'descr': '<f8', 'fortran_order': False, 'shape': (2,), }"), 'r')).toThrow('truncated');
  });

  it('takes trees from a per-row tree index or from runs of per-row ids in Arrow', () => {
    const f = small();
    const arrays = decodeArrow(encodeArrow(f, 'stream'), 's');
    const noIndex = new Map(arrays);
    noIndex.delete('tree');
    expectSameForest(f, packNdArrays(noIndex, 's'));
    const noIds = new Map(arrays);
    noIds.delete('tree_id');
    expect(packNdArrays(noIds, 's').treeIds).toEqual(['0', '1']);
    const shuffled = new Map(arrays);
    shuffled.set('tree', { kind: 'numeric', dtype: 'int32', shape: [7], data: Int32Array.of(0, 0, 1, 0, 1, 1, 1) });
    expect(() => packNdArrays(shuffled, 's')).toThrow('rows must be in tree order');
  });

  it('convert refuses an unknown output format or a bad input with exit 2 and writes nothing', () => {
    writeFileSync(join(dir, 'bad.jsonl'), '{"id":"a","nodes":[{"visits":1.5}]}\n');
    const bad = runCli(['convert', join(dir, 'bad.jsonl'), join(dir, 'bad.npz')]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('tree "a" (#0), node 0, field "visits"');
    expect(() => readFileSync(join(dir, 'bad.npz'))).toThrow();
    const unknown = runCli(['convert', join(dir, 'bad.jsonl'), join(dir, 'out.bin')]);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('--format');
    expect(runCli(['convert', '--help']).stdout).toContain('usage: trace-alloc convert IN OUT');
  });

  it('keeps JSON parsing as it was for text', () => {
    expect(parseForest('{"trees":[{"nodes":[{}]}]}').treeCount).toBe(1);
  });
});
