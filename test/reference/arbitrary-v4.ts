/**
 * fast-check forests and settings for rule v4: v3's (arbitrary-v3.ts: contested forks, chains,
 * terminal heads, extreme magnitudes, deep paths, both budget modes) plus forests aimed at the
 * uncertainty gate (docs/ALGORITHM.md, "Scoring"): groups whose visited siblings share a reward
 * exactly while their uncertainties differ, mixed groups where a success sits among such
 * failures, unvisited siblings beside them, rewards that are the same float64 from different
 * visit counts (1/3 from 3 or 6 visits, −0 beside 0), rewards one rounding apart (0.1 + 0.2 and
 * 0.3: not the same number, so not gated), and a subnormal κ now and then.
 */
import fc from 'fast-check';
import { mixedCaseArb, deepCaseArb, type V3Case } from './arbitrary-v3.js';
import type { SpecNode } from './spec.js';

/** Rewards the gate must tell apart exactly: −0 = 0, 1/3 whatever the visits, 0.1 + 0.2 ≠ 0.3. */
const GATE_REWARDS = [0, 1, 0.5, 1 / 3, -0, 0.1 + 0.2, 0.3, -2];
const GATE_VISITS = [0, 1, 1, 2, 3, 6];
const GATE_UNCERTAINTY = [0, 0.1, 0.3, 1, 2.5, 0.1, 1e-300, 1.7e308];
/** κ below the smallest normal float64 (κ·ψ·I then underflows unless carried in logs). */
export const SUBNORMAL_KAPPA = [5e-324, 1e-310, 2e-308];

interface GatePick {
  /** Take the tree's shared reward (most nodes do: groups that agree). */
  shared: boolean;
  reward: number;
  visits: number;
  uncertainty: number;
}

const gatePick: fc.Arbitrary<GatePick> = fc.record({
  shared: fc.oneof({ arbitrary: fc.constant(true), weight: 3 }, { arbitrary: fc.constant(false), weight: 2 }),
  reward: fc.nat(GATE_REWARDS.length - 1),
  visits: fc.nat(GATE_VISITS.length - 1),
  uncertainty: fc.nat(GATE_UNCERTAINTY.length - 1),
}).map((x) => ({ ...x, reward: GATE_REWARDS[x.reward], visits: GATE_VISITS[x.visits], uncertainty: GATE_UNCERTAINTY[x.uncertainty] }));

/** A node with v3's structure, embedding and terminal flag, and the gate's reward, visits and uncertainty. */
function gateNode(node: SpecNode, pick: GatePick, shared: number): SpecNode {
  return { ...node, reward: pick.shared ? shared : pick.reward, visits: pick.visits, uncertainty: pick.uncertainty };
}

/** v3's ordinary forests with every node's outcome redrawn for the gate; κ subnormal in one case of six. */
export const gateCaseArb: fc.Arbitrary<V3Case> = mixedCaseArb.chain((c) => {
  const sizes = c.forest.trees.map((t) => t.nodes.length);
  return fc.record({
    picks: fc.tuple(...sizes.map((n) => fc.array(gatePick, { minLength: n, maxLength: n }))),
    shared: fc.array(fc.constantFrom(0, 0, 1, 1 / 3, 0.5, -0), { minLength: sizes.length, maxLength: sizes.length }),
    kappa: fc.oneof({ arbitrary: fc.constant(undefined), weight: 5 }, { arbitrary: fc.constantFrom(...SUBNORMAL_KAPPA), weight: 1 }),
  }).map(({ picks, shared, kappa }): V3Case => ({
    ...c,
    forest: { ...c.forest, trees: c.forest.trees.map((t, ti) => ({ ...t, nodes: t.nodes.map((v, i) => gateNode(v, picks[ti][i], shared[ti])) })) },
    params: kappa === undefined ? c.params : { ...c.params, contestGain: kappa },
  }));
});

/** The v4 conformance mix: v3's ordinary and deep forests and the gate's, 3 : 1 : 3. */
export const v4CaseArb: fc.Arbitrary<V3Case> = fc.oneof(
  { arbitrary: mixedCaseArb, weight: 3 },
  { arbitrary: deepCaseArb, weight: 1 },
  { arbitrary: gateCaseArb, weight: 3 },
);
