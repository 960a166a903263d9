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
  mass: flowContestV3,
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

/** Per-tree working memory of `flowContestV3` (sized to the largest tree seen). */
class ContestFlowScratch {
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

/** One per thread (each worker thread has its own module instance). */
const scratch = new ContestFlowScratch();

/**
 * Rule v3's mass for the tree at rows [lo, hi) (docs/ALGORITHM.md, "v3: a fresh share, and
 * forks that earn their budget by contest"). The root claims a base share for fresh rollouts;
 * every contested fork (a reached head of k ≥ 2 children with intensity I > 0) emits κ·ψ·I,
 * keeps η of it for new siblings at the fork and passes the rest to its kept children in
 * proportion to w·ν (contrast weight × the success the child has shown), the part no child
 * takes staying at the fork; what a child receives is spread evenly over the open steps of its
 * chain. With no contest anywhere only the root claims: independent chains. ψ is carried as
 * ln ψ and the claims are scaled by the largest emitting ψ, so nothing overflows. Returns false
 * when nothing in the tree can take a rollout (mass left at 0).
 */
function flowContestV3(rows: ForestRows, lo: number, hi: number, budget: number, settings: RuleSettings): boolean {
  const { parentRow, childStart, childCount, child, terminal, visits, reward, weight, intensity, kept, live, mass } = rows;
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
