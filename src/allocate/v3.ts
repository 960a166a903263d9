import type { PackedForest } from '../forest/packed.js';
import type { RealArray } from '../score/types.js';
import { emptySplit, type GroupSplit } from './live.js';

/**
 * Rule v3's kept/pruned split (docs/ALGORITHM.md, "v3: early stop"): like v2's, except that a
 * child no finished rollout went through yet is never pruned and does not set the bar. Its
 * weight rests on an uncertainty gap alone (an unvisited reward is not evidence), so v2 would
 * often prune a just-added branch before it could show anything.
 */
export function splitGroupsV3(forest: PackedForest, weight: RealArray, live: Uint8Array, pruneRatio: number): GroupSplit {
  const split = emptySplit(forest);
  splitGroupRangeV3(forest, weight, live, pruneRatio, 0, forest.groupCount, split);
  return split;
}

/** `splitGroupsV3` for groups [g0, g1) into `out` (zeroed there). */
export function splitGroupRangeV3(forest: PackedForest, weight: RealArray, live: Uint8Array, pruneRatio: number, g0: number, g1: number, out: GroupSplit): void {
  const { groupOffset, groupChild, visits } = forest;
  const { kept, pruned, keptWeight, keptCount } = out;
  for (let g = g0; g < g1; g++) {
    const start = groupOffset[g], end = groupOffset[g + 1];
    let wStar = -Infinity;
    for (let s = start; s < end; s++) {
      const c = groupChild[s];
      if (live[c] && visits[c] > 0 && weight[c] > wStar) wStar = weight[c];
    }
    const threshold = wStar === -Infinity ? -Infinity : pruneRatio * wStar;
    let sum = 0, count = 0;
    for (let s = start; s < end; s++) {
      const c = groupChild[s];
      if (!live[c]) continue;
      if (visits[c] === 0 || weight[c] >= threshold) { kept[c] = 1; sum += weight[c]; count++; } else pruned[c] = 1;
    }
    keptWeight[g] = sum;
    keptCount[g] = count;
  }
}

/**
 * The rows of one tree as `flowContestV3` reads them, in any layout whose parents come before
 * their children (a `PackedForest`, or a live forest's store). All arrays are indexed by row.
 */
export interface ContestFlowRows {
  /** Row of each row's parent; −1 for the root. */
  readonly parentRow: Int32Array;
  /** Children of row v: `child[childStart[v] .. childStart[v] + childCount[v])`, in node order. */
  readonly childStart: Int32Array;
  readonly childCount: Int32Array;
  readonly child: Int32Array;
  readonly terminal: Uint8Array;
  readonly visits: Float64Array;
  readonly reward: Float64Array;
  /** w of each row (1 for a root). */
  readonly weight: RealArray;
  /** I of the group each row heads (read only for rows with two or more children). */
  readonly intensity: RealArray;
}

/** `ContestFlowRows` over a packed forest: its group index seen per row (O(nodes) arrays). */
export function contestFlowRows(forest: PackedForest, weight: RealArray, intensity: RealArray): ContestFlowRows {
  const n = forest.nodeCount;
  const rows = contestFlowRowArrays(forest, weight, new Int32Array(n), new Int32Array(n), new Float64Array(n));
  fillContestFlowRows(forest, intensity, 0, n, rows);
  return rows;
}

/** `ContestFlowRows` over a packed forest whose per-row arrays (`childStart`, `childCount`, `intensity`, each nodeCount long) are filled later by `fillContestFlowRows`. */
export function contestFlowRowArrays(forest: PackedForest, weight: RealArray, childStart: Int32Array, childCount: Int32Array, rowIntensity: Float64Array): ContestFlowRows {
  return {
    parentRow: forest.parentRow, childStart, childCount, child: forest.groupChild,
    terminal: forest.terminal, visits: forest.visits, reward: forest.reward, weight, intensity: rowIntensity,
  };
}

