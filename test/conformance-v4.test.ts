/**
 * Conformance of the library with an independent float64 reading of TRACE v4
 * (docs/ALGORITHM.md, "v4: v3's allocation on gated scores"; the reference is
 * test/reference/v4.ts: v3-scores.ts with the uncertainty gate, then v3.ts's allocation, written
 * from that document alone). The library is a black box, reached two ways:
 *  - in process through its public API (reference/library-v3.ts with rule 'v4'), for the bulk of
 *    the random forests;
 *  - through the CLI, `trace-alloc score FILE --scores --backend cpu [--rule v4 | --rule=v4]
 *    [flags]`, for the worked examples and a sample of the random forests.
 *
 * Tolerances and ties are v3's (reference/compare-v3.ts, "Precision, ties and refusals"): scores to
 * 1e-9·max(1, |value|), everything discrete exactly except at a documented tie, where the
 * reference takes the library's side and re-derives what follows. Known disagreements are v3's
 * (reference/known-v3.ts: α > 10¹⁵ with near-duplicate siblings, which the document itself lists).
 *
 * CONFORMANCE_V4_RUNS=n (default 400) random forests in process and CONFORMANCE_V4_CLI_RUNS=m
 * (default 6) through the CLI; CONFORMANCE_SEED=s draws other ones (the coverage floors hold for
 * the default seed and runs). A failing forest and its command line are kept under
 * $TMPDIR/trace-alloc-conformance/.
 */
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import type { V3Case } from './reference/arbitrary-v3.js';
import { v4CaseArb } from './reference/arbitrary-v4.js';
import { v3Flags, v4Flags } from './reference/cli.js';
import { compareV3, type TiesFollowed } from './reference/compare-v3.js';
import { regimesOfV4 } from './reference/coverage-v4.js';
import { cliRunner, expectPrinted, forestText, readBack, referenceHolder } from './reference/harness-contest.js';
import { knownDisagreements, knownSkips } from './reference/known-v3.js';
import { libraryPlanV3 } from './reference/library-v3.js';
import type { SpecForest, SpecNode } from './reference/spec.js';
import { distance, response, share, unitVector } from './reference/v3-scores.js';
import { referencePlanV3, type V3Params, type V3Plan, type V3Result } from './reference/v3.js';
import { gatedPairs, referencePlanV4, V4_DEFAULTS } from './reference/v4.js';

const RUNS = Number(process.env.CONFORMANCE_V4_RUNS ?? 400);
const CLI_RUNS = Number(process.env.CONFORMANCE_V4_CLI_RUNS ?? 6);
const DEFAULT_RUNS = 400;
const DEFAULT_SEED = 20261203;
const SEED = Number(process.env.CONFORMANCE_SEED ?? DEFAULT_SEED);

const cli = cliRunner('v4');
afterAll(() => cli.dispose());

const params = (over: Partial<V3Params> = {}): V3Params => ({ ...V4_DEFAULTS, ...over });
const perTree = (budget: number): V3Params['budget'] => ({ kind: 'perTree', budget });
const branches = (t: V3Plan['trees'][number]) => t.allocations.map((a) => [a.node, a.branches]);
/** Claims are carried up to a common factor: scaled to the Σπ the document prints. */
const claimsSummingTo = (claim: readonly number[], total: number) => {
  const sum = claim.reduce((x, y) => x + y, 0);
  return claim.map((c) => (c * total) / sum);
};
/** Ref and library (in process) under v4, and every disagreement between them. */
function both(forest: SpecForest, p: V3Params): { lib: V3Plan; ref: V3Result; problems: string[] } {
  const lib = libraryPlanV3(JSON.stringify(forest), 'json', p, 'v4');
  const ref = referencePlanV4(forest, p);
  return { lib, ref, problems: compareV3(lib, forest, p, ref).problems };
}

// ------------------------------------------------------------------ worked examples

