/**
 * Conformance of the library with an independent float64 reading of TRACE v3
 * (docs/ALGORITHM.md; the reference is test/reference/v3.ts with v3-scores.ts, written from that
 * document alone). The library is a black box, reached two ways:
 *  - in process through its public API (reference/library-v3.ts: parseForest, scoreCpu, allocate,
 *    planToJson), for the bulk of the random forests: milliseconds each;
 *  - through the CLI, `trace-alloc score FILE --scores --backend cpu [--rule v3 | --rule=v3]
 *    [flags]`, for the worked examples and a sample of the random forests (flag
 *    spelling, JSON Lines, --widen ignored).
 *
 * Scores are held to 1e-9·max(1, |value|); budgets, `unallocated`, `pruned` and every
 * {node, branches, depth} exactly, except at the document's ties, where the reference takes the
 * library's side and checks everything that follows (reference/compare-v3.ts). Trees that hit a
 * known disagreement (reference/known-v3.ts, each pinned below by a minimal case) are compared as
 * far as that disagreement allows.
 *
 * CONFORMANCE_V3_RUNS=n (default 700) random forests in process and CONFORMANCE_V3_CLI_RUNS=m
 * (default 8) through the CLI; CONFORMANCE_SEED=s draws other ones (the coverage floors below
 * hold for the default seed). A failing forest and its command line are kept under
 * $TMPDIR/trace-alloc-conformance/.
 */
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { v3CaseArb, type V3Case } from './reference/arbitrary-v3.js';
import { v3Flags } from './reference/cli.js';
import { compareV3, type TiesFollowed } from './reference/compare-v3.js';
import { cliRunner, expectPrinted, forestText, referenceHolder } from './reference/harness-contest.js';
import { regimesOf } from './reference/coverage-v3.js';
import { libraryPlanV3 } from './reference/library-v3.js';
import type { SpecForest, SpecNode } from './reference/spec.js';
import { referencePlanV3, V3_DEFAULTS, type V3Params, type V3Plan, type V3Result } from './reference/v3.js';

const RUNS = Number(process.env.CONFORMANCE_V3_RUNS ?? 700);
const CLI_RUNS = Number(process.env.CONFORMANCE_V3_CLI_RUNS ?? 8);
const DEFAULT_SEED = 20261201;
const SEED = Number(process.env.CONFORMANCE_SEED ?? DEFAULT_SEED);

const cli = cliRunner('v3');
afterAll(() => cli.dispose());

/** `trace-alloc score FILE --scores --backend cpu [v3 flags]` on a forest, parsed. */
function cliPlan(forest: SpecForest, params: V3Params, format: 'json' | 'jsonl' = 'json', opts: Parameters<typeof v3Flags>[1] = {}): { plan: V3Plan; text: string; args: string[] } {
  return cli.plan(forest, v3Flags(params, opts), format);
}

const params = (over: Partial<V3Params> = {}): V3Params => ({ ...V3_DEFAULTS, ...over });
const perTree = (budget: number): V3Params['budget'] => ({ kind: 'perTree', budget });

// ------------------------------------------------------------------ worked examples

/** Worked example 1: root p and the three children A, B, C (docs/ALGORITHM.md). */
const EXAMPLE_1: SpecNode[] = [
  { parent: -1, visits: 4, reward: 0.5, embedding: [1, 1] },
  { parent: 0, reward: 1, visits: 2, uncertainty: 0.1, embedding: [1, 0] },
  { parent: 0, reward: 0, visits: 2, uncertainty: 0.1, embedding: [1, 0.1] },
  { parent: 0, reward: 0.5, visits: 0, uncertainty: 0.3, embedding: [0, 1] },
];
/** Worked example 2: example 1 with node 4 under A and two finished episodes (5, 6) under node 4. */
const EXAMPLE_2: SpecNode[] = [
  ...EXAMPLE_1,
  { parent: 1, reward: 1, visits: 2, uncertainty: 0.2, embedding: [1, 0] },
  { parent: 4, reward: 1, visits: 1, terminal: true, embedding: [1, 0] },
  { parent: 4, reward: 1, visits: 1, terminal: true, embedding: [1, 0.2] },
];

