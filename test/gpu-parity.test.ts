import fc from 'fast-check';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { PackedForest } from '../src/forest/packed.js';
import { allocate } from '../src/allocate/allocate.js';
import { GpuContext } from '../src/gpu/context.js';
import type { Route } from '../src/gpu/layout.js';
import { GpuScorer } from '../src/gpu/scorer.js';
import { scoreCpu } from '../src/score/cpu.js';
import type { ScoreParams, Scores } from '../src/score/types.js';
import { generateForest } from '../src/synth/generate.js';
import { Rng } from '../src/util/random.js';
import { deviation, forestOf, gpuDescribe, withinTolerance } from './gpu-support.js';
import { scoreTree, type SpecTree } from './reference/spec.js';

/** Scores from the independent float64 implementation in test/reference (shares no code with src/score). */
function independentScores(forest: PackedForest, params: { alpha: number; tau: number }): Scores {
  const n = forest.nodeCount;
  const out = {
    contrast: new Float64Array(n), weight: new Float64Array(n).fill(1), gradAlpha: new Float64Array(n), gradTau: new Float64Array(n),
    intensity: new Float64Array(forest.groupCount), params, backend: 'cpu' as const,
  };
  for (let t = 0; t < forest.treeCount; t++) {
    const r0 = forest.treeOffset[t], r1 = forest.treeOffset[t + 1];
    const tree: SpecTree = { nodes: [] };
    for (let row = r0; row < r1; row++) {
      tree.nodes.push({
        parent: forest.parentRow[row] < 0 ? -1 : forest.parentRow[row] - r0,
        reward: forest.reward[row], visits: forest.visits[row], uncertainty: forest.uncertainty[row],
        terminal: forest.terminal[row] === 1,
        embedding: Array.from(forest.embedding.subarray(row * forest.dim, (row + 1) * forest.dim)),
      });
    }
    const ref = scoreTree(tree, params.alpha, params.tau);
    for (let v = 1; v < r1 - r0; v++) {
      out.contrast[r0 + v] = ref.contrast[v];
      out.weight[r0 + v] = ref.weight[v];
      out.gradAlpha[r0 + v] = ref.gradAlpha[v];
      out.gradTau[r0 + v] = ref.gradTau[v];
    }
    for (let v = 0; v < r1 - r0; v++) if (ref.intensity[v] !== undefined) out.intensity[forest.childGroup[r0 + v]] = ref.intensity[v]!;
  }
  return out;
}

type Rule = NonNullable<ScoreParams['rule']>;
const RULES: Rule[] = ['v1', 'v2', 'v3', 'v4', 'v5'];

/** Knobs of a random forest; the forest itself is built from `seed` so cases stay small to print. */
interface Case {
  seed: number;
  dim: number;
  trees: number;
  maxNodes: number;
  shape: 'random' | 'star' | 'chain' | 'binary';
  emb: 'random' | 'near-duplicate' | 'identical' | 'zero' | 'scaled' | 'huge' | 'tiny' | 'mixed' | 'extreme';
  rewards: 'binary' | 'continuous' | 'near-equal' | 'large' | 'offset';
  unvisited: number;
  /** Visits of a visited node up to this: 3 makes v5's gate (2 visits each) decide often. */
  maxVisits: number;
  allTerminal: boolean;
  alpha: number;
  tau: number;
  route: Route;
}

const logUniform = (lo: number, hi: number) => fc.double({ min: Math.log(lo), max: Math.log(hi), noNaN: true }).map(Math.exp);

const caseArb: fc.Arbitrary<Case> = fc.record({
  seed: fc.integer({ min: 0, max: 2 ** 31 - 1 }),
  dim: fc.oneof(fc.constantFrom(0, 1, 2, 3), fc.integer({ min: 4, max: 40 }), fc.constantFrom(64, 129, 300)),
  trees: fc.integer({ min: 1, max: 6 }),
  maxNodes: fc.integer({ min: 1, max: 60 }),
  shape: fc.constantFrom('random', 'star', 'chain', 'binary'),
  emb: fc.constantFrom('random', 'near-duplicate', 'identical', 'zero', 'scaled', 'huge', 'tiny', 'mixed', 'extreme'),
  rewards: fc.constantFrom('binary', 'continuous', 'near-equal', 'large', 'offset'),
  unvisited: fc.constantFrom(0, 0.3, 1),
  maxVisits: fc.constantFrom(3, 12),
  allTerminal: fc.boolean(),
  alpha: fc.oneof(fc.constant(1), logUniform(1e-3, 1e3)),
  tau: fc.oneof(fc.constant(0.5), logUniform(1e-2, 1e2)),
  route: fc.constantFrom('auto', 'staged', 'classic', 'thread', 'workgroup', 'tiled'),
});

