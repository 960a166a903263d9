import { contestFlowV3 } from './contest-flow.js';
import type { AllocationRule, ForestRows, RuleSettings } from './rule.js';

/**
 * Rule v3, the default (docs/ALGORITHM.md, "v3: a fresh share, and forks that earn their budget
 * by contest"): the root claims a fresh share, contested forks emit κ·ψ·I, keep η of it and
 * pass the rest down to the kept children that have shown success; its early stop never prunes
 * a child no finished rollout went through, and its S_t is the contest of the root's own fork.
 */
export const v3: AllocationRule = {
  name: 'v3',
  defaults: { contestGain: 4, forkKeep: 0.25 },
  /** With Q_t = q0 + I_root ∈ [1, 2), a tree whose fresh rollouts disagree gets at most twice the share of one whose rollouts agree. */
  treeFloor: { default: 1, fixed: false },
  earlyStop: splitSettledBar,
  treeSignal: rootForkIntensity,
  mass: contestFlowV3,
};

/**
 * Rule v3's kept/pruned split (docs/ALGORITHM.md, "Early stop") for the groups headed by rows
 * [from, to): like v1's and v2's, except that a child no finished rollout went through yet is
 * never pruned and does not set the bar. Its weight rests on an uncertainty gap alone (an
 * unvisited reward is not evidence), so v2 would often prune a just-added branch before it
 * could show anything. With no live visited child, every live child is kept.
 */
export function splitSettledBar(rows: ForestRows, from: number, to: number, pruneRatio: number): void {
  const { live, visits, childStart, childCount, child, weight, kept, pruned, keptWeight, keptCount } = rows;
  for (let v = from; v < to; v++) {
    const k = childCount[v];
    if (k === 0) continue;
    const start = childStart[v], end = start + k;
    let wStar = -Infinity;
    for (let q = start; q < end; q++) {
      const c = child[q];
      if (live[c] && visits[c] > 0 && weight[c] > wStar) wStar = weight[c];
    }
    const threshold = wStar === -Infinity ? -Infinity : pruneRatio * wStar;
    let sum = 0, count = 0;
    for (let q = start; q < end; q++) {
      const c = child[q];
      if (!live[c]) { kept[c] = 0; pruned[c] = 0; continue; }
      if (visits[c] === 0 || weight[c] >= threshold) { kept[c] = 1; pruned[c] = 0; sum += weight[c]; count++; } else { kept[c] = 0; pruned[c] = 1; }
    }
    keptWeight[v] = sum;
    keptCount[v] = count;
  }
}

/** S_t of v3: the intensity of the root's group, 0 when the root has fewer than two children — how much its fresh rollouts disagree. */
export function rootForkIntensity(rows: ForestRows, lo: number): number {
  return rows.childCount[lo] >= 2 ? rows.intensity[lo] : 0;
}
