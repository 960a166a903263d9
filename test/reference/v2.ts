/**
 * An independent float64 implementation of TRACE v2 (docs/ALGORITHM.md, sections 2 and 4 under
 * their "v2" marks), written from that document alone: no code shared with or read from src/,
 * and none shared with the v1 reference in spec.ts either (only its plain-JSON types), so a
 * mistake common to both rules in spec.ts cannot hide here. Every step is spelled out the way
 * the document states it, with no packing and no attempt at speed.
 *
 * Besides the plan it reports where its own discrete decisions sit within 1e-9 of a boundary
 * (a prune threshold, a largest-remainder cut within a tree or across trees, a depth's .5
 * edge): the only places another correct summation order may decide the other way
 * (docs/ALGORITHM.md, "Precision and ties").
 */
import type { Plan, PlanAllocation, PlanTree, SpecForest, SpecNode, SpecTree, TreeTies } from './spec.js';

/** ε of section 2. */
export const EPS = 1e-6;
/** How close to a decision boundary a value must be before another summation order may flip it. */
export const NEAR = 1e-9;

export type V2Budget =
  | { kind: 'perTree'; budget: number }
  | { kind: 'global'; total: number; minPerTree: number };

/** The section 4 settings v2 reads (λ is not one of them). */
export interface V2Params {
  alpha: number;
  tau: number;
  pruneRatio: number;
  contestGain: number;
  /** q0 of the global split; 0.25 by default. */
  treeFloor: number;
  baseDepth: number;
  depthGain: number;
  minDepth: number;
  /** Defaults to 4·baseDepth. */
  maxDepth?: number;
  budget: V2Budget;
}

export const V2_DEFAULTS: V2Params = {
  alpha: 1,
  tau: 0.5,
  pruneRatio: 0.5,
  contestGain: 4,
  treeFloor: 0.25,
  baseDepth: 4,
  depthGain: 1,
  minDepth: 1,
  budget: { kind: 'perTree', budget: 16 },
};

export interface V2Plan extends Plan {
  params: { alpha: number; tau: number; rule: 'v2' };
  totalBudget?: number;
  unallocated?: number;
}

export interface V2Result {
  plan: V2Plan;
  ties: TreeTies[];
  /** x_v per tree, before rounding. */
  mass: number[][];
  /** ψ_v per tree. */
  psi: number[][];
  /** π_v per tree. */
  claim: number[][];
  /** depth_v of every node per tree, allocated or not (a near-tie can hand a unit to another node). */
  depth: number[][];
}

// ------------------------------------------------------------------ section 1: fields and groups

const rewardOf = (v: SpecNode) => v.reward ?? 0;
const visitsOf = (v: SpecNode) => v.visits ?? 0;
const uncertaintyOf = (v: SpecNode) => v.uncertainty ?? 0;
const isTerminal = (v: SpecNode) => v.terminal ?? false;

/** The sibling group of every node: its children in increasing index order. */
export function groupsOf(tree: SpecTree): number[][] {
  const groups: number[][] = tree.nodes.map(() => []);
  for (let v = 1; v < tree.nodes.length; v++) groups[tree.nodes[v].parent as number].push(v);
  return groups;
}

// ------------------------------------------------------------------ section 2: scoring

/** ê = e/‖e‖, or undefined for a zero (or absent) vector. */
function unit(e: readonly number[] | undefined): number[] | undefined {
  if (e === undefined) return undefined;
  let sq = 0;
  for (const x of e) sq += x * x;
  if (sq === 0) return undefined;
  const norm = Math.sqrt(sq);
  return e.map((x) => x / norm);
}

/**
 * d_ij = (1 − s_ij)/2, computed as the document asks: ‖ê_i − ê_j‖²/4 clamped to [0, 1];
 * s = 0 (so d = ½) when either norm is 0, which covers D = 0.
 */
export function pairDistance(ui: number[] | undefined, uj: number[] | undefined): number {
  if (ui === undefined || uj === undefined) return 0.5;
  let sq = 0;
  for (let d = 0; d < ui.length; d++) {
    const diff = ui[d] - uj[d];
    sq += diff * diff;
  }
  return Math.min(1, Math.max(0, sq / 4));
}

/** Δ_ij = Δr_ij + Δu_ij; the reward gap counts only when both siblings were visited. */
export function feedbackGap(i: SpecNode, j: SpecNode): number {
  const dr = visitsOf(i) > 0 && visitsOf(j) > 0 ? Math.abs(rewardOf(i) - rewardOf(j)) : 0;
  return dr + Math.abs(uncertaintyOf(i) - uncertaintyOf(j));
}