describe('v3 worked examples of docs/ALGORITHM.md, reproduced by the reference and by the CLI', () => {
  const forest1: SpecForest = { dim: 2, trees: [{ id: 'ex1', nodes: EXAMPLE_1 }] };
  const forest2: SpecForest = { dim: 2, trees: [{ id: 'ex2', nodes: EXAMPLE_2 }] };

  it('example 1: scores, ν, claims, x and the plan root 12, A 3, B 0, C 1 (depths 4, 4, 3)', () => {
    const ref = referencePlanV3(forest1, params());
    const s = ref.scores[0];
    const a = ref.trees[0];
    expectPrinted([s.intensity[0]], [0.530271]);
    expectPrinted(s.contrast.slice(1), [0.570191, 0.575656, 0.444965]);
    expectPrinted(s.weight.slice(1), [0.358495, 0.362435, 0.279070]);
    expectPrinted(s.gradAlpha.slice(1), [0.147026, 0.142580, -0.374042]);
    expectPrinted(s.gradTau.slice(1), [-0.065932, -0.076862, 0.184519]);
    expectPrinted(a.lnPsi.slice(1).map(Math.exp), [1.075485, 1.087304, 0.837211]);
    expectPrinted(a.nu.slice(1), [1, 0, 0.5]);
    expect(a.tree.pruned).toEqual([]);
    // claims are carried up to a common factor: the document prints them with Σπ = 1 + e = 3.121083
    const sum = a.claim.reduce((x, y) => x + y, 0);
    expectPrinted(a.claim.map((c) => (c * 3.121083) / sum), [2.328811, 0.570298, 0, 0.221974]);
    expectPrinted(a.mass, [11.9385, 2.9236, 0, 1.1379]);
    const want = [{ node: 0, branches: 12, depth: 4 }, { node: 1, branches: 3, depth: 4 }, { node: 3, branches: 1, depth: 3 }];
    expect(ref.plan.trees[0].allocations).toEqual(want);

    for (const rule of ['default', 'spaced'] as const) {
      const cli = cliPlan(forest1, params(), 'json', { rule });
      expect(cli.plan.params).toEqual({ alpha: 1, tau: 0.5, rule: 'v3' });
      expect(cli.plan.trees[0].allocations).toEqual(want);
      expect(cli.plan.trees[0].pruned).toEqual([]);
      expect(cli.plan.trees[0].unallocated).toBe(0);
      expectPrinted((cli.plan.trees[0].scores ?? []).map((x) => x.weight), [0.358495, 0.362435, 0.279070]);
      expectPrinted((cli.plan.trees[0].groups ?? []).map((x) => x.intensity), [0.530271]);
      expect(compareV3(cli.plan, forest1, params(), ref).problems).toEqual([]);
    }
  });

  it("example 2: node 4's uncontested fork emits nothing; A's region {A, 4} shares 0.570298; root 12, A 2, C 1, node 4 1", () => {
    const ref = referencePlanV3(forest2, params());
    const s = ref.scores[0];
    const a = ref.trees[0];
    expect(s.contrast[5]).toBe(0);
    expect(s.contrast[6]).toBe(0);
    expect(s.weight[5]).toBe(0.5);
    expect(s.intensity[4]).toBe(0);
    expect(a.contested.map((x, v) => (x ? v : -1)).filter((v) => v >= 0)).toEqual([0]);
    const sum = a.claim.reduce((x, y) => x + y, 0);
    expectPrinted([1, 4].map((v) => (a.claim[v] * 3.121083) / sum), [0.285149, 0.285149]);
    expectPrinted(a.mass, [11.9385, 1.4618, 0, 1.1379, 1.4618, 0, 0]);
    const want = [{ node: 0, branches: 12, depth: 4 }, { node: 1, branches: 2, depth: 4 }, { node: 3, branches: 1, depth: 3 }, { node: 4, branches: 1, depth: 4 }];
    expect(ref.plan.trees[0].allocations).toEqual(want);
    const cli = cliPlan(forest2, params(), 'json', { rule: 'joined' });
    expect(cli.plan.trees[0].allocations).toEqual(want);
    expect(compareV3(cli.plan, forest2, params(), ref).problems).toEqual([]);
  });
});

// ------------------------------------------------------------------ random forests

const totals: TiesFollowed & { forests: number; trees: number; cliForests: number } = {
  forests: 0, trees: 0, cliForests: 0, budget: 0, prune: 0, rounding: 0, depth: 0,
};
const holder = referenceHolder('v3', referencePlanV3, totals);
const { knownCounts, cases: seenCases, refs: seenRefs } = holder;
const holdToReference = holder.hold;

