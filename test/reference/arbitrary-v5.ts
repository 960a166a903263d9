/**
 * fast-check forests and settings for rule v5 (docs/ALGORITHM.md, "The gate after repeated
 * evidence (v5)"): v3's forests and v4's gate-aimed ones (arbitrary-v3.ts, arbitrary-v4.ts: contested
 * forks, chains, terminal heads, extreme magnitudes, deep paths, both budget modes, −0 beside 0,
 * 1/3 from 3 or 6 visits, 0.1 + 0.2 beside 0.3, a subnormal κ), plus forests aimed at the
 * difference between v4's gate and v5's: most siblings of a tree share one reward (0 or 1 mostly:
 * groups that agree) while their uncertainties differ, and their visits are drawn from
 * {0, 1, 2, 3, …} so that agreeing pairs with a single finished rollout on one side (gated under v4,
 * not under v5) and pairs with at least two on both sides (gated under both) are common, often in
 * one group. A forest's evidence is drawn as a whole now and then — every visit at most 1 (the
 * first round: v5 is v3) or none exactly 1 (v5 is v4) — so that the document's two relations are
 * met with plans that differ between v3 and v4.
 */
import fc from 'fast-check';
import { gateCaseArb, SUBNORMAL_KAPPA } from './arbitrary-v4.js';
import { deepCaseArb, mixedCaseArb, type V3Case } from './arbitrary-v3.js';
import type { SpecNode } from './spec.js';

/** Rewards of a tree's agreeing siblings: failures and successes most, a mean, −0. */
const SHARED_REWARDS = [0, 0, 0, 1, 1, 0.5, 1 / 3, -0];
/** Rewards of the siblings that do not take the shared one. */
const OTHER_REWARDS = [0, 1, 1, 0, 0.5, 1 / 3, -0, 0.1 + 0.2, 0.3, -2];
/** Visits by the tree's evidence: `mixed` has every count the gates tell apart. */
const VISITS = {
  firstRound: [0, 1, 1, 1],
  repeated: [0, 2, 2, 3, 4, 6, 1000],
  mixed: [0, 1, 1, 2, 2, 3, 4, 6],
} as const;
type Evidence = keyof typeof VISITS;
/** Differing uncertainties (0.1 and 0.3 twice: equal ones occur too), and the edges of float64. */
const UNCERTAINTY = [0, 0.1, 0.2, 0.3, 1, 2.5, 0.1, 0.3, 1e-300, 1.7e308];

/** Indices into the tables above (visits: taken modulo the evidence's table). */
interface RepeatPick {
  shared: boolean;
  reward: number;
  visits: number;
  uncertainty: number;
}

const repeatPick: fc.Arbitrary<RepeatPick> = fc.record({
  shared: fc.oneof({ arbitrary: fc.constant(true), weight: 4 }, { arbitrary: fc.constant(false), weight: 1 }),
  reward: fc.nat(OTHER_REWARDS.length - 1),
  visits: fc.nat(1 << 16),
  uncertainty: fc.oneof({ arbitrary: fc.nat(7), weight: 12 }, { arbitrary: fc.constantFrom(8, 9), weight: 1 }),
});

/** A node with v3's structure, embedding and terminal flag, and the drawn reward, visits and uncertainty. */
function repeatNode(node: SpecNode, pick: RepeatPick, shared: number, evidence: Evidence): SpecNode {
  const visits = VISITS[evidence];
  return {
    ...node,
    reward: pick.shared ? shared : OTHER_REWARDS[pick.reward],
    visits: visits[pick.visits % visits.length],
    uncertainty: UNCERTAINTY[pick.uncertainty],
  };
}

const evidenceArb = fc.constantFrom<Evidence>('firstRound', 'repeated', 'mixed', 'mixed');

/**
 * v3's ordinary forests with every node's outcome redrawn for the two gates: one evidence level for
 * the whole forest in two cases of three, one per tree otherwise; κ subnormal in one case of eight.
 */
export const repeatCaseArb: fc.Arbitrary<V3Case> = mixedCaseArb.chain((c) => {
  const sizes = c.forest.trees.map((t) => t.nodes.length);
  const T = sizes.length;
  return fc.record({
    picks: fc.tuple(...sizes.map((n) => fc.array(repeatPick, { minLength: n, maxLength: n }))),
    shared: fc.array(fc.constantFrom(...SHARED_REWARDS), { minLength: T, maxLength: T }),
    evidence: fc.oneof(
      { arbitrary: fc.constantFrom<Evidence>('firstRound', 'repeated', 'mixed').map((e) => new Array<Evidence>(T).fill(e)), weight: 2 },
      { arbitrary: fc.array(evidenceArb, { minLength: T, maxLength: T }), weight: 1 },
    ),
    kappa: fc.oneof({ arbitrary: fc.constant(undefined), weight: 7 }, { arbitrary: fc.constantFrom(...SUBNORMAL_KAPPA), weight: 1 }),
  }).map(({ picks, shared, evidence, kappa }): V3Case => ({
    ...c,
    forest: {
      ...c.forest,
      trees: c.forest.trees.map((t, ti) => ({ ...t, nodes: t.nodes.map((v, i) => repeatNode(v, picks[ti][i], shared[ti], evidence[ti])) })),
    },
    params: kappa === undefined ? c.params : { ...c.params, contestGain: kappa },
  }));
});

/** The v5 conformance mix: v3's ordinary and deep forests, v4's gate forests and v5's, 2 : 1 : 1 : 4. */
export const v5CaseArb: fc.Arbitrary<V3Case> = fc.oneof(
  { arbitrary: mixedCaseArb, weight: 2 },
  { arbitrary: deepCaseArb, weight: 1 },
  { arbitrary: gateCaseArb, weight: 1 },
  { arbitrary: repeatCaseArb, weight: 4 },
);
