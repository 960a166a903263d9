import { spawnSync } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { allocate } from '../src/allocate/allocate.js';
import { planToJson } from '../src/allocate/plan.js';
import { encodeArrow } from '../src/forest/arrow-write.js';
import { ndArraysOfForest, type NdArray } from '../src/forest/columnar.js';
import { encodeNpz } from '../src/forest/npz.js';
import type { TreeInput } from '../src/forest/input.js';
import { packForest, type PackedForest } from '../src/forest/packed.js';
import { LiveSession } from '../src/live/protocol.js';
import { scoreCpu } from '../src/score/cpu.js';
import { generateForest } from '../src/synth/generate.js';
import { CLI } from './cli-helpers.js';

type Reply = { id: unknown; ok: boolean; result?: any; error?: { code: string; message: string; tree?: string; node?: number; field?: string } };

/** Sends a header line and its payload the way serve does (in process). */
async function sendBatch(s: LiveSession, header: Record<string, unknown>, payload: Uint8Array): Promise<Reply> {
  const frame = s.binaryFrame(JSON.stringify({ op: 'add-columns', bytes: payload.length, ...header }));
  expect(frame).toBeDefined();
  return JSON.parse(await frame!.complete(payload)) as Reply;
}
async function send(s: LiveSession, request: unknown): Promise<Reply> {
  return JSON.parse((await s.handleLine(JSON.stringify(request)))!) as Reply;
}

const viaJson = (x: unknown) => JSON.parse(JSON.stringify(x));

/** A packed forest's trees as input objects, ids prefixed. */
function treesOf(f: PackedForest, prefix: string): TreeInput[] {
  return Array.from({ length: f.treeCount }, (_, t) => ({
    id: `${prefix}${t}`,
    nodes: Array.from({ length: f.treeOffset[t + 1] - f.treeOffset[t] }, (_, v) => {
      const row = f.treeOffset[t] + v;
      const p = f.parentRow[row];
      return { parent: p < 0 ? -1 : p - f.treeOffset[t], reward: f.reward[row], visits: f.visits[row], uncertainty: f.uncertainty[row], terminal: f.terminal[row] === 1, embedding: Array.from(f.embedding.subarray(row * f.dim, (row + 1) * f.dim)) };
    }),
  }));
}

