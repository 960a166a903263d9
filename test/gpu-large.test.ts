import { afterAll, beforeAll, expect, it } from 'vitest';
import { allocate } from '../src/allocate/allocate.js';
import { packColumns, type PackedForest } from '../src/forest/packed.js';
import { GpuContext } from '../src/gpu/context.js';
import { planChunks } from '../src/gpu/layout.js';
import { GpuScorer } from '../src/gpu/scorer.js';
import { scoreCpu } from '../src/score/cpu.js';
import { Rng } from '../src/util/random.js';
import { deviation, gpuDescribe, withinTolerance } from './gpu-support.js';

/**
 * One tree where every fork has 3 children (groups of 2 would be symmetric — equal weights,
 * zero gradients — and prove less), dim 4096: 9,001 rows, 9,000 child slots, 147 MiB of f32
 * embeddings — more than one 128 MiB storage binding, so the scorer must split it at group
 * boundaries.
 */
function bigForest(): PackedForest {
  const n = 9001, dim = 4096;
  const rng = new Rng(42);
  const parent = Int32Array.from({ length: n }, (_, v) => (v === 0 ? -1 : Math.floor((v - 1) / 3)));
  const embedding = new Float32Array(n * dim);
  for (let i = 0; i < embedding.length; i++) embedding[i] = rng.next() - 0.5;
  // Some siblings are near-duplicates of each other, where distance precision matters most.
  for (let v = 2; v < n; v += 14) for (let d = 0; d < dim; d++) embedding[v * dim + d] = embedding[(v - 1) * dim + d] + (rng.next() - 0.5) * 1e-3;
  const reward = Float64Array.from({ length: n }, () => rng.int(0, 4) / 4);
  const visits = Float64Array.from({ length: n }, () => rng.int(0, 6));
  const uncertainty = Float64Array.from({ length: n }, () => rng.next() * 0.3);
  return packColumns({ dim, treeIds: ['big'], treeOffset: Int32Array.of(0, n), parent, reward, visits, uncertainty, terminal: new Uint8Array(n), embedding });
}

gpuDescribe('a forest larger than one storage binding', () => {
  let ctx: GpuContext;
  beforeAll(async () => {
    ctx = await GpuContext.create();
  });
  afterAll(() => ctx?.destroy());

  it('is split at group boundaries and matches the float64 reference', async () => {
    const forest = bigForest();
    expect(forest.embedding.byteLength - 4096 * 4).toBeGreaterThan(ctx.maxBinding);
    const chunks = planChunks(forest, false, ctx.maxBinding);
    expect(chunks.length).toBeGreaterThan(1);
    const scorer = await GpuScorer.create({ context: ctx });
    try {
      const gpu = await scorer.score(forest);
      const cpu = scoreCpu(forest);
      const d = deviation(forest, gpu, cpu);
      expect(withinTolerance(d), d.worst).toBe(true);
      expect(cpu.gradTau.some((g) => Math.abs(g) > 1e-3)).toBe(true); // weights really differ
      const plan = (s: typeof cpu) => { const a = allocate(forest, s, { budget: 64 }); return [Array.from(a.branches), Array.from(a.depth), Array.from(a.pruned)]; };
      expect(plan(gpu)).toEqual(plan(cpu));
    } finally {
      scorer.destroy();
    }
  });
});
