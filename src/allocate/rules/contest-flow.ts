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
  /** v3's linear claims (`linearClaims`): per row, and what each region's first node received. */
  claim = new Float64Array(0);
  regionClaim = new Float64Array(0);
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
    this.claim = new Float64Array(size);
    this.regionClaim = new Float64Array(size);
  }
}

/** One per thread (each worker thread has its own module instance). */
const scratch = new ContestFlowScratch();

/**
 * The mass of rules v3, v4 and v5 for the tree at rows [lo, hi) (docs/ALGORITHM.md, "v3: a fresh
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
  const prepared = prepareFlow(rows, lo, hi);
  if (!prepared.live) return false;
  const top = claimedParts(rows, lo, hi, settings);
  return top > -Infinity ? scaledMass(rows, lo, hi, budget, top) : equalSpread(rows, lo, hi, budget);
}

/**
 * Rule v3's mass: the same flow, with the claims computed as v3 was released (linearly, scaled by
 * the largest ψ of a contested fork, S), wherever that is exact; and in the scaled form of
 * `contestFlow` where it is not: where the largest part claimed, M, lies more than e^600 from S
 * (κ = 0 on a chain of hundreds of wide forks; a subnormal κ under a terminal root), the linear
 * claims under- or overflow. Elsewhere the two agree to rounding, and the linear ones keep v3's
 * plans byte for byte (a rounding tie can otherwise fall the other way).
 */
export function contestFlowV3(rows: ForestRows, lo: number, hi: number, budget: number, settings: RuleSettings): boolean {
  const prepared = prepareFlow(rows, lo, hi);
  if (!prepared.live) return false;
  const top = claimedParts(rows, lo, hi, settings);
  if (top === -Infinity) return equalSpread(rows, lo, hi, budget);
  if (Math.abs(top - prepared.forkScale) > LINEAR_RANGE) return scaledMass(rows, lo, hi, budget, top);
  return linearClaims(rows, lo, hi, budget, settings, prepared.forkScale);
}

/** How far (in ln) the largest part may lie from v3's linear scale before its claims leave the float64 range (e^±709). */
const LINEAR_RANGE = 600;

/**
 * The per-row facts both forms read, into the scratch: reach, ln ψ, ν, regions and the reached
 * open steps of each region. Also S, the largest ln ψ of a reached contested fork (0 at least: the
 * root's), v3's linear scale. Masses are zeroed.
 */
function prepareFlow(rows: ForestRows, lo: number, hi: number): { live: boolean; forkScale: number } {
  const { parentRow, childCount, terminal, visits, reward, weight, intensity, kept, live, mass } = rows;
  const n = hi - lo;
  scratch.ensure(n);
  const { reach, logPsi, viability, region, regionOpen, regionPart, ownPart, stayPart } = scratch;
  for (let v = lo; v < hi; v++) mass[v] = 0;
  if (!live[lo]) return { live: false, forkScale: 0 };

  // Reach, ln ψ and the tree's reward range.
  let rLo = Infinity, rHi = -Infinity, forkScale = 0;
  for (let v = lo; v < hi; v++) {
    const i = v - lo, p = parentRow[v];
    if (p < 0) { reach[i] = 1; logPsi[i] = 0; }
    else { reach[i] = reach[p - lo] & kept[v]; logPsi[i] = logPsi[p - lo] + Math.log(childCount[p] * weight[v]); }
    regionPart[i] = -Infinity; ownPart[i] = -Infinity; stayPart[i] = -Infinity; regionOpen[i] = 0;
    if (visits[v] > 0) { if (reward[v] < rLo) rLo = reward[v]; if (reward[v] > rHi) rHi = reward[v]; }
    if (reach[i] && childCount[v] >= 2 && intensity[v] > 0 && logPsi[i] > forkScale) forkScale = logPsi[i];
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
  return { live: true, forkScale };
}

/** The parts of every claim, in logs, into the scratch; returns M, the largest (−∞ when there is none). */
function claimedParts(rows: ForestRows, lo: number, hi: number, settings: RuleSettings): number {
  const { childStart, childCount, child, terminal, weight, intensity } = rows;
  const { reach, logPsi, viability, regionOpen, regionPart, ownPart, stayPart } = scratch;
  const { contestGain, forkKeep } = settings;
  const lnKappa = Math.log(contestGain), lnKeep = Math.log(forkKeep), lnPassOpen = Math.log1p(-forkKeep);
  let top = terminal[lo] === 0 ? 0 : -Infinity; // the root's fresh share, ln 1 = 0
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
  return top;
}

/** x from the parts in logs, each exponentiated less M = `top` (> −∞). */
function scaledMass(rows: ForestRows, lo: number, hi: number, budget: number, top: number): boolean {
  const { terminal, mass } = rows;
  const { reach, region, regionPart, ownPart, stayPart } = scratch;
  const fresh = terminal[lo] === 0;
  let total = 0;
  for (let v = lo; v < hi; v++) {
    const i = v - lo;
    let claim = 0;
    if (i === 0 && fresh) claim += Math.exp(-top);
    if (ownPart[i] > -Infinity) claim += Math.exp(ownPart[i] - top);
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

/** No part at all (a terminal root with no contested fork below that claims): spread over the open steps reached. */
function equalSpread(rows: ForestRows, lo: number, hi: number, budget: number): boolean {
  const { terminal, mass } = rows;
  const { reach } = scratch;
  let open = 0;
  for (let v = lo; v < hi; v++) if (reach[v - lo] && !terminal[v]) open++;
  if (open === 0) return false;
  for (let v = lo; v < hi; v++) if (reach[v - lo] && !terminal[v]) mass[v] = budget / open;
  return true;
}

/**
 * v3's claims as released: linear, each relative to e^S (S = `scale`, the largest ln ψ of a
 * contested fork), the same operations in the same order as before the scaled form was fixed,
 * so its plans stay byte for byte where this form is exact (`contestFlowV3` decides where).
 */
function linearClaims(rows: ForestRows, lo: number, hi: number, budget: number, settings: RuleSettings, scale: number): boolean {
  const { childStart, childCount, child, terminal, weight, intensity, mass } = rows;
  const { reach, logPsi, viability, region, regionOpen, claim, regionClaim } = scratch;
  const n = hi - lo;
  for (let i = 0; i < n; i++) { claim[i] = 0; regionClaim[i] = 0; }
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
    // claim / total first: claims can be subnormal, and budget / total would then overflow.
    for (let v = lo; v < hi; v++) mass[v] = budget * (claim[v - lo] / total);
    return true;
  }
  return equalSpread(rows, lo, hi, budget);
}