/** Worked example 1: root p and the three children A, B, C (docs/ALGORITHM.md). */
const EXAMPLE_1: SpecNode[] = [
  { parent: -1, visits: 4, reward: 0.5, embedding: [1, 1] },
  { parent: 0, reward: 1, visits: 2, uncertainty: 0.1, embedding: [1, 0] },
  { parent: 0, reward: 0, visits: 2, uncertainty: 0.1, embedding: [1, 0.1] },
  { parent: 0, reward: 0.5, visits: 0, uncertainty: 0.3, embedding: [0, 1] },
];
/** Worked example 3, "two siblings that both failed". */
const BOTH_FAILED: SpecNode[] = [
  { parent: -1, visits: 2, reward: 0, embedding: [0, 0] },
  { parent: 0, visits: 1, reward: 0, uncertainty: 0.1, embedding: [1, 0] },
  { parent: 0, visits: 1, reward: 0, uncertainty: 0.3, embedding: [1, 0.05] },
];
/** Worked example 3, "a success and two failures": A, B, C. */
const ONE_SUCCESS: SpecNode[] = [
  { parent: -1, visits: 3, reward: 1 / 3, embedding: [0, 0] },
  { parent: 0, visits: 1, reward: 1, uncertainty: 0.2, embedding: [1, 0] },
  { parent: 0, visits: 1, reward: 0, uncertainty: 0.1, embedding: [1, 0.1] },
  { parent: 0, visits: 1, reward: 0, uncertainty: 0.3, embedding: [1, 0.2] },
];

/** d, c under v3 and v4, and σ of the first sibling, for the pair (i, j) of a node list. */
function pair(nodes: readonly SpecNode[], i: number, j: number) {
  const d = distance(unitVector(nodes[i].embedding), unitVector(nodes[j].embedding));
  return { d, c3: response(nodes[i], nodes[j], 1, d, 'v3').c, c4: response(nodes[i], nodes[j], 1, d, 'v4').c, sigma: share(nodes[i], nodes[j]) };
}

