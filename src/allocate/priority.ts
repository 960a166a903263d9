import type { PackedForest } from '../forest/packed.js';
import type { RealArray } from '../score/types.js';

/**
 * ln ψ_v for every row: ln ψ_root = 0, ln ψ_c = ln ψ_p + ln(k_p·w_c) (docs/ALGORITHM.md §4,
 * "Path priority"). Kept as a logarithm so that a path of hundreds of wide forks cannot overflow
 * (ψ ≤ k per level) and a branch whose weight underflowed to 0 gets −∞ (ψ = 0), not NaN below.
 */
export function logPriority(forest: PackedForest, weight: RealArray): Float64Array {
  const out = new Float64Array(forest.nodeCount);
  logPriorityRows(forest, weight, 0, forest.nodeCount, out);
  return out;
}

/** `logPriority` for rows [lo, hi), which must be whole trees, into `out`. */
export function logPriorityRows(forest: PackedForest, weight: RealArray, lo: number, hi: number, out: Float64Array): void {
  const { parentRow, childGroup, groupOffset } = forest;
  for (let v = lo; v < hi; v++) {
    const p = parentRow[v];
    if (p < 0) { out[v] = 0; continue; }
    const g = childGroup[p];
    out[v] = out[p] + Math.log((groupOffset[g + 1] - groupOffset[g]) * weight[v]);
  }
}
