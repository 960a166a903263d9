import { spawnSync } from 'node:child_process';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GpuContext } from '../src/gpu/context.js';
import { GpuDeviceLostError, GpuUnavailableError, GpuValidationError } from '../src/gpu/errors.js';
import { ResidentForest } from '../src/gpu/resident.js';
import { GpuScorer } from '../src/gpu/scorer.js';
import { scoreCpu } from '../src/score/cpu.js';
import { createScorer, score } from '../src/backend/select.js';
import type { PackedForest } from '../src/forest/packed.js';
import { packColumns } from '../src/forest/packed.js';
import { generateForest } from '../src/synth/generate.js';
import { Rng } from '../src/util/random.js';
import { deviation, gpuDescribe, withinTolerance } from './gpu-support.js';

// A full collection before each memory snapshot, so they compare live memory, not garbage.
setFlagsFromString('--expose-gc');
const collect = runInNewContext('gc') as () => void;

/**
 * Memory after full collections have settled: weak references are cleared only after the job
 * that made them ends, and external buffers are freed by finalizers, so collect across a few
 * macrotasks until two readings agree.
 */
async function settledMemory(): Promise<NodeJS.MemoryUsage> {
  let last = process.memoryUsage();
  for (let i = 0; i < 10; i++) {
    collect();
    await new Promise<void>((resolve) => setImmediate(resolve));
    const now = process.memoryUsage();
    if (now.heapUsed === last.heapUsed && now.arrayBuffers === last.arrayBuffers) return now;
    last = now;
  }
  return last;
}

const noAdapter = { requestAdapter: async () => null } as unknown as GPU;

