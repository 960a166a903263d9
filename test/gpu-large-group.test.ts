import { afterAll, beforeAll, expect, it } from 'vitest';
import { DEFAULT_MAX_GROUP_SIZE } from '../src/forest/limits.js';
import { GpuContext } from '../src/gpu/context.js';
import { columnStrips, kernelFor, planWork, TILE_ROWS } from '../src/gpu/layout.js';
import { GpuScorer } from '../src/gpu/scorer.js';
import { createLiveForest } from '../src/live/create.js';
import { liveScoresOn, snapshotLive } from '../src/live/snapshot.js';
import { scoreCpu } from '../src/score/cpu.js';
import { Rng } from '../src/util/random.js';
import { deviation, forestOf, gpuDescribe, withinTolerance } from './gpu-support.js';

it('tiles a large group into bounded pieces: every pair once, per-workgroup work independent of k', () => {
  for (const k of [1025, 1500, 4096, 20_000]) {
    expect(kernelFor(k, 'auto', 8)).toBe('tiled');
    const { lists, outSlots } = planWork(1, () => 0, () => k, 'auto', 8);
    expect(outSlots).toBe(k);
    expect(lists.partialSlots).toBe(k * columnStrips(k));
    const tiles = lists.tiles.length / 8;
    expect(tiles).toBe(Math.ceil(k / TILE_ROWS) * columnStrips(k));
    // Row tiles × column strips cover the k × k pair matrix exactly once.
    let covered = 0, widest = 0;
    for (let t = 0; t < tiles; t++) {
      const [, , ti, , , j0, j1] = lists.tiles.subarray(8 * t, 8 * t + 8);
      const rows = Math.min(TILE_ROWS, k - ti * TILE_ROWS);
      covered += rows * (j1 - j0);
      widest = Math.max(widest, j1 - j0);
    }
    expect(covered).toBe(k * k);
    expect(widest).toBe(Math.ceil(k / columnStrips(k)));
  }
  expect(kernelFor(1024, 'auto', 8)).toBe('workgroup');
  expect(kernelFor(100, 'auto', 8)).toBe('thread');
});

gpuDescribe('GPU: the largest group the CLI allows by default', () => {
  let ctx: GpuContext;
  let gpu: GpuScorer;
  beforeAll(async () => {
    ctx = await GpuContext.create();
    gpu = await GpuScorer.create({ context: ctx });
  });
  afterAll(() => {
    gpu?.destroy();
    ctx?.destroy();
  });

  it(`scores one group of ${DEFAULT_MAX_GROUP_SIZE} children like the CPU, for both rules, deterministically`, async () => {
    const k = DEFAULT_MAX_GROUP_SIZE, dim = 8;
    const rng = new Rng(21);
    const e = Float32Array.from({ length: (k + 1) * dim }, () => rng.normal());
    // Near-duplicates among the children make some responses steep.
    for (let i = 2; i <= k; i += 97) for (let d = 0; d < dim; d++) e[i * dim + d] = e[(i - 1) * dim + d] + 1e-4 * rng.normal();
    const forest = forestOf(dim, [[-1, ...new Array<number>(k).fill(0)]], (row) => ({ reward: rng.int(0, 4) / 4, visits: row % 5, uncertainty: rng.next() }), e);
    for (const rule of ['v1', 'v2'] as const) {
      const params = { alpha: 0.8, tau: 0.1, rule };
      const got = await gpu.score(forest, params);
      const d = deviation(forest, got, scoreCpu(forest, params));
      expect(withinTolerance(d), `${rule}: ${d.worst}`).toBe(true);
      if (rule === 'v2') {
        const again = await gpu.score(forest, params);
        expect(Array.from(again.contrast)).toEqual(Array.from(got.contrast));
        expect(Array.from(again.gradAlpha)).toEqual(Array.from(got.gradAlpha));
      }
    }
  });

  it('live forests tile their large groups too, through feedback', async () => {
    const k = 1500, dim = 4;
    const rng = new Rng(5);
    const live = await createLiveForest({ dim, backend: 'gpu', params: { rule: 'v2' }, gpu: { context: ctx } });
    try {
      live.addTree({ id: 'big', nodes: [{ embedding: [1, 0, 0, 0] }, ...Array.from({ length: k }, (_, i) => ({ parent: 0, reward: rng.int(0, 3) / 3, visits: 1 + (i % 3), uncertainty: rng.next(), embedding: Array.from({ length: dim }, () => rng.normal()) }))] });
      for (let step = 0; step < 2; step++) {
        await live.plan({ budget: 8 });
        const snap = snapshotLive(live);
        const d = deviation(snap.forest, liveScoresOn(live, snap), scoreCpu(snap.forest, live.scoreParams));
        expect(withinTolerance(d), d.worst).toBe(true);
        live.update({ tree: 'big', node: 1 + step * 7, reward: 5, visits: 9, uncertainty: 2 });
      }
    } finally {
      live.destroy();
    }
  });
});