/** σ_ij = 2·(u_i + ε)/(u_i + u_j + 2ε): the v2 share of a pair's response taken by i. */
export function share(i: SpecNode, j: SpecNode): number {
  const ui = uncertaintyOf(i);
  const uj = uncertaintyOf(j);
  return (2 * (ui + EPS)) / (ui + uj + 2 * EPS);
}

export interface V2GroupScores {
  contrast: number[];
  weight: number[];
  gradAlpha: number[];
  gradTau: number[];
  intensity: number;
}

/** Section 2, v2 sharing, for one sibling group given as its nodes in group order. */
export function scoreGroupV2(nodes: readonly SpecNode[], alpha: number, tau: number): V2GroupScores {
  const k = nodes.length;
  if (k < 2) return { contrast: [0], weight: [1], gradAlpha: [0], gradTau: [0], intensity: 0 };
  const units = nodes.map((v) => unit(v.embedding));
  const C: number[] = [];
  const Cdot: number[] = [];
  for (let i = 0; i < k; i++) {
    let c = 0;
    let cdot = 0;
    for (let j = 0; j < k; j++) {
      if (j === i) continue;
      const d = pairDistance(units[i], units[j]);
      const gap = feedbackGap(nodes[i], nodes[j]);
      const den = gap + alpha * d + EPS;
      const s = share(nodes[i], nodes[j]);
      c += s * (gap / den);
      cdot += s * ((-alpha * gap * d) / (den * den));
    }
    C.push(c / (k - 1));
    Cdot.push(cdot / (k - 1));
  }
  let top = -Infinity;
  for (const c of C) top = Math.max(top, c);
  const e = C.map((c) => Math.exp((c - top) / tau));
  let z = 0;
  for (const x of e) z += x;
  const w = e.map((x) => x / z);
  let wC = 0;
  let wCdot = 0;
  for (let j = 0; j < k; j++) {
    wC += w[j] * C[j];
    wCdot += w[j] * Cdot[j];
  }
  let sumC = 0;
  for (const c of C) sumC += c;
  return {
    contrast: C,
    weight: w,
    gradAlpha: Cdot.map((cd) => (cd - wCdot) / tau),
    gradTau: C.map((c) => -(c - wC) / tau),
    intensity: sumC / k,
  };
}

export interface V2TreeScores {
  groups: number[][];
  /** Per node; the root keeps C = 0, w = 1, gA = gB = 0. */
  contrast: number[];
  weight: number[];
  gradAlpha: number[];
  gradTau: number[];
  /** Per node that heads a group (k ≥ 1); undefined for leaves. */
  intensity: (number | undefined)[];
}

