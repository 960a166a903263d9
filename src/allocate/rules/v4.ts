import { contestFlow } from './contest-flow.js';
import type { AllocationRule } from './rule.js';
import { rootForkIntensity, splitSettledBar } from './v3.js';

/**
 * Rule v4 (docs/ALGORITHM.md, "v4"): v3's allocation on v4's scores. Scoring gates the
 * uncertainty gap: between two siblings whose finished rollouts gave equal rewards it is not
 * contest (src/score/types.ts `uncertaintyGateVisits`), so a fork whose siblings all failed, or all
 * succeeded, claims nothing however their uncertainties differ, and the budget stays with fresh
 * rollouts. The early stop, the per-tree signal and the fresh share and contest flow are v3's.
 */
export const v4: AllocationRule = {
  name: 'v4',
  defaults: { contestGain: 4, forkKeep: 0.25 },
  treeFloor: { default: 1, fixed: false },
  earlyStop: splitSettledBar,
  treeSignal: rootForkIntensity,
  mass: contestFlow,
};
