/**
 * An independent float64 implementation of TRACE v4 (docs/ALGORITHM.md, "v4: v3's allocation on
 * gated scores"), written from that document alone: no code shared with or read from src/.
 *
 * The document defines v4 as two pieces, and so does this file:
 *  - its scores are v3's with the uncertainty gate ("Scoring"): a pair whose siblings were both
 *    visited and have the same float64 reward has Δu = 0 — v3-scores.ts with `rule = 'v4'`;
 *  - its allocation is v3's, step for step (early stop, fresh share, ν, emission, keep and pass,
 *    regions, claims in scaled form with M over the parts claimed, whole numbers, depth, and the
 *    global split with v3's S_t and q0 = 1), run on those scores — v3.ts's `contestFlowPlan`.
 * It reads the settings v3 reads, with v3's defaults (the settings table names v4 beside v3 in
 * every row v3 has, with the same default).
 */
import type { SpecForest, SpecNode, SpecTree } from './spec.js';
import { gated, siblingGroups, uncertaintyOf } from './v3-scores.js';
import { contestFlowPlan, V3_DEFAULTS, type V3Params, type V3Result } from './v3.js';

/** v4's settings and defaults are v3's (ALGORITHM.md "Settings"). */
export const V4_DEFAULTS: V3Params = V3_DEFAULTS;

/** The v4 plan of a forest, with the reference's own view of every tree (scores, ψ, ν, claims, ties). */
export function referencePlanV4(forest: SpecForest, p: V3Params): V3Result {
  return contestFlowPlan(forest, p, 'v4');
}

/** A sibling pair whose uncertainty gap the gate closes: both visited, the same reward, Δu ≠ 0. */
export interface GatedPair {
  parent: number;
  i: number;
  j: number;
}

/**
 * The pairs of a tree where v4's scores depart from v3's: gated, with an uncertainty gap to close.
 * (A gated pair with equal uncertainties has Δu = 0 under both rules.) Where there is none, the
 * document says v4's plan is v3's.
 */
export function gatedPairs(tree: SpecTree): GatedPair[] {
  const out: GatedPair[] = [];
  const gapOf = (a: SpecNode, b: SpecNode) => Math.abs(uncertaintyOf(a) - uncertaintyOf(b));
  siblingGroups(tree).forEach((kids, parent) => {
    for (let x = 0; x < kids.length; x++) {
      for (let y = x + 1; y < kids.length; y++) {
        const [a, b] = [tree.nodes[kids[x]], tree.nodes[kids[y]]];
        if (gated(a, b, 'v4') && gapOf(a, b) > 0) out.push({ parent, i: kids[x], j: kids[y] });
      }
    }
  });
  return out;
}
