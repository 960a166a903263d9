import fc from 'fast-check';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { TreeInput } from '../src/forest/input.js';
import type { PackedForest } from '../src/forest/packed.js';
import { GpuContext } from '../src/gpu/context.js';
import { GpuInputRangeError } from '../src/gpu/errors.js';
import { GPU_FEATURE_LIMIT } from '../src/gpu/layout.js';
import { GpuScorer } from '../src/gpu/scorer.js';
import { createLiveForest } from '../src/live/create.js';
import { liveScoresOn, snapshotLive } from '../src/live/snapshot.js';
import { scoreCpu } from '../src/score/cpu.js';
import { createScorer } from '../src/backend/select.js';
import type { ScoreParams, Scorer } from '../src/score/types.js';
import { deviation, forestOf, gpuDescribe, withinTolerance } from './gpu-support.js';

type Rule = NonNullable<ScoreParams['rule']>;
const RULES: Rule[] = ['v1', 'v2', 'v3'];

/** One tree: a root with one child per value; orthogonal unit embeddings (d = 0.5 for every pair). */
function wideGroup(values: number[], field: 'reward' | 'uncertainty', identical = false): PackedForest {
  const k = values.length;
  const e = new Float64Array((k + 1) * k);
  e.fill(1, 0, k);
  for (let i = 0; i < k; i++) e[(i + 1) * k + (identical ? 0 : i)] = 1;
  return forestOf(k, [[-1, ...values.map(() => 0)]], (row) => {
    if (row === 0) return { visits: 1 };
    const v = values[row - 1];
    return field === 'reward' ? { reward: v, visits: 2, uncertainty: 0.5 } : { reward: 0.5, visits: 2, uncertainty: v };
  }, e);
}

/** The value sets of the sweep for one span: the issue's case and variants (signs, offsets, ties). */
function spanCases(span: number, field: 'reward' | 'uncertainty'): number[][] {
  const sets = [[1, 2, span], [0, 1e-3, span, span], [1, 2, 3, span / 2, span]];
  if (field === 'reward') sets.push([-span, 1, 2], [-span / 2, -span / 2 + 0.5, span / 2], [span, span - span * 2 ** -50, 0.25]);
  return sets;
}

const SPANS = Array.from({ length: 25 }, (_, i) => 10 ** (6 + i)).concat([2e15, 3e16, 9.007199254740993e15]);

