import type { AllocationRule, ForestRows, RuleSettings } from './rule.js';
import { meanForkIntensity, splitByWeightBar } from './v1.js';

/**
 * Rule v2 (docs/ALGORITHM.md, "v2: claims"), kept exactly for reproducibility: every open row
 * reached through kept children claims ψ_v·a_v, and the tree's budget is split in proportion.
 * Its early stop and its S_t are v1's.
 */
export const v2: AllocationRule = {
  name: 'v2',
  defaults: { contestGain: 4 },
  treeFloor: { default: 0.25, fixed: false },
  earlyStop: splitByWeightBar,
  treeSignal: meanForkIntensity,
  mass: flowClaimsV2,
};

/**
 * The claim a_v of a row under rule v2: an open row claims 1, plus κ·I when it already heads a
 * fork of two or more children (a contested fork asks for more new siblings); a terminal row
 * claims nothing — no rollout can start there.
 */
export function claimOf(open: boolean, childCount: number, intensity: number, contestGain: number): number {
  if (!open) return 0;
  return childCount >= 2 ? 1 + contestGain * intensity : 1;
}

/** Per-thread working memory of one tree (sized to the largest tree seen). */
let reach = new Uint8Array(0);
let logPsi = new Float64Array(0);

/**
 * v2's mass for the tree at rows [lo, hi): x_v = B·π_v / Σ_u π_u with π_v = ψ_v·a_v on every
 * row reached from the root through kept children, 0 elsewhere. Returns false when the root is
 * not live or no row claims anything (the mass is then 0). When the direct sum of claims is not
 * finite (ψ overflowed on a path of hundreds of wide forks), the claims are redone in the scaled
 * form exp(ln ψ − M)·a (docs/ALGORITHM.md, "v2: claims"): the same x as exact arithmetic,
 * where the direct form lost the tree's whole budget.
 */
function flowClaimsV2(rows: ForestRows, lo: number, hi: number, budget: number, settings: RuleSettings): boolean {
  const { live, kept, priority, intensity, childCount, terminal, parentRow, mass } = rows;
  const contestGain = settings.contestGain;
  if (reach.length < hi - lo) reach = new Uint8Array(Math.max(hi - lo, reach.length * 2));
  let total = 0;
  for (let v = lo; v < hi; v++) {
    const p = parentRow[v];
    const reached = p < 0 ? live[v] : reach[p - lo] & kept[v];
    reach[v - lo] = reached;
    if (!reached) { mass[v] = 0; continue; }
    const claim = priority[v] * claimOf(terminal[v] === 0, childCount[v], intensity[v], contestGain);
    mass[v] = claim;
    total += claim;
  }
  if (!Number.isFinite(total)) total = scaledClaims(rows, lo, hi, contestGain);
  if (live[lo] !== 1 || !(total > 0)) { mass.fill(0, lo, hi); return false; }
  const scale = budget / total;
  for (let v = lo; v < hi; v++) mass[v] = scale * mass[v];
  return true;
}

/** v2's claims of rows [lo, hi) as exp(ln ψ − M)·a, M the largest ln ψ of a claiming row; `reach` is already set. Returns their sum. */
function scaledClaims(rows: ForestRows, lo: number, hi: number, contestGain: number): number {
  const { terminal, childCount, intensity, mass } = rows;
  const { parentRow, weight } = rows;
  if (logPsi.length < hi - lo) logPsi = new Float64Array(Math.max(hi - lo, logPsi.length * 2));
  // ln ψ (ln ψ_root = 0, ln ψ_c = ln ψ_p + ln(k_p·w_c)): a weight that underflowed to 0 gives −∞ (ψ = 0).
  let top = -Infinity;
  for (let v = lo; v < hi; v++) {
    const p = parentRow[v];
    logPsi[v - lo] = p < 0 ? 0 : logPsi[p - lo] + Math.log(childCount[p] * weight[v]);
    if (reach[v - lo] && claimOf(terminal[v] === 0, childCount[v], intensity[v], contestGain) > 0 && logPsi[v - lo] > top) top = logPsi[v - lo];
  }
  let total = 0;
  for (let v = lo; v < hi; v++) {
    mass[v] = reach[v - lo] ? Math.exp(logPsi[v - lo] - top) * claimOf(terminal[v] === 0, childCount[v], intensity[v], contestGain) : 0;
    total += mass[v];
  }
  return total;
}