function parentsOf(rng: Rng, c: Case): number[] {
  const n = rng.int(1, c.maxNodes);
  return Array.from({ length: n }, (_, v) => {
    if (v === 0) return -1;
    switch (c.shape) {
      case 'star': return 0;
      case 'chain': return rng.bernoulli(0.5) ? v - 1 : rng.int(0, v - 1);
      case 'binary': return Math.floor((v - 1) / 2);
      default: return rng.int(Math.max(0, v - 8), v - 1);
    }
  });
}

function buildCase(c: Case): PackedForest {
  const rng = new Rng(c.seed);
  const parents = Array.from({ length: c.trees }, () => parentsOf(rng, c));
  const n = parents.reduce((s, p) => s + p.length, 0);
  const { dim } = c;
  // Float64, as forests read from files are; values are f32 except for 'extreme' rows.
  const e = new Float64Array(n * dim);
  // 'extreme': each row gets its own magnitude, from 1e-300 to 1e300 (float64 only, far outside
  // f32) — half of them along one direction (different scales, same direction), half random.
  const magnitudes = [1e-300, 1e-160, 1e-45, 1e-40, 1e-20, 1, 1e20, 1e39, 1e160, 1e300];
  const base = Array.from({ length: dim }, () => rng.normal());
  const flat = parents.flat();
  for (let row = 0, offset = 0, t = 0; row < n; row++) {
    if (row - offset >= parents[t].length) { offset += parents[t].length; t++; }
    const mode = c.emb === 'mixed' ? (['random', 'near-duplicate', 'identical', 'zero', 'scaled'] as const)[rng.int(0, 4)] : c.emb;
    const parentRow = flat[row] < 0 ? -1 : offset + flat[row];
    if (mode === 'extreme') {
      const m = magnitudes[rng.int(0, magnitudes.length - 1)];
      const along = rng.bernoulli(0.5);
      for (let d = 0; d < dim; d++) e[row * dim + d] = (along ? base[d] : rng.normal()) * m;
      continue;
    }
    for (let d = 0; d < dim; d++) {
      const anchor = parentRow >= 0 ? e[parentRow * dim + d] || base[d] : base[d];
      let x: number;
      switch (mode) {
        case 'near-duplicate': x = anchor + rng.normal() * [1e-2, 1e-3, 1e-5, 1e-7][row % 4]; break;
        case 'identical': x = base[d]; break;
        case 'zero': x = rng.bernoulli(0.5) ? 0 : rng.normal(); break;
        case 'scaled': x = base[d] * (1 + (row % 5)); break;
        case 'huge': x = rng.normal() * 1e30; break;
        case 'tiny': x = rng.normal() * 1e-30; break;
        default: x = rng.normal();
      }
      e[row * dim + d] = Math.fround(x);
    }
  }
  const r0 = rng.next();
  return forestOf(dim, parents, (row) => {
    const visits = rng.bernoulli(c.unvisited) ? 0 : rng.int(1, c.maxVisits);
    let reward: number;
    switch (c.rewards) {
      case 'binary': reward = rng.int(0, 1); break;
      case 'near-equal': reward = r0 + rng.int(-2, 2) * 1e-9; break;
      case 'large': reward = 1e6 + rng.normal(); break;
      // A large offset shared by the tree (±1e15 … ±1e20) with differences of 1/8: the f32
      // hi/lo split holds these only relative to a per-group reference value.
      case 'offset': reward = r0 * 1e20 * (r0 < 0.5 ? -1 : 1) + 1e15 + rng.int(0, 8) * 0.125 * 2 ** Math.floor(r0 * 20); break;
      default: reward = rng.next();
    }
    const uncertainty = c.rewards === 'near-equal' ? 0.25 + rng.int(0, 2) * 1e-10
      : c.rewards === 'offset' ? 3e14 + rng.int(0, 4) * 0.0625 : Math.abs(rng.normal()) * 0.5;
    return { reward, visits, uncertainty, terminal: c.allTerminal ? row > 0 || rng.bernoulli(0.5) : rng.bernoulli(0.1) };
  }, e);
}

