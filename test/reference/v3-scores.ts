/**
 * Section 2 of docs/ALGORITHM.md ("Scoring") as v3, v4 and v5 read it — σ shared by uncertainty, which
 * the document says v2–v5 share; v4 with the uncertainty gate (`rule = 'v4'`), v5 with the gate
 * after repeated evidence (`rule = 'v5'`) — written
 * again from the document alone, this time with its
 * "Numbers at the edges of float64" rules, so that the v3 reference (v3.ts) can take forests
 * with embeddings near 10⁻¹⁷⁰ or 10²⁰⁰, rewards near ±10³⁰⁸ and uncertainties near 10³⁰⁸.
 * (v2.ts transcribes the same formulas literally and is only fed ordinary magnitudes.)
 *
 * Every function returns the float64 nearest (to a few ulps) to the exact quantity for every
 * valid input: no intermediate is allowed to overflow or underflow where the result itself is
 * an ordinary float64.
 */
import type { SpecNode, SpecTree } from './spec.js';

/** ε of section 2. */
export const EPS = 1e-6;

export const rewardOf = (v: SpecNode): number => v.reward ?? 0;
export const visitsOf = (v: SpecNode): number => v.visits ?? 0;
export const uncertaintyOf = (v: SpecNode): number => v.uncertainty ?? 0;
export const isTerminal = (v: SpecNode): boolean => v.terminal ?? false;

/** The rules that score alike up to the uncertainty gate: v3 (v2's scores), v4 (gated) and v5 (gated after repeated evidence). */
export type ScoringRule = 'v3' | 'v4' | 'v5';

/**
 * Whether a pair's uncertainty gap is closed (Δu = 0) under `rule`:
 *  - v4, "The uncertainty gate (v4)": both siblings were visited (n > 0) and their rewards are the
 *    same float64 number. "The same float64 number" is read as numeric equality (`===`): −0 and +0
 *    agree, as they do in Δr = |r_i − r_j| = 0 (pinned by a hand case in test/conformance-v4.test.ts;
 *    the document now says so in words: "numerically equal float64 values, so −0 equals +0");
 *  - v5, "The gate after repeated evidence (v5)": "a pair has Δu = 0 when n_i ≥ 2, n_j ≥ 2 and
 *    r_i = r_j (the same float64 equality)"; a pair in which either sibling has n = 1 or n = 0
 *    keeps its Δu, as under v3. n is the node's `visits` (an integer: the comparison is exact);
 *  - v3: never.
 */
export function gated(i: SpecNode, j: SpecNode, rule: ScoringRule): boolean {
  if (rule === 'v4') return visitsOf(i) > 0 && visitsOf(j) > 0 && rewardOf(i) === rewardOf(j);
  if (rule === 'v5') return visitsOf(i) >= 2 && visitsOf(j) >= 2 && rewardOf(i) === rewardOf(j);
  return false;
}

/** The sibling group of every node (section 1): its children in increasing index order. */
export function siblingGroups(tree: SpecTree): number[][] {
  const groups: number[][] = tree.nodes.map(() => []);
  for (let v = 1; v < tree.nodes.length; v++) groups[tree.nodes[v].parent as number].push(v);
  return groups;
}

/** x·2^s, exactly (a power of two too large for one factor is applied in steps). */
function timesPowerOfTwo(x: number, s: number): number {
  let y = x;
  let left = s;
  while (left > 1000) { y *= 2 ** 1000; left -= 1000; }
  while (left < -1000) { y *= 2 ** -1000; left += 1000; }
  return y * 2 ** left;
}

/**
 * ê = e/‖e‖, or undefined when the norm is 0 (every entry 0, an empty or absent vector). A row
 * whose sum of squares would leave [10⁻²⁸⁰, ∞) is first scaled by a power of two (exact), as the
 * document prescribes, so 10⁻¹⁷⁰- and 10²⁰⁰-sized rows normalize like any other.
 */
export function unitVector(e: readonly number[] | undefined): number[] | undefined {
  if (e === undefined) return undefined;
  let largest = 0;
  for (const x of e) largest = Math.max(largest, Math.abs(x));
  if (largest === 0) return undefined;
  let squares = 0;
  for (const x of e) squares += x * x;
  const scaled = squares >= 1e-280 && Number.isFinite(squares)
    ? e.slice()
    : e.map((x) => timesPowerOfTwo(x, -Math.floor(Math.log2(largest))));
  let sq = 0;
  for (const x of scaled) sq += x * x;
  const norm = Math.sqrt(sq);
  return scaled.map((x) => x / norm);
}

/** d_ij = ‖ê_i − ê_j‖²/4 clamped to [0, 1]; exactly ½ when either norm is 0 (always when D = 0). */
export function distance(ui: readonly number[] | undefined, uj: readonly number[] | undefined): number {
  if (ui === undefined || uj === undefined) return 0.5;
  let sq = 0;
  for (let d = 0; d < ui.length; d++) sq += (ui[d] - uj[d]) ** 2;
  return Math.min(1, Math.max(0, sq / 4));
}

