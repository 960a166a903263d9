import type { ForestRows, RuleSettings } from './rule.js';

/** Per-tree working memory of `contestFlow` (sized to the largest tree seen). */
class ContestFlowScratch {
  reach = new Uint8Array(0);
  logPsi = new Float64Array(0);
  viability = new Float64Array(0);
  region = new Int32Array(0);
  regionOpen = new Float64Array(0);
  /** ln of what a region's first node received, −∞ for none (one fork feeds a region). */
  regionPart = new Float64Array(0);
  /** ln of each row's keep and of what stays at its fork (−∞: none). */
  ownPart = new Float64Array(0);
  stayPart = new Float64Array(0);
  ensure(n: number): void {
    if (this.reach.length >= n) return;
    const size = Math.max(n, this.reach.length * 2);
    this.reach = new Uint8Array(size);
    this.logPsi = new Float64Array(size);
    this.viability = new Float64Array(size);
    this.region = new Int32Array(size);
    this.regionOpen = new Float64Array(size);
    this.regionPart = new Float64Array(size);
    this.ownPart = new Float64Array(size);
    this.stayPart = new Float64Array(size);
  }
}

/** One per thread (each worker thread has its own module instance). */
const scratch = new ContestFlowScratch();

/**
 * The mass of rules v3 and v4 for the tree at rows [lo, hi) (docs/ALGORITHM.md, "v3: a fresh
 * share, and forks that earn their budget by contest"). The root claims a fresh share; every
 * contested fork (a reached head of k ≥ 2 children with intensity I > 0) emits κ·ψ·I, keeps η of
 * it for new siblings at the fork and passes the rest to its kept children in proportion to w·ν
 * (contrast weight × the success the child has shown), the part no child takes staying at the
 * fork; what a child receives is spread evenly over the open steps of its region. With no
 * contest anywhere only the root claims: independent chains.
 *
 * Every part of every claim is carried as its natural logarithm and exponentiated less M, the
 * largest part actually claimed (the document's scaled form): no intermediate overflows on paths
 * of hundreds of wide forks, no part underflows because another, dropped one was large, and a
 * subnormal κ or intensity scales every part alike. Returns false when nothing in the tree can
 * take a rollout (mass left at 0).
 */
export function contestFlow(rows: ForestRows, lo: number, hi: number, budget: number, settings: RuleSettings): boolean {
  const { parentRow, childStart, childCount, child, terminal, visits, reward, weight, intensity, kept, live, mass } = rows;
  const n = hi - lo;
  scratch.ensure(n);
  const { reach, logPsi, viability, region, regionOpen, regionPart, ownPart, stayPart } = scratch;
  for (let v = lo; v < hi; v++) mass[v] = 0;
  if (!live[lo]) return false;

  // Reach, ln ψ and the tree's reward range.
  let rLo = Infinity, rHi = -Infinity;
  for (let v = lo; v < hi; v++) {
    const i = v - lo, p = parentRow[v];
    if (p < 0) { reach[i] = 1; logPsi[i] = 0; }
    else { reach[i] = reach[p - lo] & kept[v]; logPsi[i] = logPsi[p - lo] + Math.log(childCount[p] * weight[v]); }
    regionPart[i] = -Infinity; ownPart[i] = -Infinity; stayPart[i] = -Infinity; regionOpen[i] = 0;
    if (visits[v] > 0) { if (reward[v] < rLo) rLo = reward[v]; if (reward[v] > rHi) rHi = reward[v]; }
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

  // The parts, in logs; M is the largest one that becomes a claim.
  const { contestGain, forkKeep } = settings;
  const lnKappa = Math.log(contestGain), lnKeep = Math.log(forkKeep), lnPassOpen = Math.log1p(-forkKeep);
  const fresh = terminal[lo] === 0; // the root's fresh share, ln 1 = 0
  let top = fresh ? 0 : -Infinity;
  for (let v = lo; v < hi; v++) {
    const i = v - lo, k = childCount[v];
    if (!reach[i] || k < 2 || !(intensity[v] > 0)) continue;
    const lnEmit = lnKappa + Math.log(intensity[v]) + logPsi[i];
    if (lnEmit === -Infinity) continue; // κ = 0 or ψ = 0: nothing emitted
    const open = terminal[v] === 0;
    if (open && lnKeep > -Infinity) {
      ownPart[i] = lnEmit + lnKeep;
      if (ownPart[i] > top) top = ownPart[i];
    }
    const lnPass = open ? lnEmit + lnPassOpen : lnEmit;
    if (lnPass === -Infinity) continue; // η = 1: everything kept
    const first = childStart[v], end = first + k;
    let wSum = 0, wStay = 0;
    for (let q = first; q < end; q++) {
      const c = child[q];
      if (!reach[c - lo]) continue;
      wSum += weight[c];
      wStay += weight[c] * (1 - viability[c - lo]);
    }
    if (wSum > 0) {
      const lnW = Math.log(wSum);
      for (let q = first; q < end; q++) {
        const c = child[q], ci = c - lo;
        if (!reach[ci] || regionOpen[ci] === 0) continue; // a region with no reached open step drops what it gets
        const part = lnPass + Math.log(weight[c]) + Math.log(viability[ci]) - lnW - Math.log(regionOpen[ci]);
        if (part === -Infinity) continue;
        regionPart[ci] = part;
        if (part > top) top = part;
      }
    }
    // What no child takes stays at an open fork (Σ w·(1 − ν)/W of the pass; all of it when W = 0).
    if (open) {
      const stay = wSum > 0 ? lnPass + Math.log(wStay) - Math.log(wSum) : lnPass;
      if (stay > -Infinity) {
        stayPart[i] = stay;
        if (stay > top) top = stay;
      }
    }
  }

  if (top > -Infinity) {
    let total = 0;
    for (let v = lo; v < hi; v++) {
      const i = v - lo;
      let claim = 0;
      if (ownPart[i] > -Infinity) claim += Math.exp(ownPart[i] - top);
      if (i === 0 && fresh) claim += Math.exp(-top);
      if (stayPart[i] > -Infinity) claim += Math.exp(stayPart[i] - top);
      if (i > 0 && reach[i] && !terminal[v]) {
        const r = regionPart[region[i]];
        if (r > -Infinity) claim += Math.exp(r - top);
      }
      mass[v] = claim;
      total += claim;
    }
    for (let v = lo; v < hi; v++) mass[v] = budget * (mass[v] / total);
    return true;
  }
  // No part at all (a terminal root with no contested fork below that claims): spread over the open steps reached.
  let open = 0;
  for (let v = lo; v < hi; v++) if (reach[v - lo] && !terminal[v]) open++;
  if (open === 0) return false;
  for (let v = lo; v < hi; v++) if (reach[v - lo] && !terminal[v]) mass[v] = budget / open;
  return true;
}