describe('without a WebGPU adapter', () => {
  it('the gpu backend fails with instructions to get one', async () => {
    const err = await createScorer({ backend: 'gpu', gpu: noAdapter }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(GpuUnavailableError);
    expect((err as Error).message).toMatch(/lavapipe/);
    expect((err as Error).message).toMatch(/mesa-vulkan-drivers libvulkan1/);
    expect((err as Error).message).toMatch(/backend cpu/);
  });

  it('auto scores on the CPU and says so', async () => {
    const notices: string[] = [];
    const forest = generateForest({ trees: 3, dim: 4, seed: 1 });
    const scorer = await createScorer({ backend: 'auto', gpu: noAdapter, onNotice: (m) => notices.push(m) });
    expect(scorer.backend).toBe('cpu');
    expect(notices.join('\n')).toMatch(/no WebGPU adapter found; scoring on the cpu backend/);
    const scores = await scorer.score(forest);
    expect(Array.from(scores.weight)).toEqual(Array.from(scoreCpu(forest).weight));
    scorer.destroy();
  });
});

/** Same structure, new rewards/visits/uncertainties/embeddings on `rows`. */
function mutate(forest: PackedForest, rows: number[], seed: number): PackedForest {
  const rng = new Rng(seed);
  const reward = forest.reward.slice(), visits = forest.visits.slice(), uncertainty = forest.uncertainty.slice();
  const embedding = forest.embedding.slice();
  for (const row of rows) {
    reward[row] = rng.next();
    visits[row] = rng.int(0, 5);
    uncertainty[row] = rng.next();
    for (let d = 0; d < forest.dim; d++) embedding[row * forest.dim + d] = rng.normal();
  }
  const parent = Int32Array.from(forest.parentRow, (p, row) => (p < 0 ? -1 : p - forest.treeOffset[forest.nodeTree[row]]));
  return packColumns({ dim: forest.dim, treeIds: forest.treeIds, treeOffset: forest.treeOffset, parent, reward, visits, uncertainty, terminal: forest.terminal, embedding });
}

gpuDescribe('GPU device management', () => {
  let ctx: GpuContext;
  let scorer: GpuScorer;
  beforeAll(async () => {
    ctx = await GpuContext.create();
    scorer = await GpuScorer.create({ context: ctx });
  });
  afterAll(() => {
    scorer?.destroy();
    ctx?.destroy();
  });

  it('runs two score() calls in flight at once, both correct', async () => {
    const a = generateForest({ trees: 40, dim: 32, seed: 1 });
    const b = generateForest({ trees: 25, dim: 32, seed: 2 });
    const [sa, sb, sa2] = await Promise.all([scorer.score(a), scorer.score(b, { tau: 0.2 }), scorer.score(a, { alpha: 3 })]);
    expect(withinTolerance(deviation(a, sa, scoreCpu(a)))).toBe(true);
    expect(withinTolerance(deviation(b, sb, scoreCpu(b, { tau: 0.2 })))).toBe(true);
    expect(withinTolerance(deviation(a, sa2, scoreCpu(a, { alpha: 3 })))).toBe(true);
    const again = await scorer.score(a);
    expect(Array.from(sa.contrast)).toEqual(Array.from(again.contrast));
  });

  it('keeps host and GPU memory flat over 1,000 scorings of one forest', async () => {
    // What is compared cannot be noise: buffer counts of the pool, waits in flight, and whether
    // each call's outputs can still be reached after a full collection. Byte counts of the heap
    // move with the collector's timing under load, so they are only checked against a bound a
    // per-call leak of one output set passes 10-fold (800 × 5 × nodeCount × 4 bytes ≈ 53 MB).
    const forest = generateForest({ trees: 30, dim: 16, seed: 4 });
    for (let i = 0; i < 200; i++) await scorer.score(forest); // the pool reaches its working set
    const pool = ctx.pool.snapshot();
    const heap200 = await settledMemory();
    const outputs: WeakRef<object>[] = [];
    let deviationOfLast;
    for (let i = 200; i < 1000; i++) {
      const s = await scorer.score(forest);
      for (const a of [s.contrast, s.weight, s.gradAlpha, s.gradTau, s.intensity]) outputs.push(new WeakRef(a), new WeakRef(a.buffer));
      if (i === 999) deviationOfLast = deviation(forest, s, scoreCpu(forest));
    }
    const after = ctx.pool.snapshot();
    const heap1000 = await settledMemory();
    // GPU: every buffer of the 800 calls came from the pool; none created or destroyed, none left in use.
    expect(after.created).toBe(pool.created);
    expect(after.destroyed).toBe(pool.destroyed);
    expect(after.inUseBytes).toBe(0);
    expect(after.idleBytes).toBe(pool.idleBytes);
    expect(ctx.pendingWaits).toBe(0);
    // Host: nothing keeps any call's outputs (nor the buffers under them) alive.
    // Host: nothing keeps the outputs of any call (nor the buffers under them) alive, except
    // possibly the very last one (its variable may linger in this suspended async frame).
    const alive = outputs.flatMap((r, i) => (r.deref() !== undefined ? [i] : []));
    expect(alive.filter((i) => i < outputs.length - 10)).toEqual([]);
    const perCall = 5 * forest.nodeCount * 4;
    const grown = heap1000.heapUsed + heap1000.arrayBuffers - heap200.heapUsed - heap200.arrayBuffers;
    expect(grown).toBeLessThan((800 * perCall) / 10);
    expect(withinTolerance(deviationOfLast!)).toBe(true);
  });

  it('turns WebGPU validation errors into exceptions', async () => {
    await expect(ctx.guard('making a bad buffer', () => ctx.device.createBuffer({ size: 4, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.STORAGE }))).rejects.toThrow(GpuValidationError);
  });

  it('reports timings and the transfer floor', async () => {
    const forest = generateForest({ trees: 30, dim: 16, seed: 9 });
    await scorer.score(forest);
    const t = scorer.lastTimings!;
    for (const v of [t.upload, t.kernels, t.wait, t.readback, t.total]) expect(v).toBeGreaterThanOrEqual(0);
    expect(t.total).toBeGreaterThanOrEqual(t.upload);
    expect(t.kernelsFrom).toBe(ctx.hasTimestamps ? 'timestamp-query' : 'wait');
    const floor = await scorer.measureTransferFloor(forest);
    expect(floor.kernels).toBe(0);
    expect(floor.total).toBeGreaterThan(0);
  });

  it('re-scores a list of groups on a resident forest after in-place updates', async () => {
    const forest = generateForest({ trees: 50, dim: 24, seed: 12 });
    for (const options of [{}, { maxChunkBytes: 2048 }, ...(ctx.hasF16 ? [{ f16: true }] : [])]) {
      const resident = await ResidentForest.create(ctx, forest, options);
      try {
        const rows = [1, 2, 7, forest.treeOffset[3], forest.treeOffset[20] + 5, forest.nodeCount - 1];
        const updated = mutate(forest, rows, 5);
        resident.writeNodeFeatures(rows, updated);
        // Float64 sources (live forests keep them) are narrowed to the stored f32.
        resident.writeEmbeddings(rows, 'maxChunkBytes' in options ? Float64Array.from(updated.embedding) : updated.embedding);
        const groups = resident.groupsOfRows(rows);
        const want = scoreCpu(updated, { alpha: 2, tau: 0.3 });
        const got = await resident.rescore([...groups].reverse().concat(groups[0]), { alpha: 2, tau: 0.3 });
        expect(Array.from(got.groupIds)).toEqual(Array.from(groups));
        const tol = 'f16' in options ? 2e-3 : 1e-4;
        for (let i = 0; i < got.groupIds.length; i++) {
          expect(Math.abs(got.intensity[i] - want.intensity[got.groupIds[i]])).toBeLessThanOrEqual(tol);
          for (let c = got.childOffset[i]; c < got.childOffset[i + 1]; c++) {
            const row = got.rows[c];
            expect(forest.parentGroup[row]).toBe(got.groupIds[i]);
            expect(Math.abs(got.contrast[c] - want.contrast[row])).toBeLessThanOrEqual(tol);
            expect(Math.abs(got.weight[c] - want.weight[row])).toBeLessThanOrEqual(tol);
          }
        }
        // A full pass over the resident buffers now scores the updated forest.
        const all = await resident.scoreAll({ alpha: 2, tau: 0.3 });
        if (!('f16' in options)) expect(withinTolerance(deviation(updated, all, want))).toBe(true);
      } finally {
        resident.destroy();
      }
    }
    expect(ctx.pool.snapshot().inUseBytes).toBe(0);
  });

  it('scores f16 embeddings within the documented error (docs/GPU.md)', async () => {
    if (!ctx.hasF16) return;
    const half = await GpuScorer.create({ context: ctx, f16: true });
    try {
      const forest = generateForest({ trees: 200, dim: 64, seed: 2 });
      const d = deviation(forest, await half.score(forest), scoreCpu(forest));
      expect(d.contrast).toBeLessThan(2e-3);
      expect(d.weight).toBeLessThan(1e-3);
      expect(d.grad).toBeLessThan(2e-3);
      expect(d.contrast).toBeGreaterThan(0); // it really ran in f16
    } finally {
      half.destroy();
    }
  });
});

gpuDescribe('GPU device loss', () => {
  it('fails the gpu backend with a clear error, never a hang', async () => {
    const own = await GpuScorer.create();
    const forest = generateForest({ trees: 200, dim: 32, seed: 3 });
    await own.score(generateForest({ trees: 2, dim: 32, seed: 3 })); // compile first
    const pending = own.score(forest);
    own.context.loseDevice();
    await expect(pending).rejects.toThrow(GpuDeviceLostError);
    await expect(own.score(forest)).rejects.toThrow(/device was lost/);
    own.destroy();
  });

  it('lets auto finish on the CPU with a warning', async () => {
    const ctx = await GpuContext.create();
    const notices: string[] = [];
    const scorer = await createScorer({ backend: 'auto', context: ctx, onNotice: (m) => notices.push(m) });
    expect(scorer.backend).toBe('gpu');
    expect(notices[0]).toMatch(/scoring on the gpu backend/);
    const forest = generateForest({ trees: 100, dim: 16, seed: 8 });
    const pending = scorer.score(forest);
    ctx.loseDevice();
    const scores = await pending;
    expect(scores.backend).toBe('cpu');
    expect(Array.from(scores.contrast)).toEqual(Array.from(scoreCpu(forest).contrast));
    expect(notices.join('\n')).toMatch(/device was lost.*finishing on the cpu backend/);
    expect(scorer.backend).toBe('cpu');
    scorer.destroy();
    ctx.destroy();
  });
});

gpuDescribe('GPU process lifetime', () => {
  it('lets the process exit after destroy()', async () => {
    const script = `
      import { generateForest } from './src/synth/generate.ts';
      import { score } from './src/backend/select.ts';
      const s = await score(generateForest({ trees: 5, dim: 8, seed: 1 }), { backend: 'gpu' });
      console.log('scored', s.backend);
    `;
    const run = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { cwd: process.cwd(), encoding: 'utf8', timeout: 90_000 });
    expect(run.signal, 'the process hung and was killed').toBeNull();
    expect(run.stdout).toContain('scored gpu');
    expect(run.status).toBe(0);
  });
});

describe('one-shot score()', () => {
  it('scores on the cpu backend when asked', async () => {
    const forest = generateForest({ trees: 3, dim: 4, seed: 2 });
    const s = await score(forest, { backend: 'cpu', params: { tau: 0.3 } });
    expect(s.backend).toBe('cpu');
    expect(s.params.tau).toBe(0.3);
  });
});