describe('the library conforms to the independent v3 reference on random forests', () => {
  it(`agrees on ${RUNS} random forests in process (public API; both budget modes, JSON and JSON Lines, deep chains)`, () => {
    fc.assert(fc.property(v3CaseArb, (c) => {
      const text = forestText(c.forest, c.format);
      holdToReference(c, text, libraryPlanV3(text, c.format, c.params), `libraryPlanV3(${c.format}, ${JSON.stringify(c.params)})`);
    }), { numRuns: RUNS, seed: SEED });
    console.log(`conformance-v3 (API): ${totals.forests} forests, ${totals.trees} trees; ties followed ${JSON.stringify({ budget: totals.budget, prune: totals.prune, rounding: totals.rounding, depth: totals.depth })}; trees on known disagreements ${JSON.stringify(knownCounts)}`);
    expect(totals.forests).toBe(RUNS);
  }, 300_000);

  it(`agrees through the CLI on ${CLI_RUNS} more (--rule v3, --rule=v3, explicit defaults, --widen ignored)`, () => {
    const before = totals.forests;
    fc.assert(fc.property(v3CaseArb, (c) => {
      const { plan, text, args } = cliPlan(c.forest, c.params, c.format, { explicit: c.explicit, rule: c.rule, widen: c.widen });
      holdToReference(c, text, plan, `trace-alloc ${args.join(' ')}`);
    }), { numRuns: CLI_RUNS, seed: SEED + 1 });
    totals.cliForests = totals.forests - before;
    expect(totals.cliForests).toBe(CLI_RUNS);
  }, 300_000);

  it('the forests compared reach every regime v3 decides in', () => {
    // with the default seed and runs each regime is met at least 5 times; other draws only print the counts
    expect(seenCases.length).toBe(RUNS + CLI_RUNS);
    const seen = regimesOf(seenCases, seenRefs);
    console.log(`conformance-v3 coverage over ${seenCases.length} forests: ${JSON.stringify(seen)}`);
    if (SEED !== DEFAULT_SEED || RUNS < 700) return; // the floors are a property of the default draw
    const thin = Object.entries(seen).filter(([, n]) => n < 5).map(([k, n]) => `${k}: ${n}`);
    expect(thin).toEqual([]);
  });
});

// ------------------------------------------------------------------ known disagreements

/**
 * Minimal forests on which the library departs from docs/ALGORITHM.md (found by the random
 * comparison above, shrunk by hand). Each case states the document's answer (the reference's, in
 * concrete numbers) and the library's answer today, so it fails as soon as either moves: when the
 * library is fixed, drop the predicate in reference/known-v3.ts and keep only the first half.
 */
