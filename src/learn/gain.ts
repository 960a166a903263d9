import { ForestError } from '../forest/errors.js';
import type { PackedForest } from '../forest/packed.js';

/**
 * Per-row gains y_i (docs/ALGORITHM.md §3). `has[row]` is 1 where the row got a gain; roots and children
 * with too few new rollouts have none and are left out of the objective.
 */
export interface Gains {
  readonly value: Float64Array;
  readonly has: Uint8Array;
}

/** A child needs at least this many new finished rollouts in its subtree to get a gain. */
export const MIN_NEW_ROLLOUTS = 2;

/**
 * The default gain of docs/ALGORITHM.md §3: `y_i = 4·p̂_i(1 − p̂_i)`, the normalized outcome variance of the
 * new rollouts that went into child `i`'s subtree (1 when half of them succeed, 0 when all agree).
 *
 * @param forest the forest that was scored to place the rollouts
 * @param newRollouts per row: finished new rollouts through the row (its subtree), integer ≥ 0
 * @param newRewardSum per row: the sum of those rollouts' rewards, each reward in [0, 1]
 * @throws ForestError naming the tree, node and field of a count or sum out of range
 */
export function outcomeVarianceGains(forest: PackedForest, newRollouts: ArrayLike<number>, newRewardSum: ArrayLike<number>): Gains {
  const n = forest.nodeCount;
  if (newRollouts.length !== n) throw new ForestError({ field: 'newRollouts' }, `has ${newRollouts.length} entries, expected ${n} (one per node)`);
  if (newRewardSum.length !== n) throw new ForestError({ field: 'newRewardSum' }, `has ${newRewardSum.length} entries, expected ${n} (one per node)`);
  const value = new Float64Array(n);
  const has = new Uint8Array(n);
  for (let row = 0; row < n; row++) {
    const count = newRollouts[row];
    const sum = newRewardSum[row];
    const at = (field: string) => {
      const t = forest.nodeTree[row];
      return { tree: t, treeId: forest.treeIds[t], node: row - forest.treeOffset[t], field };
    };
    if (!Number.isInteger(count) || count < 0) throw new ForestError(at('newRollouts'), `must be an integer >= 0, got ${count}`);
    // A tolerance for sums accumulated in floating point; the mean is clamped below.
    if (!Number.isFinite(sum) || sum < -1e-9 || sum > count + 1e-9) {
      throw new ForestError(at('newRewardSum'), `must be in [0, newRollouts = ${count}] (rewards in [0, 1]), got ${sum}`);
    }
    if (forest.parentRow[row] < 0 || count < MIN_NEW_ROLLOUTS) continue;
    const p = Math.min(1, Math.max(0, sum / count));
    value[row] = 4 * p * (1 - p);
    has[row] = 1;
  }
  return { value, has };
}