describe('v4 worked examples of docs/ALGORITHM.md, number by number, by the reference and by the CLI', () => {
  it('example 1 has no pair whose rewards agree: v4 scores and plans it as v3 (root 12, A 3, C 1), with --rule v4 and --rule=v4', () => {
    const forest: SpecForest = { dim: 2, trees: [{ id: 'ex1', nodes: EXAMPLE_1 }] };
    const ref = referencePlanV4(forest, params());
    const s = ref.scores[0];
    const a = ref.trees[0];
    expect(gatedPairs(forest.trees[0])).toEqual([]);
    expectPrinted([s.intensity[0]], [0.530271]);
    expectPrinted(s.contrast.slice(1), [0.570191, 0.575656, 0.444965]);
    expectPrinted(s.weight.slice(1), [0.358495, 0.362435, 0.279070]);
    expectPrinted(s.gradAlpha.slice(1), [0.147026, 0.142580, -0.374042]);
    expectPrinted(s.gradTau.slice(1), [-0.065932, -0.076862, 0.184519]);
    expectPrinted(a.nu.slice(1), [1, 0, 0.5]);
    expectPrinted(claimsSummingTo(a.claim, 3.121083), [2.328811, 0.570298, 0, 0.221974]);
    expectPrinted(a.mass, [11.9385, 2.9236, 0, 1.1379]);
    const want = [{ node: 0, branches: 12, depth: 4 }, { node: 1, branches: 3, depth: 4 }, { node: 3, branches: 1, depth: 3 }];
    expect(ref.plan.trees[0].allocations).toEqual(want);
    expect(ref.plan.trees[0]).toEqual({ ...referencePlanV3(forest, params()).plan.trees[0] });
    for (const rule of ['spaced', 'joined'] as const) {
      const { plan } = cli.plan(forest, v4Flags(params(), { rule }));
      expect(plan.params).toEqual({ alpha: 1, tau: 0.5, rule: 'v4' });
      expect(plan.trees[0].allocations).toEqual(want);
      expect(plan.trees[0].pruned).toEqual([]);
      expect(compareV3(plan, forest, params(), ref).problems).toEqual([]);
    }
  });

  // Both cases of example 3 in one forest (per-tree budgets: the trees do not interact).
  const example3: SpecForest = { dim: 2, trees: [{ id: 'failed', nodes: BOTH_FAILED }, { id: 'success', nodes: ONE_SUCCESS }] };

  it('example 3, two siblings that both failed: v3 root 6, node 2: 10; v4 root 16 (the gate closes Δu = 0.2)', () => {
    expectPrinted([pair(BOTH_FAILED, 1, 2).d], [0.00062383]);
    expectPrinted([pair(BOTH_FAILED, 1, 2).c3], [0.996886]);
    expect(pair(BOTH_FAILED, 1, 2).c4).toBe(0);

    const v3 = referencePlanV3(example3, params());
    const [s3, a3] = [v3.scores[0], v3.trees[0]];
    expectPrinted([s3.intensity[0]], [0.996886]);
    expectPrinted(s3.contrast.slice(1), [0.498445, 1.495326]);
    expectPrinted(s3.weight.slice(1), [0.119860, 0.880140]);
    expect(a3.tree.pruned).toEqual([1]);
    expect(a3.nu).toEqual([1, 1, 1]);
    const e3 = 4 * s3.intensity[0]; // κ·ψ_root·I
    expectPrinted([e3, 0.25 * e3, 0.75 * e3], [3.987542, 0.996886, 2.990657]);
    expectPrinted(claimsSummingTo(a3.claim, 1 + e3), [1.996886, 0, 2.990657]);
    expectPrinted(a3.mass, [6.406, 0, 9.594]);
    expect(branches(a3.tree)).toEqual([[0, 6], [2, 10]]);

    const v4 = referencePlanV4(example3, params());
    const [s4, a4] = [v4.scores[0], v4.trees[0]];
    expect(s4.contrast.slice(1)).toEqual([0, 0]);
    expect(s4.weight.slice(1)).toEqual([0.5, 0.5]);
    expect(s4.intensity[0]).toBe(0);
    expect(a4.contested).toEqual([false, false, false]);
    expect(branches(a4.tree)).toEqual([[0, 16]]);
  });

  it('example 3, a success and two failures: pair table; v3 root 12, A 4; v4 root 7, A 9 (depth 7)', () => {
    const pairs = [pair(ONE_SUCCESS, 1, 2), pair(ONE_SUCCESS, 1, 3), pair(ONE_SUCCESS, 2, 3)];
    // The document prints d = 0.0097096 for A–C and 0.0023864 for B–C; the exact values round to
    // 0.0097097 and 0.0023857 (cos(B, C) = 1.02/√(1.01·1.04)). Its c of B–C, 0.988207, is the one
    // of d = 0.0023857 (0.0023864 would give 0.988204): the two d are misprints, reported to the lead.
    expectPrinted(pairs.map((x) => x.d), [0.0024814, 0.0097097, 0.0023857]);
    expectPrinted(pairs.map((x) => x.c3), [0.997748, 0.991249, 0.988207]);
    expectPrinted(pairs.map((x) => x.c4), [0.997748, 0.991249, 0]);
    expectPrinted(pairs.map((x) => x.sigma), [1.333331, 0.800001, 0.500002]);

    const v3 = referencePlanV3(example3, params());
    const [s3, a3] = [v3.scores[1], v3.trees[1]];
    expect(a3.nu).toEqual([1 / 3, 1, 0, 0]);
    expectPrinted(s3.contrast.slice(1), [1.061665, 0.579637, 1.335903]);
    expectPrinted(s3.weight.slice(1), [0.321341, 0.122541, 0.556118]);
    expectPrinted([s3.intensity[0], 0.5 * s3.weight[3]], [0.992402, 0.278059]);
    expect(a3.tree.pruned).toEqual([2]);
    const e3 = 4 * s3.intensity[0];
    const pass3 = 0.75 * e3;
    expectPrinted([e3, 0.25 * e3, pass3], [3.969606, 0.992402, 2.977205]);
    expectPrinted([pass3 * s3.weight[1] / (s3.weight[1] + s3.weight[3]), pass3 * s3.weight[3] / (s3.weight[1] + s3.weight[3])], [1.090305, 1.886900]);
    expectPrinted(claimsSummingTo(a3.claim, 1 + e3), [3.879301, 1.090305, 0, 0]);
    expectPrinted(a3.mass, [12.4897, 3.5103, 0, 0]);
    expect(a3.tree.allocations).toEqual([{ node: 0, branches: 12, depth: 4 }, { node: 1, branches: 4, depth: 4 }]);

    const v4 = referencePlanV4(example3, params());
    const [s4, a4] = [v4.scores[1], v4.trees[1]];
    expect(a4.nu).toEqual([1 / 3, 1, 0, 0]);
    expectPrinted(s4.contrast.slice(1), [1.061665, 0.332584, 0.594749]);
    expectPrinted(s4.weight.slice(1), [0.615116, 0.143115, 0.241768]);
    expectPrinted([s4.intensity[0], 0.5 * s4.weight[1]], [0.662999, 0.307558]);
    expect(a4.tree.pruned).toEqual([2, 3]);
    const e4 = 4 * s4.intensity[0];
    expectPrinted([e4, 0.25 * e4, 0.75 * e4], [2.651997, 0.662999, 1.988998]);
    expectPrinted(claimsSummingTo(a4.claim, 1 + e4), [1.662999, 1.988998, 0, 0]);
    expectPrinted(a4.mass, [7.2859, 8.7141, 0, 0]);
    expectPrinted([Math.exp(a4.lnPsi[1])], [1.845349]);
    expect(a4.tree.allocations).toEqual([{ node: 0, branches: 7, depth: 4 }, { node: 1, branches: 9, depth: 7 }]);
  });

  it('example 3 through the CLI: --rule v3 and --rule v4 print those plans', () => {
    const ref3 = referencePlanV3(example3, params());
    const ref4 = referencePlanV4(example3, params());
    const got3 = cli.plan(example3, v3Flags(params(), { rule: 'spaced' })).plan;
    const got4 = cli.plan(example3, v4Flags(params(), { rule: 'spaced' }), 'jsonl').plan;
    expect(got3.params.rule).toBe('v3');
    expect(got4.params.rule).toBe('v4');
    expect(got3.trees.map(branches)).toEqual([[[0, 6], [2, 10]], [[0, 12], [1, 4]]]);
    expect(got4.trees.map(branches)).toEqual([[[0, 16]], [[0, 7], [1, 9]]]);
    expect(got4.trees[1].allocations[1].depth).toBe(7);
    expect(compareV3(got3, example3, params(), ref3).problems).toEqual([]);
    expect(compareV3(got4, example3, params(), ref4).problems).toEqual([]);
  });
});