export function scoreTreeV2(tree: SpecTree, alpha: number, tau: number): V2TreeScores {
  const n = tree.nodes.length;
  const groups = groupsOf(tree);
  const s: V2TreeScores = {
    groups,
    contrast: new Array<number>(n).fill(0),
    weight: new Array<number>(n).fill(1),
    gradAlpha: new Array<number>(n).fill(0),
    gradTau: new Array<number>(n).fill(0),
    intensity: new Array<number | undefined>(n).fill(undefined),
  };
  groups.forEach((kids, p) => {
    if (kids.length === 0) return;
    const g = scoreGroupV2(kids.map((c) => tree.nodes[c]), alpha, tau);
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

// ------------------------------------------------------------------ section 4: common to both rules

/** live(v): open(v), or some child of v is live. Children come after parents, so walk backwards. */
export function liveNodes(tree: SpecTree, groups: number[][]): boolean[] {
  const live = new Array<boolean>(tree.nodes.length).fill(false);
  for (let v = tree.nodes.length - 1; v >= 0; v--) {
    live[v] = !isTerminal(tree.nodes[v]) || groups[v].some((c) => live[c]);
  }
  return live;
}

export interface EarlyStop {
  /** E_p per node (empty when p has no live child). */
  kept: Set<number>[];
  pruned: number[];
  /** Live children whose weight sits within NEAR (relative) of their group's threshold ρ·w*. */
  near: Set<number>;
}

/** In every group: X = live children, w* = max over X, E = {w ≥ ρ·w*}, pruned X \ E. */
export function earlyStop(s: V2TreeScores, live: boolean[], rho: number): EarlyStop {
  const kept: Set<number>[] = [];
  const pruned: number[] = [];
  const near = new Set<number>();
  for (const kids of s.groups) {
    const X = kids.filter((c) => live[c]);
    const E = new Set<number>();
    kept.push(E);
    if (X.length === 0) continue;
    let wStar = -Infinity;
    for (const c of X) wStar = Math.max(wStar, s.weight[c]);
    const threshold = rho * wStar;
    for (const c of X) {
      if (s.weight[c] >= threshold) E.add(c);
      else pruned.push(c);
      if (threshold > 0 && Math.abs(s.weight[c] - threshold) <= NEAR * threshold) near.add(c);
    }
  }
  pruned.sort((a, b) => a - b);
  return { kept, pruned, near };
}

/** ψ_v = Π over the edges p→c of the path root→v of k_p·w_c; k_p counts the whole group. */
export function pathPriority(tree: SpecTree, s: V2TreeScores): number[] {
  const psi = new Array<number>(tree.nodes.length).fill(1);
  for (let v = 1; v < tree.nodes.length; v++) {
    const p = tree.nodes[v].parent as number;
    psi[v] = psi[p] * s.groups[p].length * s.weight[v];
  }
  return psi;
}

// ------------------------------------------------------------------ section 4, v2: claims

/** a_v: 0 if terminal, 1 + κ·I_v if v heads a group of k ≥ 2, else 1. */
export function ownClaim(tree: SpecTree, s: V2TreeScores, v: number, kappa: number): number {
  if (isTerminal(tree.nodes[v])) return 0;
  if (s.groups[v].length >= 2) return 1 + kappa * (s.intensity[v] as number);
  return 1;
}

/** reach(v): the root when it is live; otherwise reach(parent) and v kept in its group. */
export function reachable(tree: SpecTree, live: boolean[], stop: EarlyStop): boolean[] {
  const reach = new Array<boolean>(tree.nodes.length).fill(false);
  reach[0] = live[0];
  for (let v = 1; v < tree.nodes.length; v++) {
    const p = tree.nodes[v].parent as number;
    reach[v] = reach[p] && stop.kept[p].has(v);
  }
  return reach;
}

export interface Rounding {
  units: number[];
  /** Indices whose unit count another correct summation order could move by one. */
  near: Set<number>;
}

/**
 * Largest remainder: ⌊x⌋ each, then the `total − Σ⌊x⌋` remaining units one each to the entries
 * with x > 0 by larger fractional part, ties to the smaller index, walking that order again if
 * more units remain than entries.
 */
export function largestRemainderV2(x: readonly number[], total: number): Rounding {
  const units = x.map(Math.floor);
  let floors = 0;
  for (const u of units) floors += u;
  const left = total - floors;
  const frac = x.map((v, i) => v - units[i]);
  const order = x.map((_, i) => i).filter((i) => x[i] > 0).sort((a, b) => (frac[b] - frac[a]) || (a - b));
  if (left < 0) throw new Error(`largest remainder: the floors already exceed the total (${floors} > ${total}); the document leaves this open`);
  if (left > 0 && order.length === 0) throw new Error(`largest remainder: ${left} units left and no entry with x > 0`);
  for (let r = 0; r < left; r++) units[order[r % order.length]]++;
  const near = new Set<number>();
  // Another summation order can swap the last winner and the first loser when their fractions
  // are this close. (An x a hair either side of an integer cannot change the result: just below
  // it, its fraction ≈ 1 ranks first and takes back the unit its floor lost.)
  if (left > 0 && left < order.length) {
    const lastIn = frac[order[left - 1]];
    const firstOut = frac[order[left]];
    if (lastIn - firstOut <= NEAR) {
      for (const i of order) if (frac[i] >= firstOut - NEAR && frac[i] <= lastIn + NEAR) near.add(i);
    }
  }
  return { units, near };
}

/** depth_v = clamp(⌊D0·ψ_v^γ + 0.5⌋, minDepth, maxDepth), and whether it sits at a .5 edge. */
export function forkHorizon(psi: number, p: V2Params): { depth: number; near: boolean } {
  const maxDepth = p.maxDepth ?? 4 * p.baseDepth;
  const raw = p.baseDepth * Math.pow(psi, p.depthGain) + 0.5;
  const depth = Math.min(maxDepth, Math.max(p.minDepth, Math.floor(raw)));
  const edge = Math.round(raw);
  // ⌊raw⌋ is edge or edge − 1 here; the clamp hides the difference outside (minDepth, maxDepth].
  const near = Math.abs(raw - edge) <= NEAR * Math.max(1, raw) && edge > p.minDepth && edge <= maxDepth;
  return { depth, near };
}

export interface V2TreePlan {
  tree: PlanTree;
  ties: TreeTies;
  mass: number[];
  psi: number[];
  claim: number[];
  depth: number[];
}

/** One tree with budget B: early stop, claims π = ψ·a on reached nodes, x = B·π/Σπ, rounding, depths. */
export function allocateTreeV2(tree: SpecTree, id: string, s: V2TreeScores, budget: number, p: V2Params): V2TreePlan {
  const n = tree.nodes.length;
  const live = liveNodes(tree, s.groups);
  const stop = earlyStop(s, live, p.pruneRatio);
  const psi = pathPriority(tree, s);
  const reach = reachable(tree, live, stop);
  const claim = psi.map((q, v) => (reach[v] ? q * ownClaim(tree, s, v, p.contestGain) : 0));
  let total = 0;
  for (const c of claim) total += c;
  const places = live[0] && total > 0;
  const mass = claim.map((c) => (places ? (budget * c) / total : 0));
  const rounded = places ? largestRemainderV2(mass, budget) : { units: new Array<number>(n).fill(0), near: new Set<number>() };
  const horizons = psi.map((q) => forkHorizon(q, p));
  const allocations: PlanAllocation[] = [];
  rounded.units.forEach((b, v) => {
    if (b > 0) allocations.push({ node: v, branches: b, depth: horizons[v].depth });
  });
  const depthNear = new Set<number>();
  horizons.forEach((h, v) => { if (h.near) depthNear.add(v); });
  const out: PlanTree = { id, budget, unallocated: places ? 0 : budget, allocations, pruned: stop.pruned };
  return {
    tree: out,
    ties: { prune: stop.near, rounding: rounded.near, depth: depthNear, budget: false },
    mass,
    psi,
    claim,
    depth: horizons.map((h) => h.depth),
  };
}

// ------------------------------------------------------------------ section 4: the global split

/** Q_t = q0 + mean of I_p over t's groups with k ≥ 2 (0 for a tree with none). */
export function treeWeight(s: V2TreeScores, q0: number): number {
  let sum = 0;
  let count = 0;
  s.groups.forEach((kids, p) => {
    if (kids.length >= 2) {
      sum += s.intensity[p] as number;
      count++;
    }
  });
  return q0 + (count === 0 ? 0 : sum / count);
}

/** M_t = μ + (B_total − μ·|L|)·Q_t/ΣQ over live trees, 0 for the others, then largest remainder across trees. */
export function splitTotal(rootLive: boolean[], Q: number[], total: number, mu: number): { budgets: number[]; near: Set<number> } {
  const L = rootLive.filter(Boolean).length;
  if (total < mu * L) throw new Error(`total budget ${total} < μ·|L| = ${mu}·${L}`);
  if (L === 0) return { budgets: rootLive.map(() => 0), near: new Set() };
  let qSum = 0;
  rootLive.forEach((l, t) => { if (l) qSum += Q[t]; });
  const spare = total - mu * L;
  const M = rootLive.map((l, t) => (l ? mu + (spare * Q[t]) / qSum : 0));
  const r = largestRemainderV2(M, total);
  return { budgets: r.units, near: r.near };
}

// ------------------------------------------------------------------ the whole plan

export function referencePlanV2(forest: SpecForest, p: V2Params, withScores = true): V2Result {
  const scored = forest.trees.map((t) => scoreTreeV2(t, p.alpha, p.tau));
  const rootLive = forest.trees.map((t, i) => liveNodes(t, scored[i].groups)[0]);
  let budgets: number[];
  let budgetNear = new Set<number>();
  if (p.budget.kind === 'perTree') {
    const b = p.budget.budget;
    budgets = forest.trees.map(() => b);
  } else {
    const split = splitTotal(rootLive, scored.map((s) => treeWeight(s, p.treeFloor)), p.budget.total, p.budget.minPerTree);
    budgets = split.budgets;
    budgetNear = split.near;
  }
  const result: V2Result = {
    plan: { params: { alpha: p.alpha, tau: p.tau, rule: 'v2' }, trees: [] },
    ties: [],
    mass: [],
    psi: [],
    claim: [],
    depth: [],
  };
  forest.trees.forEach((tree, t) => {
    const s = scored[t];
    const a = allocateTreeV2(tree, tree.id ?? String(t), s, budgets[t], p);
    if (withScores) {
      a.tree.scores = tree.nodes.slice(1).map((_, i) => ({
        node: i + 1,
        contrast: s.contrast[i + 1],
        weight: s.weight[i + 1],
        gradAlpha: s.gradAlpha[i + 1],
        gradTau: s.gradTau[i + 1],
      }));
      a.tree.groups = [];
      s.groups.forEach((kids, v) => {
        if (kids.length > 0) a.tree.groups?.push({ parent: v, intensity: s.intensity[v] as number });
      });
    }
    result.plan.trees.push(a.tree);
    result.ties.push({ ...a.ties, budget: budgetNear.has(t) });
    result.mass.push(a.mass);
    result.psi.push(a.psi);
    result.claim.push(a.claim);
    result.depth.push(a.depth);
  });
  if (p.budget.kind === 'global') {
    result.plan.totalBudget = p.budget.total;
    // The document defines the top-level figure only for a forest without a live tree ("carries
    // the total"); read here as the part of the total no tree was given.
    result.plan.unallocated = p.budget.total - budgets.reduce((x, y) => x + y, 0);
  }
  return result;
}
