import { afterAll, beforeAll, expect, it } from 'vitest';
import { DEFAULT_MAX_GROUP_SIZE } from '../src/forest/limits.js';
import { GpuContext } from '../src/gpu/context.js';
import { columnStrips, kernelFor, planWork, resolveRoute, STAGE_FLOATS, STAGE_LANES, STAGE_PAIRS, TILE_ROWS } from '../src/gpu/layout.js';
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

it("route 'auto' is the staged mapping on GPUs and the classic one on CPU-emulated adapters", () => {
  expect(resolveRoute('auto', false)).toBe('staged');
  expect(resolveRoute('auto', true)).toBe('classic');
  for (const route of ['staged', 'classic', 'thread', 'workgroup', 'tiled'] as const) expect(resolveRoute(route, true)).toBe(route);
  expect(kernelFor(4, 'staged', 128)).toBe('staged');
  expect(kernelFor(4, 'classic', 128)).toBe('thread');
  expect(kernelFor(40, 'staged', 64)).toBe('thread'); // 40 rows at stride 65 exceed the staged floats
});

it('packs small groups into bins of the staged kernel within its lanes, staged floats and pairs, in order', () => {
  const sizes = [1, 4, 4, 8, 30, 2, 39, 3, 5, 5, 64, 2];
  for (const dim of [0, 8, 64, 128]) {
    const { lists, outStart } = planWork(sizes.length, (i) => 100 * i, (i) => sizes[i], 'auto', dim);
    const entries = lists.staged.length / 4 - lists.bins;
    const seen: number[] = [];
    let next = lists.bins;
    for (let b = 0; b < lists.bins; b++) {
      const [start, n] = lists.staged.subarray(4 * b, 4 * b + 2);
      expect(start).toBe(next);
      next += n;
      let k = 0, floats = 0, pairs = 0;
      for (let e = start; e < start + n; e++) {
        const [first, size, o, index] = lists.staged.subarray(4 * e, 4 * e + 4);
        expect([first, size, o]).toEqual([100 * index, sizes[index], outStart[index]]);
        seen.push(index);
        k += size; floats += size * (dim | 1); pairs += (size * (size - 1)) / 2;
      }
      expect(k).toBeLessThanOrEqual(STAGE_LANES);
      expect(floats).toBeLessThanOrEqual(STAGE_FLOATS);
      expect(pairs).toBeLessThanOrEqual(STAGE_PAIRS);
    }
    expect(next - lists.bins).toBe(entries);
    // Every group that fits is staged, in list order; the others go to the classic kernels.
    expect(seen).toEqual(sizes.flatMap((k, i) => (kernelFor(k, 'auto', dim) === 'staged' ? [i] : [])));
    expect(entries + (lists.thread.length + lists.workgroup.length) / 4).toBe(sizes.length);
  }
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