gpuDescribe('GPU scoring across wide value spans within a group', () => {
  let ctx: GpuContext;
  let gpu: GpuScorer;
  let auto: Scorer;
  const notices: string[] = [];
  beforeAll(async () => {
    ctx = await GpuContext.create();
    gpu = await GpuScorer.create({ context: ctx });
    auto = await createScorer({ backend: 'auto', context: ctx, onNotice: (line) => notices.push(line) });
  });
  afterAll(() => {
    auto?.destroy();
    gpu?.destroy();
    ctx?.destroy();
  });

  it('matches the float64 reference for spans from 1e6 to 1e30 (rewards 1, 2, 3e16: C = 0.833/0.833/1)', async () => {
    const issue = wideGroup([1, 2, 3e16], 'reward');
    const got = await gpu.score(issue);
    expect(Array.from(got.contrast.subarray(1)).map((c) => Number(c.toFixed(3)))).toEqual([0.833, 0.833, 1]);
    for (const rule of RULES) {
      for (const span of SPANS) {
        for (const field of ['reward', 'uncertainty'] as const) {
          for (const values of spanCases(span, field)) {
            const forest = wideGroup(values, field);
            const params = { alpha: 1, tau: 0.5, rule };
            const d = deviation(forest, await gpu.score(forest, params), scoreCpu(forest, params));
            expect(withinTolerance(d), `${rule} ${field} [${values.join(', ')}]: ${d.worst}`).toBe(true);
          }
          // Identical embeddings (d = 0): c = Δ/(Δ + ε) is steepest for a difference of about ε.
          for (const values of [[0, 1e-6, span], [1, 1 + 2e-6, span], [field === 'reward' ? -span : span, 0.5, 0.5 + 1e-6]]) {
            const forest = wideGroup(values, field, true);
            const params = { alpha: 1, tau: 0.5, rule };
            const d = deviation(forest, await gpu.score(forest, params), scoreCpu(forest, params));
            expect(withinTolerance(d), `${rule} ${field} identical [${values.join(', ')}]: ${d.worst}`).toBe(true);
          }
        }
      }
    }
  });

  it('matches on random groups whose values span up to 1e30, with near-ties among them (fast-check)', async () => {
    const magnitude = fc.double({ min: -6, max: 29.99, noNaN: true }).map((x) => 10 ** x);
    const value = fc.tuple(magnitude, fc.boolean(), fc.integer({ min: 0, max: 3 })).map(([m, neg, step]) => (neg ? -m : m) * (1 + step * 2 ** -40));
    await fc.assert(
      fc.asyncProperty(fc.array(value, { minLength: 2, maxLength: 9 }), fc.constantFrom<Rule>('v1', 'v2', 'v3'), fc.constantFrom('reward' as const, 'uncertainty' as const), async (values, rule, field) => {
        if (field === 'uncertainty') values = values.map(Math.abs);
        const forest = wideGroup(values, field);
        const params = { alpha: 1, tau: 0.5, rule };
        const d = deviation(forest, await gpu.score(forest, params), scoreCpu(forest, params));
        expect(withinTolerance(d), d.worst).toBe(true);
      }),
      { numRuns: 300 },
    );
  });

  it('beyond 1e30: exact midpoint-relative groups are scored on the GPU, others refused under gpu and scored on the CPU under auto', async () => {
    for (const rule of RULES) {
      const params = { alpha: 1, tau: 0.5, rule };
      for (const span of [1e31, 1e35, 1e40, 1e100, 1e300]) {
        // Within 1e30 of the midpoint and exactly representable: the GPU scores it.
        if (span * 2 ** -40 <= GPU_FEATURE_LIMIT) {
          const near = wideGroup([span, span + span * 2 ** -40, span + span * 2 ** -41], 'reward');
          const dn = deviation(near, await gpu.score(near, params), scoreCpu(near, params));
          expect(withinTolerance(dn), dn.worst).toBe(true);
        }
        for (const field of ['reward', 'uncertainty'] as const) {
          const wide = wideGroup([1, 2, span], field);
          const err = await gpu.score(wide, params).catch((x: unknown) => x);
          expect(err).toBeInstanceOf(GpuInputRangeError);
          expect((err as GpuInputRangeError).location).toMatchObject({ treeId: 't0', node: 0, field });
          expect((err as Error).message).toContain(`beyond ±${GPU_FEATURE_LIMIT}`);
          notices.length = 0;
          const got = await auto.score(wide, params);
          expect(got.backend).toBe('cpu');
          expect(Array.from(got.contrast)).toEqual(Array.from(scoreCpu(wide, params).contrast));
          expect(notices.join('\n')).toMatch(/scoring this call on the cpu backend/);
        }
      }
    }
  });

  it('live forests: wide spans score correctly on the GPU; beyond the limit gpu fails the call and auto hands the forest to the CPU', async () => {
    const tree = (id: string, rewards: number[]): TreeInput => ({
      id,
      nodes: [{ embedding: [1, 1, 1, 1] }, ...rewards.map((reward, i) => ({ parent: 0, reward, visits: 2, uncertainty: i * 1e20, embedding: [0, 1, 2, 3].map((d) => (d === i ? 1 : 0)) }))],
    });
    for (const rule of RULES) {
      const live = await createLiveForest({ dim: 4, backend: 'gpu', params: { rule }, gpu: { context: ctx } });
      try {
        live.addTree(tree('wide', [1, 2, 3e16]));
        live.addTree(tree('wider', [-1e30, 0.5, 1e30, 0.25]));
        await live.plan({ budget: 8 });
        const snap = snapshotLive(live);
        const d = deviation(snap.forest, liveScoresOn(live, snap), scoreCpu(snap.forest, live.scoreParams));
        expect(withinTolerance(d), d.worst).toBe(true);
        live.addTree(tree('beyond', [1, 2, 1e35]));
        const err = await live.plan().catch((e: unknown) => e);
        expect(err).toBeInstanceOf(GpuInputRangeError);
        expect((err as Error).message).toMatch(/"beyond".*node 0.*reward/s);
      } finally {
        live.destroy();
      }
      const notices: string[] = [];
      const autoLive = await createLiveForest({ dim: 4, backend: 'auto', params: { rule }, gpu: { context: ctx }, onNotice: (m) => notices.push(m) });
      try {
        autoLive.addTree(tree('wide', [1, 2, 3e16]));
        await autoLive.plan({ budget: 8 });
        expect(autoLive.backendKind).toBe('gpu');
        autoLive.addTree(tree('beyond', [1, 2, 1e35]));
        await autoLive.plan({ budget: 8 });
        expect(autoLive.backendKind).toBe('cpu');
        expect(notices.at(-1)).toMatch(/re-scoring on the cpu from now on/);
        const snap = snapshotLive(autoLive);
        expect(Array.from(liveScoresOn(autoLive, snap).contrast)).toEqual(Array.from(scoreCpu(snap.forest, autoLive.scoreParams).contrast));
      } finally {
        autoLive.destroy();
      }
    }
  });
});
