/**
 * An independent float64 implementation of TRACE v5, the default rule (docs/ALGORITHM.md, "v5 (the
 * default): v3's allocation on scores gated after repeated evidence"), written from that document
 * alone: no code shared with or read from src/.
 *
 * The document defines v5 as v4 was defined, in two pieces, and so does this file:
 *  - its scores are v4's with the gate closed only between siblings that each have at least two
 *    finished rollouts ("Scoring", "The gate after repeated evidence (v5)"): a pair has Δu = 0 when
 *    n_i ≥ 2, n_j ≥ 2 and r_i = r_j (float64 equality, −0 = +0) — v3-scores.ts with `rule = 'v5'`;
 *    σ and every other quantity are v4's (so v3's);
 *  - its allocation is v3's and v4's, step for step (early stop, fresh share, ν, emission, keep and
 *    pass, regions, claims in scaled form, whole numbers, depth, and the global split with S_t the
 *    root group's I as v5 scores it and q0 = 1), run on those scores — v3.ts's `contestFlowPlan`.
 * Its settings and defaults are v4's ("Its settings and their defaults are v4's (κ = 4, η = 0.25,
 * q0 = 1)"), which are v3's.
 *
 * The pair predicates below restate the document's conditions in its own words, separately from
 * the gate in v3-scores.ts, so that the relations "v5 is v3" and "v5 is v4" are checked against
 * the document's statement and not against the reference's own branch.
 */
import type { SpecForest, SpecNode, SpecTree } from './spec.js';
import { gated, rewardOf, siblingGroups, uncertaintyOf, visitsOf } from './v3-scores.js';
import { contestFlowPlan, V3_DEFAULTS, type V3Params, type V3Result } from './v3.js';
import type { GatedPair } from './v4.js';

export type { GatedPair } from './v4.js';

/** v5's settings and defaults are v4's, which are v3's (ALGORITHM.md "Settings", "v5"). */
export const V5_DEFAULTS: V3Params = V3_DEFAULTS;

/** The v5 plan of a forest, with the reference's own view of every tree (scores, ψ, ν, claims, ties). */
export function referencePlanV5(forest: SpecForest, p: V3Params): V3Result {
  return contestFlowPlan(forest, p, 'v5');
}

/** Every sibling pair (i < j, group order) of a tree that satisfies `keep`. */
function pairsWhere(tree: SpecTree, keep: (a: SpecNode, b: SpecNode) => boolean): GatedPair[] {
  const out: GatedPair[] = [];
  siblingGroups(tree).forEach((kids, parent) => {
    for (let x = 0; x < kids.length; x++) {
      for (let y = x + 1; y < kids.length; y++) {
        if (keep(tree.nodes[kids[x]], tree.nodes[kids[y]])) out.push({ parent, i: kids[x], j: kids[y] });
      }
    }
  });
  return out;
}

const uGap = (a: SpecNode, b: SpecNode) => uncertaintyOf(a) !== uncertaintyOf(b);

/**
 * The pairs of a tree where v5's scores depart from v3's: gated under v5 (the reference's gate),
 * with an uncertainty gap to close. Where a forest has none, v5's plan is v3's.
 */
export function gatedPairsV5(tree: SpecTree): GatedPair[] {
  return pairsWhere(tree, (a, b) => gated(a, b, 'v5') && uGap(a, b));
}

/**
 * The pairs where v5's scores depart from v4's: gated under v4 but not under v5 (equal rewards,
 * both visited, one side with a single finished rollout), with an uncertainty gap.
 */
export function gatedByV4NotV5(tree: SpecTree): GatedPair[] {
  return pairsWhere(tree, (a, b) => gated(a, b, 'v4') && !gated(a, b, 'v5') && uGap(a, b));
}

/**
 * "v5 is v3 on a forest in which no pair of siblings has n_i ≥ 2, n_j ≥ 2 and r_i = r_j with
 * u_i ≠ u_j" — the condition as the document words it, on the whole forest.
 */
export function v5IsV3Condition(forest: SpecForest): boolean {
  return forest.trees.every((tree) => pairsWhere(tree, (a, b) =>
    visitsOf(a) >= 2 && visitsOf(b) >= 2 && rewardOf(a) === rewardOf(b) && uncertaintyOf(a) !== uncertaintyOf(b)).length === 0);
}

/**
 * "v5 is v4 on a forest in which no pair of siblings has r_i = r_j, u_i ≠ u_j, both visited and
 * either n_i = 1 or n_j = 1" — the condition as the document words it, on the whole forest.
 */
export function v5IsV4Condition(forest: SpecForest): boolean {
  return forest.trees.every((tree) => pairsWhere(tree, (a, b) =>
    rewardOf(a) === rewardOf(b) && uncertaintyOf(a) !== uncertaintyOf(b)
    && visitsOf(a) > 0 && visitsOf(b) > 0 && (visitsOf(a) === 1 || visitsOf(b) === 1)).length === 0);
}