const planOf = (forest: PackedForest, scores: Scores) => {
  const a = allocate(forest, scores, { budget: 16 });
  return JSON.stringify([Array.from(a.branches), Array.from(a.depth), Array.from(a.pruned)]);
};

/**
 * Allocations from GPU scores must equal those from CPU scores, unless the float64 plan itself
 * is unstable under perturbations of the size of the observed float32 deviations (a rounding
 * near-tie: a prune threshold, a largest-remainder tie or a depth at .5).
 */
function expectSameAllocation(forest: PackedForest, gpu: Scores, cpu: Scores, seed: number): boolean {
  const want = planOf(forest, cpu);
  if (planOf(forest, gpu) === want) return false;
  const d = deviation(forest, gpu, cpu);
  const size = 2 * Math.max(d.weight, d.intensity, 1e-7);
  const rng = new Rng(seed);
  let unstable = false;
  for (let trial = 0; trial < 16 && !unstable; trial++) {
    const jitter = (x: Float64Array | Float32Array) => x.map((v) => v + (rng.next() * 2 - 1) * size);
    unstable = planOf(forest, { ...cpu, weight: jitter(cpu.weight), intensity: jitter(cpu.intensity) }) !== want;
  }
  expect(unstable, 'GPU and CPU allocations differ away from any rounding near-tie').toBe(true);
  return true;
}

