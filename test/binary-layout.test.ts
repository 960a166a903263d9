// The binary readers' memory layout: columns are views over the input where they can be
// (aligned), copies into shared memory where they cannot (or moved within input handed over to
// the reader), per-array buffers read straight from
// a file, joined batches — whatever the layout, the same forest comes out, float32 stays
// float32, and scores are bit-identical to the original's on one thread and on worker threads
// reading the same shared buffers.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { Table, tableToIPC } from 'apache-arrow';
import { afterAll, describe, expect, it } from 'vitest';
import { decodeArrow } from '../src/forest/arrow.js';
import { encodeArrow, forestToArrowTable } from '../src/forest/arrow-write.js';
import { ndArraysOfForest, packNdArrays } from '../src/forest/columnar.js';
import { loadForestFile } from '../src/forest/load.js';
import { decodeNpz, encodeNpz } from '../src/forest/npz.js';
import type { PackedForest } from '../src/forest/packed.js';
import { CpuScorer } from '../src/score/cpu.js';
import { generateForest } from '../src/synth/generate.js';
import { isShared } from '../src/util/shared.js';

const dir = mkdtempSync(join(tmpdir(), 'trace-alloc-layout-'));
const one = new CpuScorer({ threads: 1 });
const two = new CpuScorer({ threads: 2, minParallelCost: 0 }); // every forest on both threads
afterAll(() => { one.destroy(); two.destroy(); rmSync(dir, { recursive: true, force: true }); });

const COLUMNS = ['treeOffset', 'parentRow', 'reward', 'visits', 'uncertainty', 'terminal', 'embedding'] as const;

function expectSameForest(a: PackedForest, b: PackedForest): void {
  expect(b.treeIds).toEqual(a.treeIds);
  expect(b.dim).toBe(a.dim);
  expect(b.embedding.constructor).toBe(a.embedding.constructor);
  for (const k of COLUMNS) expect(Array.from(b[k]), k).toEqual(Array.from(a[k]));
}

/** Every score of `b` is the same number as `a`'s (Object.is: -0 and NaN count). */
function expectSameScores(a: Awaited<ReturnType<CpuScorer['score']>>, b: Awaited<ReturnType<CpuScorer['score']>>): void {
  for (const k of ['contrast', 'weight', 'gradAlpha', 'gradTau', 'intensity'] as const) {
    const x = a[k], y = b[k];
    expect(y.length, k).toBe(x.length);
    for (let i = 0; i < x.length; i++) if (!Object.is(x[i], y[i])) expect(`${k}[${i}] = ${y[i]}`).toBe(`${k}[${i}] = ${x[i]}`);
  }
}

/** `bytes` copied to `shift` bytes into a fresh buffer: views over it are misaligned for every width but 1 unless shift is 0. */
function shifted(bytes: Uint8Array, shift: number): Uint8Array {
  const out = new Uint8Array(bytes.length + shift);
  out.set(bytes, shift);
  return out.subarray(shift);
}

/** The forest as an Arrow stream of `batches` record batches (columns joined on reading). */
function arrowBatches(forest: PackedForest, batches: number): Uint8Array {
  const table = forestToArrowTable(forest);
  const cut = Math.floor(table.numRows / batches);
  const parts = Array.from({ length: batches }, (_, b) => table.slice(b * cut, b === batches - 1 ? table.numRows : (b + 1) * cut));
  return tableToIPC(new Table(parts.flatMap((p) => p.batches)), 'stream');
}

const shape = fc.record({
  trees: fc.integer({ min: 1, max: 40 }),
  dim: fc.integer({ min: 0, max: 9 }),
  seed: fc.integer({ min: 1, max: 1e6 }),
  float64: fc.boolean(),
  container: fc.constantFrom('npz stored', 'npz deflated', 'arrow stream', 'arrow file', 'arrow batches'),
  shift: fc.integer({ min: 0, max: 7 }),
  viaFile: fc.boolean(),
  movable: fc.boolean(),
});

describe('binary readers: layout never changes the forest or its scores', () => {
  it('views, shared copies and joined batches give the same forest and bit-identical scores on 1 and 2 threads', async () => {
    await fc.assert(fc.asyncProperty(shape, async (s) => {
      let forest = generateForest({ trees: s.trees, dim: s.dim, seed: s.seed, minNodes: 1, maxNodes: 12 });
      if (s.float64) forest = packNdArrays(new Map([...ndArraysOfForest(forest)].map(([k, a]) => [k, k === 'embedding' && a.kind === 'numeric' ? { ...a, dtype: 'float64' as const, data: Float64Array.from(a.data as Float32Array) } : a])), 'f64');
      const arrays = ndArraysOfForest(forest);
      const bytes = s.container === 'npz stored' ? encodeNpz(arrays) : s.container === 'npz deflated' ? encodeNpz(arrays, true)
        : s.container === 'arrow batches' ? arrowBatches(forest, 1 + (s.seed % 3)) : encodeArrow(forest, s.container === 'arrow file' ? 'file' : 'stream');
      const npz = s.container.startsWith('npz');
      let read: PackedForest;
      if (s.viaFile) {
        const path = join(dir, npz ? 'f.npz' : 'f.arrow');
        writeFileSync(path, bytes);
        read = loadForestFile(path);
        // Read from a file, every array lives in shared memory: threads use it in place.
        for (const k of COLUMNS) if (read[k].length > 0 && (k === 'embedding' || k === 'reward')) expect(isShared(read[k]), k).toBe(true);
      } else {
        // Movable input (the service's payload buffer): misaligned arrays move within it instead of being copied.
        const input = shifted(bytes, s.shift);
        read = packNdArrays(npz ? decodeNpz(input, 'x', { movable: s.movable }) : decodeArrow(input, 'x'), 'x');
        if (!s.movable) expect(Buffer.from(input).equals(Buffer.from(bytes)), 'the input is left as it was').toBe(true);
      }
      expectSameForest(forest, read);
      const reference = await one.score(forest, { alpha: 1, tau: 0.5 });
      expectSameScores(reference, await one.score(read, { alpha: 1, tau: 0.5 }));
      expectSameScores(reference, await two.score(read, { alpha: 1, tau: 0.5 }));
    }), { seed: 424242, numRuns: 100 });
  });
});