/** Fills rows [lo, hi) of `contestFlowRowArrays`' per-row arrays from the forest's groups. */
export function fillContestFlowRows(forest: PackedForest, intensity: RealArray, lo: number, hi: number, rows: ContestFlowRows): void {
  const { childGroup, groupOffset } = forest;
  const childStart = rows.childStart, childCount = rows.childCount, rowIntensity = rows.intensity as Float64Array;
  for (let v = lo; v < hi; v++) {
    const g = childGroup[v];
    if (g < 0) { childStart[v] = 0; childCount[v] = 0; rowIntensity[v] = 0; continue; }
    childStart[v] = groupOffset[g];
    childCount[v] = groupOffset[g + 1] - groupOffset[g];
    rowIntensity[v] = intensity[g];
  }
}

/** Reusable per-tree working memory of `flowContestV3` (sized to the largest tree seen). */
export class ContestFlowScratch {
  reach = new Uint8Array(0);
  logPsi = new Float64Array(0);
  viability = new Float64Array(0);
  region = new Int32Array(0);
  regionClaim = new Float64Array(0);
  regionOpen = new Float64Array(0);
  claim = new Float64Array(0);
  ensure(n: number): void {
    if (this.reach.length >= n) return;
    const size = Math.max(n, this.reach.length * 2);
    this.reach = new Uint8Array(size);
    this.logPsi = new Float64Array(size);
    this.viability = new Float64Array(size);
    this.region = new Int32Array(size);
    this.regionClaim = new Float64Array(size);
    this.regionOpen = new Float64Array(size);
    this.claim = new Float64Array(size);
  }
}

export interface ContestFlowSettings {
  /** κ ≥ 0: a contested fork emits κ·ψ_p·I_p. */
  contestGain: number;
  /** η ∈ [0, 1]: the part of an open head's emission it keeps (new siblings at the fork itself). */
  forkKeep: number;
}

/**
 * Rule v3's mass for the tree at rows [lo, hi) (docs/ALGORITHM.md, "Allocation, v3"). The root
 * claims a base share for fresh rollouts; every contested fork (a reached head of k ≥ 2 children
 * with intensity I > 0) emits κ·ψ·I, keeps η of it for new siblings at the fork and passes the
 * rest to its kept children in proportion to w·ν (contrast weight × the success the child has
 * shown), the part no child takes staying at the fork; what a child receives is spread evenly
 * over the open steps of its chain. With no contest anywhere only the root claims: independent
 * chains. ψ is carried as ln ψ and the claims are scaled by the largest emitting ψ, so nothing
 * overflows. Returns false when nothing in the tree can take a rollout (mass left at 0).
 *
 * `kept` is the v3 early stop (`splitGroupsV3`), `live` liveness; `mass` is written for [lo, hi).
 */