describe('serve add-columns (binary batches)', () => {
  it('adds a forest from an Arrow stream or an .npz and plans exactly what score does', async () => {
    const f = generateForest({ trees: 25, dim: 8, seed: 4 });
    const expected = (() => { const sc = scoreCpu(f, { alpha: 1, tau: 0.5 }); return planToJson(f, sc, allocate(f, sc, { budget: 12 })); })();
    for (const payload of [encodeArrow(f, 'stream'), encodeArrow(f, 'file'), encodeNpz(ndArraysOfForest(f))]) {
      const s = new LiveSession({ backend: 'cpu' });
      const r = await sendBatch(s, { id: 1 }, payload);
      expect(r, JSON.stringify(r.error)).toMatchObject({ id: 1, ok: true, result: { trees: 25, added: f.treeIds, replaced: [] } });
      const plan = await send(s, { id: 2, op: 'plan', budget: 12 });
      const { replanned, ...rest } = plan.result;
      expect(rest).toEqual(viaJson(expected));
      s.destroy();
    }
  });

  it('rejects a bad node, a duplicate id or a wrong dim and changes nothing; replace swaps trees', async () => {
    const s = new LiveSession({ backend: 'cpu' });
    const base = packForest({ dim: 2, trees: [{ id: 'a', nodes: [{ embedding: [1, 0] }, { parent: 0, embedding: [1, 0.1] }, { parent: 0, embedding: [0, 1] }] }] });
    expect((await sendBatch(s, {}, encodeArrow(base, 'stream'))).ok).toBe(true);
    const before = (await send(s, { op: 'stats' })).result;

    const cols = ndArraysOfForest(packForest({ dim: 2, trees: [
      { id: 'b', nodes: [{ embedding: [0, 1] }, { parent: 0, embedding: [0.5, 1] }] },
      { id: 'c', nodes: [{ embedding: [0, 1] }, { parent: 0, embedding: [0.5, 1] }, { parent: 0, embedding: [0.2, 1] }] },
    ] })) as Map<string, NdArray>;
    (cols.get('visits')!.data as Float64Array)[4] = 2.5; // tree c, node 2
    const bad = await sendBatch(s, { id: 3 }, encodeNpz(cols));
    expect(bad).toMatchObject({ id: 3, ok: false, error: { code: 'invalid_value', tree: 'c', node: 2, field: 'visits' } });
    expect(bad.error!.message).toBe('tree "c" (#2), node 2, field "visits": must be an integer >= 0, got 2.5');

    const dup = await sendBatch(s, {}, encodeArrow(base, 'stream'));
    expect(dup.error).toMatchObject({ code: 'duplicate_tree', tree: 'a' });
    const wide = packForest({ dim: 3, trees: [{ id: 'w', nodes: [{ embedding: [1, 0, 0] }] }] });
    expect((await sendBatch(s, {}, encodeArrow(wide, 'stream'))).error).toMatchObject({ code: 'invalid_value', field: 'embedding' });
    expect((await sendBatch(s, {}, new Uint8Array([1, 2, 3]))).error).toMatchObject({ code: 'invalid_value', field: 'bytes' });
    expect((await sendBatch(s, { replace: 'yes' }, encodeArrow(base, 'stream'))).error?.code).toBe('invalid_request');
    expect((await send(s, { id: 9, op: 'add-columns' })).error?.code).toBe('invalid_request');
    expect((await send(s, { op: 'stats' })).result).toEqual(before);

    const changed = packForest({ dim: 2, trees: [{ id: 'a', nodes: [{ embedding: [1, 0] }, { parent: 0, embedding: [1, 0.1], visits: 3, reward: 1 }] }] });
    const rep = await sendBatch(s, { replace: true }, encodeArrow(changed, 'stream'));
    expect(rep.result).toEqual({ trees: 1, added: ['a'], replaced: ['a'] });
    expect((await send(s, { op: 'stats' })).result).toMatchObject({ trees: 1, nodes: 2 });
    s.destroy();
  });

  it('reuses one payload buffer across batches of different sizes without mixing them up', () => {
    // A large batch, then a small one (read into the same buffer, the large one's bytes after it), then a medium one.
    const trees = [[30, 1], [3, 2], [12, 3]].map(([n, seed], k) => treesOf(generateForest({ trees: n, dim: 6, seed }), `b${k}-`));
    const input = Buffer.concat([
      ...trees.flatMap((t, k) => {
        const f = packForest({ dim: 6, trees: t });
        const payload = k === 1 ? encodeNpz(ndArraysOfForest(f)) : encodeArrow(f, 'stream');
        return [Buffer.from(`${JSON.stringify({ id: k, op: 'add-columns', bytes: payload.length })}\n`), Buffer.from(payload)];
      }),
      Buffer.from(`${JSON.stringify({ id: 'p', op: 'plan', budget: 10 })}\n`),
    ]);
    const run = spawnSync(process.execPath, [CLI, 'serve', '--stdio', '--backend', 'cpu'], { input, encoding: 'utf8', timeout: 60_000 });
    const replies = run.stdout.trim().split('\n').map((l) => JSON.parse(l) as Reply);
    expect(replies.map((r) => r.ok), run.stderr).toEqual([true, true, true, true]);
    const all = packForest({ dim: 6, trees: trees.flat() });
    const sc = scoreCpu(all, { alpha: 1, tau: 0.5 });
    const { replanned: _r, ...plan } = replies[3].result;
    expect(plan).toEqual(viaJson(planToJson(all, sc, allocate(all, sc, { budget: 10 }))));
  });

  it('reads the same requests from a file as from a pipe (standard input redirected from a file is read as a stream)', () => {
    const f = generateForest({ trees: 5, dim: 3, seed: 6 });
    const payload = encodeArrow(f, 'stream');
    const input = Buffer.concat([Buffer.from(`${JSON.stringify({ id: 1, op: 'add-columns', bytes: payload.length })}\n`), Buffer.from(payload), Buffer.from(`${JSON.stringify({ id: 2, op: 'plan', budget: 5 })}\n`)]);
    const viaPipe = spawnSync(process.execPath, [CLI, 'serve', '--stdio', '--backend', 'cpu'], { input, encoding: 'utf8', timeout: 60_000 });
    const dir = mkdtempSync(join(tmpdir(), 'trace-alloc-serve-file-'));
    try {
      writeFileSync(join(dir, 'requests'), input);
      const fd = openSync(join(dir, 'requests'), 'r');
      const viaFile = spawnSync(process.execPath, [CLI, 'serve', '--stdio', '--backend', 'cpu'], { stdio: [fd, 'pipe', 'pipe'], encoding: 'utf8', timeout: 60_000 });
      closeSync(fd);
      expect(viaFile.status, viaFile.stderr).toBe(0);
      expect(viaFile.stdout).toBe(viaPipe.stdout);
      expect(viaPipe.stdout.trim().split('\n').map((l) => (JSON.parse(l) as Reply).ok)).toEqual([true, true]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('reads the payload as bytes between lines through the built CLI, and answers a truncated batch', () => {
    const f = generateForest({ trees: 6, dim: 4, seed: 9 });
    const payload = encodeArrow(f, 'stream');
    const header = (id: number, bytes = payload.length) => Buffer.from(`${JSON.stringify({ id, op: 'add-columns', bytes })}\n`);
    const input = Buffer.concat([
      header(1), Buffer.from(payload), Buffer.from(`${JSON.stringify({ id: 2, op: 'stats' })}\r\n`),
      header(3, payload.length + 100), Buffer.from(payload), // claims more than it sends: truncated at end of input
    ]);
    const run = spawnSync(process.execPath, [CLI, 'serve', '--stdio', '--backend', 'cpu'], { input, encoding: 'utf8', timeout: 60_000 });
    expect(run.status, run.stderr).toBe(0);
    const replies = run.stdout.trim().split('\n').map((l) => JSON.parse(l) as Reply);
    expect(replies.map((r) => [r.id, r.ok])).toEqual([[1, true], [2, true], [3, false]]);
    expect(replies[1].result).toMatchObject({ trees: 6, nodes: f.nodeCount });
    expect(replies[2].error).toMatchObject({ code: 'invalid_value', field: 'bytes' });
    expect(replies[2].error!.message).toContain('truncated');
  });
});