// ------------------------------------------------------------------ the gate, by hand

/**
 * The gate's edges, each a reading of "Scoring" pinned here: the document's answer is the
 * reference's, and the library must give it.
 */
describe('the uncertainty gate at its edges (minimal forests, in process)', () => {
  const twoSiblings = (a: SpecNode, b: SpecNode): SpecForest => ({ dim: 0, trees: [{ nodes: [{ parent: -1 }, { parent: 0, ...a }, { parent: 0, ...b }] }] });

  it('rewards −0 and 0 are the same float64 number for the gate (as they are for Δr): Δu closed, I = 0, all 16 at the root', () => {
    // The document says "the same float64 number"; −0 and +0 differ in sign bit only. Read as
    // numeric equality, which the CLI follows.
    // Written by hand: JSON.stringify(-0) is "0", so a forest object holding −0 would reach the library as 0.
    const text = '{"dim":0,"trees":[{"nodes":[{"parent":-1},{"parent":0,"visits":1,"reward":-0,"uncertainty":0.1},{"parent":0,"visits":1,"reward":0,"uncertainty":0.3}]}]}';
    const forest = JSON.parse(text) as SpecForest;
    expect(Object.is(forest.trees[0].nodes[1].reward, -0)).toBe(true);
    const lib = libraryPlanV3(text, 'json', params(), 'v4');
    const ref = referencePlanV4(forest, params());
    const problems = compareV3(lib, forest, params(), ref).problems;
    expect(ref.scores[0].intensity[0]).toBe(0);
    expect(branches(ref.plan.trees[0])).toEqual([[0, 16]]);
    expect(lib.trees[0].groups?.[0].intensity).toBe(0);
    expect(problems).toEqual([]);
  });

  it('0.1 + 0.2 and 0.3 differ by one rounding: not the same number, so Δu stays and the fork is contested', () => {
    const forest = twoSiblings({ visits: 1, reward: 0.1 + 0.2, uncertainty: 0.1 }, { visits: 1, reward: 0.3, uncertainty: 0.3 });
    const { lib, ref, problems } = both(forest, params());
    expect(ref.scores[0].intensity[0]).toBeCloseTo(0.2 / 0.7000010000000001, 12);
    expect(lib.trees[0].groups?.[0].intensity).toBeGreaterThan(0.28);
    expect(problems).toEqual([]);
  });

  it('the same mean from different visit counts (1/3 of 3 and of 6 rollouts, 0.5 written 5e-1): gated', () => {
    const text = '{"dim":0,"trees":[{"nodes":[{"parent":-1},'
      + '{"parent":0,"visits":3,"reward":0.3333333333333333,"uncertainty":0.1},{"parent":0,"visits":6,"reward":0.33333333333333331,"uncertainty":0.9},'
      + '{"parent":2,"visits":2,"reward":0.5,"uncertainty":0},{"parent":2,"visits":4,"reward":5e-1,"uncertainty":2}]}]}';
    const forest = JSON.parse(text) as SpecForest;
    const lib = libraryPlanV3(text, 'json', params(), 'v4');
    const ref = referencePlanV4(forest, params());
    expect(gatedPairs(forest.trees[0]).length).toBe(2);
    expect(ref.scores[0].intensity.filter((x) => x > 0)).toEqual([]);
    expect(branches(ref.plan.trees[0])).toEqual([[0, 16]]);
    expect(compareV3(lib, forest, params(), ref).problems).toEqual([]);
  });

  it('an unvisited sibling keeps its uncertainty gap against agreeing visited ones: the fork stays contested, the unvisited child is kept', () => {
    const forest = { dim: 0, trees: [{ nodes: [
      { parent: -1 }, { parent: 0, visits: 1, reward: 0, uncertainty: 0.1 }, { parent: 0, visits: 1, reward: 0, uncertainty: 0.3 }, { parent: 0, uncertainty: 0.5 },
    ] }] };
    const { lib, ref, problems } = both(forest, params());
    const v3 = referencePlanV3(forest, params());
    expect(gatedPairs(forest.trees[0])).toEqual([{ parent: 0, i: 1, j: 2 }]);
    // the gated pair responds 0; the pairs with node 3 keep Δu: I = (c13 + c23)/3 < v3's I
    expect(ref.scores[0].intensity[0]).toBeGreaterThan(0);
    expect(ref.scores[0].intensity[0]).toBeLessThan(v3.scores[0].intensity[0]);
    expect(ref.trees[0].contested[0]).toBe(true);
    expect(ref.plan.trees[0].pruned).not.toContain(3);
    expect(problems).toEqual([]);
    expect(lib.trees[0].groups?.[0].intensity).toBeGreaterThan(0);
  });

  it('a hard prompt whose rollouts all failed is never spread, whatever the uncertainties (a deep tree of failures, global budget)', () => {
    const nodes: SpecNode[] = [{ parent: -1, visits: 6, reward: 0 }];
    for (let v = 1; v < 30; v++) nodes.push({ parent: Math.floor((v - 1) / 3), visits: 1 + (v % 3), reward: 0, uncertainty: (v * 0.37) % 2, embedding: undefined });
    const forest: SpecForest = { dim: 0, trees: [{ id: 'hard', nodes }, { id: 'easy', nodes: ONE_SUCCESS.map(({ embedding: _e, ...v }) => v) }] };
    const p = params({ budget: { kind: 'global', total: 40, minPerTree: 1 } });
    const { lib, ref, problems } = both(forest, p);
    expect(ref.scores[0].intensity.every((x) => x === 0)).toBe(true);
    expect(branches(ref.plan.trees[0]).map(([v]) => v)).toEqual([0]);
    expect(referencePlanV3(forest, p).plan.trees[0].allocations.length).toBeGreaterThan(1); // v3 spread it
    expect(problems).toEqual([]);
    expect(branches(lib.trees[0]).map(([v]) => v)).toEqual([0]);
  });

  it('KNOWN: no gated pair, yet v3 and v4 plans differ: an exact largest-remainder tie (x_1 = x_2) that v3 gives to the larger index', () => {
    // Root → node 1 → {2: success, 3: failure, 4: unvisited}, η = 0, B = 2. w_2 = w_3 (symmetric pair),
    // ν = (·, 1, 1, 0, 1): node 1 keeps what stays, P·w_3/W, and node 2 receives P·w_2/W, the same
    // number. The document: ties to the smaller index, so root 1, node 1: 1 — v4's plan. The
    // library's v3 (linear claims) gives node 2 the unit: allowed between implementations
    // ("Precision, ties and refusals"), but not "v4's plan is v3's" where the gate changes no score,
    // nor "this implementation follows it exactly".
    const forest: SpecForest = { dim: 0, trees: [{ nodes: [
      { parent: -1 }, { parent: 0 }, { parent: 1, visits: 1, reward: 1 }, { parent: 1, visits: 1, reward: 0 }, { parent: 1 },
    ] }] };
    const p = params({ forkKeep: 0, budget: perTree(2) });
    const { lib, ref, problems } = both(forest, p);
    expect(gatedPairs(forest.trees[0])).toEqual([]);
    expect(ref.trees[0].mass[1]).toBe(ref.trees[0].mass[2]);
    expect(branches(ref.plan.trees[0])).toEqual([[0, 1], [1, 1]]);
    expect(branches(lib.trees[0])).toEqual([[0, 1], [1, 1]]);
    expect(problems).toEqual([]);
    const v3 = libraryPlanV3(JSON.stringify(forest), 'json', p, 'v3');
    expect(branches(v3.trees[0])).toEqual([[0, 1], [2, 1]]); // KNOWN: the tie the other way
    expect(compareV3(v3, forest, p, referencePlanV3(forest, p)).problems).toEqual([]); // within §6's ties
  });

  it("v3's scaled-form hand cases hold under v4 too: a terminal root with κ = 5·10⁻³²⁴ (2, 5), κ = 0 on 360 eight-wide forks (root 16)", () => {
    // Children unvisited: the gate never applies, so v4's plan is v3's (checked by hand: w = (0.33925, 0.66075), x = 7·w).
    const subnormal: SpecForest = { dim: 0, trees: [{ nodes: [{ parent: -1, terminal: true }, { parent: 0 }, { parent: 0, uncertainty: 0.1 }] }] };
    const a = both(subnormal, params({ contestGain: 5e-324, budget: perTree(7) }));
    expect(a.ref.trees[0].fallback).toBe(false);
    expectPrinted(a.ref.scores[0].weight.slice(1), [0.33925, 0.66075]);
    expect(branches(a.ref.plan.trees[0])).toEqual([[1, 2], [2, 5]]);
    expect(a.problems).toEqual([]);

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
    const chain: SpecForest = { dim: 2, trees: [{ nodes }] };
    const b = both(chain, params({ tau: 0.01, contestGain: 0 }));
    expect(Math.max(...b.ref.trees[0].lnPsi)).toBeGreaterThan(745);
    expect(branches(b.ref.plan.trees[0])).toEqual([[0, 16]]);
    expect(b.problems).toEqual([]);
  });
});