export function flowContestV3(
  rows: ContestFlowRows,
  lo: number,
  hi: number,
  budget: number,
  kept: Uint8Array,
  live: Uint8Array,
  settings: ContestFlowSettings,
  scratch: ContestFlowScratch,
  mass: Float64Array,
): boolean {
  const { parentRow, childStart, childCount, child, terminal, visits, reward, weight, intensity } = rows;
  const n = hi - lo;
  scratch.ensure(n);
  const { reach, logPsi, viability, region, regionClaim, regionOpen, claim } = scratch;
  for (let v = lo; v < hi; v++) mass[v] = 0;
  if (!live[lo]) return false;

  // Reach, ln ψ, the tree's reward range, and the scale M = max ln ψ over the contested forks (≥ 0, the root's).
  let rLo = Infinity, rHi = -Infinity, scale = 0;
  for (let v = lo; v < hi; v++) {
    const i = v - lo, p = parentRow[v];
    if (p < 0) { reach[i] = 1; logPsi[i] = 0; }
    else { reach[i] = reach[p - lo] & kept[v]; logPsi[i] = logPsi[p - lo] + Math.log(childCount[p] * weight[v]); }
    claim[i] = 0; regionClaim[i] = 0; regionOpen[i] = 0;
    if (visits[v] > 0) { if (reward[v] < rLo) rLo = reward[v]; if (reward[v] > rHi) rHi = reward[v]; }
    if (reach[i] && childCount[v] >= 2 && intensity[v] > 0 && logPsi[i] > scale) scale = logPsi[i];
  }
  // ν: the reward of the finished rollouts through a node, rescaled to [0, 1] over the tree's
  // range (the nearest visited ancestor's for a node none went through; 1 without a range).
  // Rewards near ±1e308 overflow hi − lo: the ratio is then taken over quarter-scaled rewards.
  const quarter = !Number.isFinite(rHi - rLo);
  const range = quarter ? rHi / 4 - rLo / 4 : rHi - rLo;
  for (let v = lo; v < hi; v++) {
    const i = v - lo, p = parentRow[v];
    if (!(range > 0)) viability[i] = 1;
    else if (visits[v] > 0) viability[i] = Math.min(1, Math.max(0, (quarter ? reward[v] / 4 - rLo / 4 : reward[v] - rLo) / range));
    else viability[i] = p < 0 ? 1 : viability[p - lo];
  }
  // Regions: a chain of single-child steps belongs to the child of a fork (or of the root) above it.
  for (let v = lo; v < hi; v++) {
    const i = v - lo, p = parentRow[v];
    if (p < 0) { region[i] = i; continue; }
    region[i] = p === lo || childCount[p] >= 2 ? i : region[p - lo];
    if (reach[i] && !terminal[v]) regionOpen[region[i]]++;
  }

  const { contestGain, forkKeep } = settings;
  if (!terminal[lo]) claim[0] = Math.exp(-scale);
  for (let v = lo; v < hi; v++) {
    const i = v - lo, k = childCount[v];
    if (!reach[i] || k < 2 || !(intensity[v] > 0)) continue;
    const emission = contestGain * intensity[v] * Math.exp(logPsi[i] - scale);
    if (!(emission > 0)) continue;
    const open = terminal[v] === 0;
    const keep = open ? forkKeep * emission : 0;
    claim[i] += keep;
    const passed = emission - keep;
    const first = childStart[v], end = first + k;
    let wSum = 0;
    for (let q = first; q < end; q++) { const c = child[q]; if (reach[c - lo]) wSum += weight[c]; }
    let taken = 0;
    if (wSum > 0) {
      for (let q = first; q < end; q++) {
        const c = child[q];
        if (!reach[c - lo]) continue;
        const share = (passed * weight[c] * viability[c - lo]) / wSum;
        regionClaim[c - lo] += share;
        taken += share;
      }
    }
    // What no child takes is Σ w·(1 − ν)/W of what was passed: never negative, though the
    // difference can round below 0 when every ν is 1 (η = 0 would then place B + 1 branches).
    if (open) claim[i] += Math.max(0, passed - taken);
  }
  for (let v = lo + 1; v < hi; v++) {
    const i = v - lo;
    if (!reach[i] || terminal[v]) continue;
    const r = region[i];
    if (regionClaim[r] > 0) claim[i] += regionClaim[r] / regionOpen[r];
  }

  let total = 0;
  for (let i = 0; i < n; i++) total += claim[i];
  if (total > 0) {
    // claim / total first: claims can be subnormal (an intensity from a gap of 5e-324), and
    // budget / total would then overflow.
    for (let v = lo; v < hi; v++) mass[v] = budget * (claim[v - lo] / total);
    return true;
  }
  // No claim at all (a terminal root with no contested fork below): spread over the open steps reached.
  let open = 0;
  for (let v = lo; v < hi; v++) if (reach[v - lo] && !terminal[v]) open++;
  if (open === 0) return false;
  for (let v = lo; v < hi; v++) if (reach[v - lo] && !terminal[v]) mass[v] = budget / open;
  return true;
}
