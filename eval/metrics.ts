import type { RolloutForest } from './tree.js';

export interface TreeMetrics {
  /** Sibling groups where ≥ 2 children have finished rollouts. */
  scoredGroups: number;
  /** Of those, groups whose children's mean outcomes are not all equal. */
  mixedGroups: number;
  /** Environment steps (= non-root nodes) no finished rollout passed through. */
  deadSteps: number;
  /** Environment steps on nodes whose finished rollouts all got reward 0. */
  zeroSteps: number;
}

export function treeMetrics(f: RolloutForest): TreeMetrics {
  let scoredGroups = 0, mixedGroups = 0, deadSteps = 0, zeroSteps = 0;
  for (let v = 0; v < f.size; v++) {
    if (f.parent[v] >= 0) {
      if (f.visits[v] === 0) deadSteps++;
      else if (f.rewardSum[v] === 0) zeroSteps++;
    }
    const kids = f.children[v];
    if (kids.length < 2) continue;
    let seen = 0, lo = Infinity, hi = -Infinity;
    for (const c of kids) {
      if (f.visits[c] === 0) continue;
      seen++;
      const value = f.rewardSum[c] / f.visits[c];
      lo = Math.min(lo, value); hi = Math.max(hi, value);
    }
    if (seen < 2) continue;
    scoredGroups++;
    if (hi > lo) mixedGroups++;
  }
  return { scoredGroups, mixedGroups, deadSteps, zeroSteps };
}