describe('edge cases the random comparison found: known disagreements and fixed ones (minimal cases, in process)', () => {
  function both(forest: SpecForest, p: V3Params): { lib: V3Plan; ref: V3Result; problems: string[] } {
    const lib = libraryPlanV3(JSON.stringify(forest), 'json', p);
    const ref = referencePlanV3(forest, p);
    return { lib, ref, problems: compareV3(lib, forest, p, ref).problems };
  }
  const branches = (t: V3Plan['trees'][number]) => t.allocations.map((a) => [a.node, a.branches]);

  it('d = 0 for siblings pointing the same way ([−1] and [−1.287]): at α = 10³⁰⁰ the document gives c = 1/(1 + ε); the library ≈ 3·10⁻²⁶⁸', () => {
    const forest: SpecForest = { dim: 1, trees: [{ nodes: [
      { parent: -1, embedding: [1] },
      { parent: 0, visits: 1, reward: 1, embedding: [-1] },
      { parent: 0, visits: 1, reward: 0, embedding: [-1.2870968878269196] },
    ] }] };
    const { lib, ref, problems } = both(forest, params({ alpha: 1e300 }));
    expect(ref.scores[0].contrast[1]).toBeCloseTo(1 / (1 + 1e-6), 15);
    expect(branches(ref.plan.trees[0])).toEqual([[0, 11], [1, 5]]);
    expect(lib.trees[0].scores?.[0].contrast).toBeLessThan(1e-250); // KNOWN: ulp-level noise in d, times α
    expect(branches(lib.trees[0])).toEqual([[0, 16]]);
    expect(problems.length).toBeGreaterThan(0);
  });

  it('visited rewards ±10³⁰⁸ (hi − lo overflows): ν = (1, 0) from quarter-scaled rewards and the open root keeps its share', () => {
    const forest: SpecForest = { dim: 0, trees: [{ nodes: [
      { parent: -1 }, { parent: 0, visits: 1, reward: 1e308 }, { parent: 0, visits: 1, reward: -1e308 },
    ] }] };
    const { lib, ref, problems } = both(forest, params());
    expect(ref.trees[0].nu.slice(1)).toEqual([1, 0]);
    expect(branches(ref.plan.trees[0])).toEqual([[0, 11], [1, 5]]);
    expect(branches(lib.trees[0])).toEqual([[0, 11], [1, 5]]); // was an equal spread 6/5/5
    expect(problems).toEqual([]);
  });

  it('η = 0 at an open fork whose kept children all have ν = 1: what stays there is 0 and Σ b = B', () => {
    const forest: SpecForest = { dim: 0, trees: [{ nodes: [
      { parent: -1 }, { parent: 0 }, { parent: 1 }, { parent: 2 }, { parent: 2, uncertainty: 2.5 }, { parent: 3 },
    ] }] };
    const { lib, ref, problems } = both(forest, params({ forkKeep: 0, contestGain: 1e6, budget: perTree(1000) }));
    expect(ref.trees[0].claim[2]).toBe(0);
    expect(branches(ref.plan.trees[0])).toEqual([[3, 17], [4, 966], [5, 17]]);
    expect(branches(lib.trees[0])).toEqual([[3, 17], [4, 966], [5, 17]]); // was 1001 branches: a negative stay, ⌊x⌋ = −1
    expect(problems).toEqual([]);
  });

  it('a terminal root and κ = 5·10⁻³²⁴: Σπ > 0 in exact arithmetic, so x follows the weights (2, 5), as in the scaled form over the parts claimed', () => {
    const forest: SpecForest = { dim: 0, trees: [{ nodes: [
      { parent: -1, terminal: true }, { parent: 0 }, { parent: 0, uncertainty: 0.1 },
    ] }] };
    const { lib, ref, problems } = both(forest, params({ contestGain: 5e-324, budget: perTree(7) }));
    expect(ref.trees[0].fallback).toBe(false);
    expect(branches(ref.plan.trees[0])).toEqual([[1, 2], [2, 5]]);
    expect(branches(lib.trees[0])).toEqual([[1, 2], [2, 5]]); // was an equal spread (4, 3): κ·ψ·I underflowed before M was taken
    expect(problems).toEqual([]);
  });

  it('κ = 0 on a chain of 360 eight-wide forks at τ = 0.01 (ψ·I past e^745): every part claimed is the fresh share of the root, so all 16 start there', () => {
    const nodes: SpecNode[] = [{ parent: -1, reward: 0.5, visits: 8, embedding: [1, 1] }];
    let head = 0;
    for (let level = 0; level < 360; level++) {
      const first = nodes.length;
      for (let i = 0; i < 8; i++) {
        nodes.push(i === 0
          ? { parent: head, reward: 1, visits: 1, uncertainty: 0.3, embedding: [1, 0] }
          : { parent: head, reward: 0, visits: 1, terminal: true, embedding: [1, 1e-3 * i] });
      }
      head = first;
    }
    const forest: SpecForest = { dim: 2, trees: [{ nodes }] };
    const { lib, ref, problems } = both(forest, params({ tau: 0.01, contestGain: 0 }));
    expect(branches(ref.plan.trees[0])).toEqual([[0, 16]]);
    expect(branches(lib.trees[0])).toEqual([[0, 16]]); // was one unit each at nodes 0, 1, 9, …: M was taken over forks that emit nothing
    expect(problems).toEqual([]);
  });

  it('ψ past 10³⁰⁸ with γ = 10⁻³: ψ in the depth rule is its float64 value, +∞, so depth = maxDepth (not the ≈ 8 of exact arithmetic)', () => {
    // 520 contested forks of 4 near-duplicate siblings; the continued one alone succeeded and is the least settled
    const nodes: SpecNode[] = [{ parent: -1, reward: 0.5, visits: 4, embedding: [1, 1] }];
    let head = 0;
    for (let level = 0; level < 520; level++) {
      const first = nodes.length;
      for (let i = 0; i < 4; i++) {
        nodes.push(i === 0
          ? { parent: head, reward: 1, visits: 1, uncertainty: 0.3, embedding: [1, 0] }
          : { parent: head, reward: 0, visits: 1, terminal: true, embedding: [1, 1e-3 * i] });
      }
      head = first;
    }
    const forest: SpecForest = { dim: 2, trees: [{ nodes }] };
    const { lib, ref, problems } = both(forest, params({ tau: 0.01, depthGain: 1e-3 }));
    const deepest = ref.plan.trees[0].allocations.at(-1)!;
    expect(ref.trees[0].lnPsi[deepest.node]).toBeGreaterThan(Math.log(Number.MAX_VALUE));
    expect(Math.floor(4 * Math.exp(1e-3 * ref.trees[0].lnPsi[deepest.node]) + 0.5)).toBeLessThan(16);
    expect(deepest.depth).toBe(16); // maxDepth = 4·D0
    expect(lib.trees[0].allocations.find((a) => a.node === deepest.node)?.depth).toBe(16);
    expect(problems).toEqual([]);
  });
});
