import type { PackedForest } from '../forest/packed.js';
import type { Scores } from '../score/types.js';
import type { Gains } from './gain.js';

/** J(a, b) = Σ w_i·y_i and its exact gradient in log space (docs/ALGORITHM.md §3). */
export interface ObjectiveGradient {
  /** J: the expected gain of the allocation. */
  objective: number;
  /** ∂J/∂a with a = ln α: Σ w_i·y_i·gA_i. */
  dA: number;
  /** ∂J/∂b with b = ln τ: Σ w_i·y_i·gB_i. */
  dB: number;
  /** How many children had a gain (0 means the step carries no signal). */
  count: number;
}

/**
 * The objective and its gradient for scores computed on `forest` and gains observed after the
 * rollouts those scores placed. Only children with a gain contribute.
 */
export function objectiveGradient(forest: PackedForest, scores: Scores, gains: Gains): ObjectiveGradient {
  const n = forest.nodeCount;
  if (scores.weight.length !== n || gains.value.length !== n || gains.has.length !== n) {
    throw new RangeError(`scores (${scores.weight.length} rows) and gains (${gains.value.length} rows) must both match the forest's ${n} nodes`);
  }
  const { weight, gradAlpha, gradTau } = scores;
  let objective = 0, dA = 0, dB = 0, count = 0;
  for (let row = 0; row < n; row++) {
    if (!gains.has[row] || forest.parentRow[row] < 0) continue;
    const wy = weight[row] * gains.value[row];
    objective += wy;
    dA += wy * gradAlpha[row];
    dB += wy * gradTau[row];
    count++;
  }
  return { objective, dA, dB, count };
}
