import { contestFlow } from './contest-flow.js';
import type { AllocationRule } from './rule.js';
import { rootForkIntensity, splitSettledBar } from './v3.js';

/**
 * Rule v5 (docs/ALGORITHM.md, "v5"): v3's allocation on v5's scores. Scoring gates the
 * uncertainty gap as v4 does, but only once outcome evidence is repeated: between two siblings
 * with equal rewards that each have at least 2 finished rollouts it is not contest
 * (src/score/types.ts `uncertaintyGateVisits`), so a fork whose children have each failed at
 * least twice claims nothing, while a once-failed branch still counts as unsettled. The early
 * stop, the per-tree signal and the fresh share and contest flow are v3's.
 */
export const v5: AllocationRule = {
  name: 'v5',
  defaults: { contestGain: 4, forkKeep: 0.25 },
  treeFloor: { default: 1, fixed: false },
  earlyStop: splitSettledBar,
  treeSignal: rootForkIntensity,
  mass: contestFlow,
};
