import type { PackedForest } from '../forest/packed.js';
import type { RealArray } from '../score/types.js';
import type { GroupSplit } from './live.js';

/**
 * The claim of a row under rule v2 (docs/ALGORITHM.md, "Allocation, v2"): an open row claims
 * 1, plus κ·I when it already heads a fork of two or more children (a contested fork asks for
 * more new siblings); a terminal row claims nothing — no rollout can start there.
 */
export function claimOf(open: boolean, childCount: number, intensity: number, contestGain: number): number {
  if (!open) return 0;
  return childCount >= 2 ? 1 + contestGain * intensity : 1;
}

/**
 * Rule v2's mass for the rows of tree t: x_v = B·π_v / Σ_u π_u with π_v = ψ_v·a_v on every row
 * reached from the root through kept children, 0 elsewhere. `priority` must already hold ψ
 * (root 1, ψ_c = ψ_p·k_p·w_c); `reach` is scratch. Returns false when no row claims anything
 * (the tree cannot place its budget), leaving the rows' mass at 0. When the direct sum of claims
 * is not finite (ψ overflowed on a path of hundreds of wide forks), the claims are redone in the
 * scaled form exp(ln ψ − M)·a from `logPsi()` (docs/ALGORITHM.md, "v2: claims"): the same x as
 * exact arithmetic, where the direct form lost the tree's whole budget.
 */
export function flowClaimsV2(
  forest: PackedForest,
  t: number,
  budget: number,
  split: GroupSplit,
  live: Uint8Array,
  intensity: RealArray,
  contestGain: number,
  priority: Float64Array,
  reach: Uint8Array,
  mass: Float64Array,
  logPsi: () => Float64Array,
): boolean {
  const { treeOffset, terminal, parentRow, childGroup, groupOffset } = forest;
  const lo = treeOffset[t], hi = treeOffset[t + 1];
  let total = 0;
  for (let v = lo; v < hi; v++) {
    const p = parentRow[v];
    reach[v] = p < 0 ? live[v] : reach[p] & split.kept[v];
    if (!reach[v]) { mass[v] = 0; continue; }
    const g = childGroup[v];
    const k = g < 0 ? 0 : groupOffset[g + 1] - groupOffset[g];
    const claim = priority[v] * claimOf(terminal[v] === 0, k, g < 0 ? 0 : intensity[g], contestGain);
    mass[v] = claim;
    total += claim;
  }
  if (!Number.isFinite(total)) total = scaledClaims(forest, lo, hi, intensity, contestGain, logPsi(), reach, mass);
  if (!(total > 0)) { for (let v = lo; v < hi; v++) mass[v] = 0; return false; }
  const scale = budget / total;
  for (let v = lo; v < hi; v++) mass[v] = scale * mass[v];
  return true;
}

/** v2's claims of rows [lo, hi) as exp(ln ψ − M)·a, M the largest ln ψ of a claiming row; `reach` is already set. Returns their sum. */
function scaledClaims(
  forest: PackedForest,
  lo: number,
  hi: number,
  intensity: RealArray,
  contestGain: number,
  logPsi: Float64Array,
  reach: Uint8Array,
  mass: Float64Array,
): number {
  const { terminal, childGroup, groupOffset } = forest;
  const claimAt = (v: number): number => {
    const g = childGroup[v];
    const k = g < 0 ? 0 : groupOffset[g + 1] - groupOffset[g];
    return claimOf(terminal[v] === 0, k, g < 0 ? 0 : intensity[g], contestGain);
  };
  let top = -Infinity;
  for (let v = lo; v < hi; v++) if (reach[v] && claimAt(v) > 0 && logPsi[v] > top) top = logPsi[v];
  let total = 0;
  for (let v = lo; v < hi; v++) {
    mass[v] = reach[v] ? Math.exp(logPsi[v] - top) * claimAt(v) : 0;
    total += mass[v];
  }
  return total;
}