gpuDescribe('GPU scores match the float64 reference (SPEC §2 tolerances)', () => {
  let ctx: GpuContext;
  const scorers = new Map<Route, GpuScorer>();
  beforeAll(async () => {
    ctx = await GpuContext.create();
    for (const route of ['auto', 'staged', 'classic', 'thread', 'workgroup', 'tiled'] as const) scorers.set(route, await GpuScorer.create({ context: ctx, route }));
  });
  afterAll(() => {
    for (const s of scorers.values()) s.destroy();
    ctx?.destroy();
  });

  // `independent: false` for rows beyond ~1e±154: test/reference squares them plainly, so its
  // norms under/overflow float64 there (src/score/cpu.ts rescales, as the kernels do).
  // test/reference implements v1 only, so v2 is checked against src/score/cpu.ts alone.
  const check = async (forest: PackedForest, params: { alpha: number; tau: number; rule?: Rule }, route: Route = 'auto', independent = true) => {
    const gpu = await scorers.get(route)!.score(forest, params);
    const cpu = scoreCpu(forest, params);
    const d = deviation(forest, gpu, cpu);
    expect(withinTolerance(d), d.worst).toBe(true);
    if (independent && params.rule === 'v1' && forest.nodeCount * forest.dim < 2e6) {
      const di = deviation(forest, gpu, independentScores(forest, params));
      expect(withinTolerance(di), `against test/reference: ${di.worst}`).toBe(true);
    }
    expect(gpu.backend).toBe('gpu');
    return { gpu, cpu };
  };

  it.each(RULES)('holds on 500 random forests with every edge case (fast-check), rule %s', async (rule) => {
    let nearTies = 0, runs = 0;
    await fc.assert(
      fc.asyncProperty(caseArb, async (c) => {
        runs++;
        const forest = buildCase(c);
        const { gpu, cpu } = await check(forest, { alpha: c.alpha, tau: c.tau, rule }, c.route, c.emb !== 'extreme');
        if (expectSameAllocation(forest, gpu, cpu, c.seed)) nearTies++;
      }),
      // Under the suite's fixed seed (test/setup-fast-check.ts): the near-tie count below depends
      // on the cases drawn, and with a fresh seed per run v1's reached its bound (25 of 500) in
      // one CI run. With that seed on lavapipe: v1 7, v2 43, v3 3, v4 2, v5 3.
      { numRuns: 500 },
    );
    // Near-ties are allowed, but they must stay rare or the comparison proves nothing. v2 has
    // more of them: every open row of equal ψ claims the same, so exact float64 ties (broken by
    // row index) are common and the f32 weights may order them either way (50 of 500 measured).
    expect(nearTies).toBeLessThan(rule === 'v1' ? 25 : 100);
    expect(runs).toBe(500);
  });

  it('v2 splits a pair by uncertainty, accurately for tiny and huge uncertainties', async () => {
    // One pair per tree, orthogonal embeddings; uncertainties from 0 to 1e30 (and equal ones).
    const pairs: [number, number][] = [[0, 0], [0, 1e-7], [1e-9, 3e-6], [0.25, 0.75], [1, 1e6], [1e12, 1e12 + 1], [0, 1e30], [3e29, 1e30], [1e-6, 1e30]];
    const e = new Float32Array(pairs.length * 3 * 2);
    pairs.forEach((_, t) => { e.set([1, 1, 1, 0, 0, 1], t * 6); });
    const forest = forestOf(2, pairs.map(() => [-1, 0, 0]), (row) => ({ reward: row % 3 === 1 ? 0.5 : 0, visits: 1, uncertainty: pairs[Math.floor(row / 3)][(row % 3) - 1] ?? 0 }), e);
    for (const alpha of [1e-3, 1, 100]) {
      const { gpu, cpu } = await check(forest, { alpha, tau: 0.5, rule: 'v2' });
      pairs.forEach(([ui, uj], t) => {
        // s_ij relative to the float64 split, where C = s·c is not too small to resolve it.
        const c = cpu.contrast, g = gpu.contrast;
        const split = (2 * (ui + 1e-6)) / (ui + uj + 2e-6);
        for (const [row, s] of [[3 * t + 1, split], [3 * t + 2, 2 - split]] as const) {
          expect(c[row]).toBeCloseTo(s * (c[3 * t + 1] + c[3 * t + 2]) / 2, 12);
          if (c[row] > 1e-30) expect(Math.abs(g[row] / c[row] - 1), `pair ${t} row ${row}`).toBeLessThan(2e-6);
        }
      });
    }
  });

  it('v4 and v5 gate each pair on its visits and its exact reward, on every kernel', async () => {
    // One pair per tree with equal rewards and different uncertainties, over the visit counts that
    // decide the gates; rewards 2^-100 apart (unequal, and equal only in their f32 hi part) too.
    const visitPairs: [number, number][] = [[0, 2], [1, 1], [1, 2], [2, 1], [2, 2], [2, 9], [5, 3]];
    const rewards: [number, number][] = [[0, 0], [1, 1], [0.5, 0.5 + 2 ** -100]];
    const cases = rewards.flatMap((r) => visitPairs.map((n) => ({ r, n })));
    const e = new Float32Array(cases.length * 3 * 2);
    cases.forEach((_, t) => { e.set([1, 1, 1, 0, 1, 0.05], t * 6); });
    const forest = forestOf(2, cases.map(() => [-1, 0, 0]), (row) => {
      const { r, n } = cases[Math.floor(row / 3)], at = (row % 3) - 1;
      return at < 0 ? { visits: n[0] + n[1] } : { reward: r[at], visits: n[at], uncertainty: at === 0 ? 0.1 : 0.3 };
    }, e);
    for (const route of ['staged', 'classic', 'thread', 'workgroup', 'tiled'] as const) {
      for (const rule of ['v3', 'v4', 'v5'] as const) {
        const { gpu } = await check(forest, { alpha: 1, tau: 0.5, rule }, route);
        cases.forEach(({ r, n }, t) => {
          const fewest = Math.min(n[0], n[1]);
          const gated = r[0] === r[1] && fewest >= (rule === 'v4' ? 1 : rule === 'v5' ? 2 : Infinity);
          expect(gpu.intensity[t] === 0, `${route} ${rule} rewards ${r} visits ${n}`).toBe(gated);
        });
      }
    }
  });

  it('handles k = 1, dim 0, all-terminal trees and unvisited nodes explicitly', async () => {
    const single = forestOf(3, [[-1, 0], [-1, 0, 1]], (row) => ({ reward: row, visits: row % 2 }), Float32Array.from({ length: 15 }, (_, i) => i - 7));
    const { gpu } = await check(single, { alpha: 1, tau: 0.5 });
    for (const row of [1, 3, 4]) expect([gpu.contrast[row], gpu.weight[row], gpu.gradAlpha[row], gpu.gradTau[row]]).toEqual([0, 1, 0, 0]);
    expect(Array.from(gpu.intensity)).toEqual([0, 0, 0]);

    const dim0 = forestOf(0, [[-1, 0, 0, 0, 1]], (row) => ({ reward: row * 0.25, visits: row === 3 ? 0 : 2, uncertainty: 0.1 * row, terminal: row > 0 }), new Float32Array(0));
    await check(dim0, { alpha: 2, tau: 0.1 });
  });

  it('handles forests with no groups at all (no trees, only roots)', async () => {
    const empty = forestOf(4, [], () => ({}), new Float32Array(0));
    const roots = forestOf(2, [[-1], [-1]], () => ({ visits: 1 }), Float32Array.of(1, 2, 3, 4));
    for (const forest of [empty, roots]) {
      const { gpu } = await check(forest, { alpha: 1, tau: 0.5 });
      expect(Array.from(gpu.weight)).toEqual(new Array(forest.nodeCount).fill(1));
      expect(gpu.intensity.length).toBe(0);
    }
  });

  it('handles huge groups (k = 1100, dim 48) on every kernel', async () => {
    const k = 1100, dim = 48;
    const rng = new Rng(7);
    const e = Float32Array.from({ length: (k + 1) * dim }, (_, i) => (i % 3 === 0 ? 0 : rng.normal()));
    const forest = forestOf(dim, [[-1, ...new Array<number>(k).fill(0)]], (row) => ({ reward: rng.next(), visits: row % 7, uncertainty: rng.next() }), e);
    for (const route of ['workgroup', 'thread', 'tiled'] as const) await check(forest, { alpha: 0.7, tau: 0.05 }, route);
  });

  it('handles dims past 4096 and near-duplicate siblings', async () => {
    const dim = 4100;
    const rng = new Rng(3);
    const base = Array.from({ length: dim }, () => rng.normal());
    const e = Float32Array.from({ length: 5 * dim }, (_, i) => base[i % dim] + (i >= 3 * dim ? rng.normal() * 1e-4 : 0));
    const forest = forestOf(dim, [[-1, 0, 0, 0, 0]], (row) => ({ reward: row * 1e-3, visits: 3 }), e);
    await check(forest, { alpha: 1, tau: 0.5 });
  });

  it('gives identical results however the forest is chunked', async () => {
    const forest = generateForest({ trees: 60, dim: 24, seed: 5 });
    const whole = await scorers.get('auto')!.score(forest);
    const chunked = await GpuScorer.create({ context: ctx, maxChunkBytes: 4096 });
    try {
      const parts = await chunked.score(forest);
      expect(Array.from(parts.contrast)).toEqual(Array.from(whole.contrast));
      expect(Array.from(parts.weight)).toEqual(Array.from(whole.weight));
      expect(Array.from(parts.gradTau)).toEqual(Array.from(whole.gradTau));
      expect(Array.from(parts.intensity)).toEqual(Array.from(whole.intensity));
    } finally {
      chunked.destroy();
    }
  });

  it('folds dispatches over 65 535 workgroups into a 2-D grid', async () => {
    const trees = 70_000;
    const parents = Array.from({ length: trees }, () => [-1, 0, 0]);
    const rng = new Rng(11);
    const e = Float32Array.from({ length: trees * 3 * 2 }, () => rng.normal());
    const forest = forestOf(2, parents, (row) => ({ reward: (row * 37) % 11 / 10, visits: 1, uncertainty: (row % 5) / 7 }), e);
    await check(forest, { alpha: 1, tau: 0.5 }, 'workgroup');
  });
});