/**
 * c_ij = Δ/(Δ + α·d + ε) and ċ_ij = −α·Δ·d/(Δ + α·d + ε)², with Δ = Δr + Δu (Δr only when both
 * siblings were visited; Δu = 0 where the rule's gate closes: v4's or v5's). ċ is evaluated as −(Δ/den)·(α·d/den), which never forms α·Δ·d; when the
 * denominator itself overflows (rewards near ±10³⁰⁸), every term is taken at a quarter of its
 * size: c and ċ are unchanged by a common factor.
 */
export function response(i: SpecNode, j: SpecNode, alpha: number, d: number, rule: ScoringRule = 'v3'): { c: number; cdot: number } {
  const bothVisited = visitsOf(i) > 0 && visitsOf(j) > 0;
  const closed = gated(i, j, rule);
  const uGap = (x: number, y: number) => (closed ? 0 : Math.abs(x - y));
  let gap = (bothVisited ? Math.abs(rewardOf(i) - rewardOf(j)) : 0) + uGap(uncertaintyOf(i), uncertaintyOf(j));
  let damp = alpha * d;
  let den = gap + damp + EPS;
  if (!Number.isFinite(den)) {
    const q = (x: number) => x / 4;
    gap = (bothVisited ? Math.abs(q(rewardOf(i)) - q(rewardOf(j))) : 0) + uGap(q(uncertaintyOf(i)), q(uncertaintyOf(j)));
    damp = q(damp);
    den = gap + damp + q(EPS);
  }
  const c = gap / den;
  return { c, cdot: -c * (damp / den) };
}

/** σ_ij = 2·(u_i + ε)/(u_i + u_j + 2ε), or 2/(1 + (u_j + ε)/(u_i + ε)) when that sum overflows. */
export function share(i: SpecNode, j: SpecNode): number {
  const ui = uncertaintyOf(i) + EPS;
  const uj = uncertaintyOf(j) + EPS;
  const sum = ui + uj;
  return Number.isFinite(sum) ? 2 * (ui / sum) : 2 / (1 + uj / ui); // 2·u_i alone can overflow
}

export interface GroupScores {
  contrast: number[];
  contrastDot: number[];
  weight: number[];
  gradAlpha: number[];
  gradTau: number[];
  intensity: number;
}

/** One sibling group, its nodes in group order: C, Ċ, w, gA, gB per child and the group's I. */
export function scoreGroup(nodes: readonly SpecNode[], alpha: number, tau: number, rule: ScoringRule = 'v3'): GroupScores {
  const k = nodes.length;
  if (k < 2) return { contrast: [0], contrastDot: [0], weight: [1], gradAlpha: [0], gradTau: [0], intensity: 0 };
  const units = nodes.map((v) => unitVector(v.embedding));
  const C = new Array<number>(k).fill(0);
  const Cdot = new Array<number>(k).fill(0);
  for (let i = 0; i < k; i++) {
    for (let j = 0; j < k; j++) {
      if (j === i) continue;
      const { c, cdot } = response(nodes[i], nodes[j], alpha, distance(units[i], units[j]), rule);
      const s = share(nodes[i], nodes[j]);
      C[i] += s * c;
      Cdot[i] += s * cdot;
    }
    C[i] /= k - 1;
    Cdot[i] /= k - 1;
  }
  const top = Math.max(...C);
  const e = C.map((c) => Math.exp((c - top) / tau));
  const z = e.reduce((a, b) => a + b, 0);
  const w = e.map((x) => x / z);
  // (x_i − Σ_j w_j·x_j)/τ written as Σ_j w_j·(x_i − x_j)/τ: the same number, without the
  // cancellation that a dominant child (w_i → 1) suffers in the first form at small τ.
  const centred = (x: number[], i: number) => x.reduce((acc, xj, j) => acc + w[j] * (x[i] - xj), 0) / tau;
  return {
    contrast: C,
    contrastDot: Cdot,
    weight: w,
    gradAlpha: C.map((_, i) => centred(Cdot, i)),
    gradTau: C.map((_, i) => -centred(C, i)),
    intensity: C.reduce((a, b) => a + b, 0) / k,
  };
}

export interface TreeScores {
  groups: number[][];
  /** Per node (the root keeps C = 0, w = 1, gA = gB = 0). */
  contrast: number[];
  weight: number[];
  gradAlpha: number[];
  gradTau: number[];
  /** Per node: I of the group it heads; 0 for a node without children (it heads no group). */
  intensity: number[];
}

export function scoreTree(tree: SpecTree, alpha: number, tau: number, rule: ScoringRule = 'v3'): TreeScores {
  const n = tree.nodes.length;
  const groups = siblingGroups(tree);
  const s: TreeScores = {
    groups,
    contrast: new Array<number>(n).fill(0),
    weight: new Array<number>(n).fill(1),
    gradAlpha: new Array<number>(n).fill(0),
    gradTau: new Array<number>(n).fill(0),
    intensity: new Array<number>(n).fill(0),
  };
  groups.forEach((kids, p) => {
    if (kids.length === 0) return;
    const g = scoreGroup(kids.map((c) => tree.nodes[c]), alpha, tau, rule);
    kids.forEach((c, i) => {
      s.contrast[c] = g.contrast[i];
      s.weight[c] = g.weight[i];
      s.gradAlpha[c] = g.gradAlpha[i];
      s.gradTau[c] = g.gradTau[i];
    });
    s.intensity[p] = g.intensity;
  });
  return s;
}