// ------------------------------------------------------------------ random forests

const totals: TiesFollowed & { forests: number; trees: number; cliForests: number; sameAsV3: number; v3DiffersAtTie: number } = {
  forests: 0, trees: 0, cliForests: 0, sameAsV3: 0, v3DiffersAtTie: 0, budget: 0, prune: 0, rounding: 0, depth: 0,
};
const holder = referenceHolder('v4', referencePlanV4, totals);
const { knownCounts, cases: seenCases, refs: seenV4 } = holder;
const holdToReference = holder.hold;

describe('the library conforms to the independent v4 reference on random forests', () => {
  it(`agrees on ${RUNS} random forests in process (public API; gate-aimed forests, both budget modes, JSON and JSON Lines, deep chains)`, () => {
    fc.assert(fc.property(v4CaseArb, (c) => {
      const text = forestText(c.forest, c.format);
      const got = libraryPlanV3(text, c.format, c.params, 'v4');
      holdToReference(c, text, got, `libraryPlanV3(${c.format}, ${JSON.stringify(c.params)}, 'v4')`);
      // "Where the gate changes no score, v4's plan is v3's": for a forest with no gated pair the
      // library's two plans must be the same but for the rule's name (a forest, not a tree: in
      // global mode another tree's gate moves every tree's budget).
      // Equal but at a documented tie: the library's v3 computes its claims linearly where they
      // are exact and v4 in logs, so an exact tie can fall either way (pinned by a hand case above).
      if (c.forest.trees.every((t) => gatedPairs(t).length === 0)) {
        const v3 = libraryPlanV3(text, c.format, c.params, 'v3');
        const relabelled: V3Plan = { ...v3, params: { ...v3.params, rule: 'v4' } };
        if (JSON.stringify(relabelled) === JSON.stringify(got)) totals.sameAsV3++;
        else {
          const forest = readBack(text, c.format, c.forest.dim);
          const ref = referencePlanV4(forest, c.params);
          const skips = knownSkips(knownDisagreements(forest, c.params, ref), c.params, forest.trees.length);
          expect(compareV3(relabelled, forest, c.params, ref, skips).problems).toEqual([]);
          totals.v3DiffersAtTie++;
        }
      }
    }), { numRuns: RUNS, seed: SEED });
    console.log(`conformance-v4 (API): ${totals.forests} forests, ${totals.trees} trees, ${totals.sameAsV3} without a gated pair planned as v3 and ${totals.v3DiffersAtTie} planned as v3 but at a tie; ties followed ${JSON.stringify({ budget: totals.budget, prune: totals.prune, rounding: totals.rounding, depth: totals.depth })}; trees on known disagreements ${JSON.stringify(knownCounts)}`);
    expect(totals.forests).toBe(RUNS);
  }, 300_000);

  it(`agrees through the CLI on ${CLI_RUNS} more (--rule v4 and --rule=v4, explicit defaults, --widen ignored)`, () => {
    const before = totals.forests;
    fc.assert(fc.property(v4CaseArb, (c) => {
      const { plan, text, args } = cli.plan(c.forest, v4Flags(c.params, { explicit: c.explicit, rule: c.rule, widen: c.widen }), c.format);
      holdToReference(c, text, plan, `trace-alloc ${args.join(' ')}`);
    }), { numRuns: CLI_RUNS, seed: SEED + 1 });
    totals.cliForests = totals.forests - before;
    expect(totals.cliForests).toBe(CLI_RUNS);
  }, 300_000);

  it('the forests compared reach every regime v4 decides in, the gate\'s included', () => {
    // with the default seed and runs each regime is met at least 3 times; other draws only print the counts
    expect(seenCases.length).toBe(RUNS + CLI_RUNS);
    const seen = regimesOfV4(seenCases, seenV4);
    console.log(`conformance-v4 coverage over ${seenCases.length} forests: ${JSON.stringify(seen)}`);
    if (SEED !== DEFAULT_SEED || RUNS < DEFAULT_RUNS) return; // the floors are a property of the default draw
    const thin = Object.entries(seen).filter(([, n]) => n < 3).map(([k, n]) => `${k}: ${n}`);
    expect(thin).toEqual([]);
  });
});
