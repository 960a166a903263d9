/**
 * An independent float64 implementation of TRACE v3 (docs/ALGORITHM.md, section 4 "Common to
 * all rules" and "v3: a fresh share, and forks that earn their budget by contest", the whole
 * numbers, depth and the global split with v3's Q_t), written from that document alone: no code
 * shared with or read from src/, and none shared with the v1 and v2 references (spec.ts, v2.ts)
 * beyond their plain-JSON types. Scores come from v3-scores.ts.
 *
 * Claims are computed in a scaled form that is exact up to rounding whatever the depth: every
 * part of every claim is carried as its natural logarithm (ln ψ = Σ ln(k_p·w_c) along the path),
 * and all parts are divided by the largest one before they are exponentiated (the document's
 * example of a scaled form). The form with M floored at 0, M = max(0, max ln ψ_p over the
 * contested forks), gives the same x wherever no part underflows in it;
 * `literalScaledFormDiffers` says where it would not.
 *
 * Besides the plan it reports where its own discrete decisions are *tied* in the document's
 * sense ("Precision, ties and refusals"), so a comparison may follow the other implementation
 * there: a visited child's weight against its group's bar ρ·w*, the largest-remainder cut within
 * a tree or across trees, and a depth at a .5 edge.
 */
import type { PlanAllocation, PlanTree, SpecForest, SpecTree, TreeTies } from './spec.js';
import { isTerminal, rewardOf, scoreTree, visitsOf, type ScoringRule, type TreeScores } from './v3-scores.js';

/** ALGORITHM.md "Ties": a and b are tied when |a − b| ≤ 1e−9·max(1, |a|, |b|). */
export const TIE = 1e-9;
export const tied = (a: number, b: number, scale = 1): boolean =>
  Math.abs(a - b) <= TIE * Math.max(1, Math.abs(a), Math.abs(b), scale);

export type V3Budget =
  | { kind: 'perTree'; budget: number }
  | { kind: 'global'; total: number; minPerTree: number };

/** The section 4 settings v3 reads (λ is not one of them). */
export interface V3Params {
  alpha: number;
  tau: number;
  /** ρ ∈ [0, 1). */
  pruneRatio: number;
  /** κ ∈ [0, 10⁶]. */
  contestGain: number;
  /** η ∈ [0, 1]. */
  forkKeep: number;
  /** q0 ∈ (0, 10⁶] of the global split; 1 by default under v3. */
  treeFloor: number;
  baseDepth: number;
  depthGain: number;
  minDepth: number;
  /** Defaults to 4·baseDepth. */
  maxDepth?: number;
  budget: V3Budget;
}

export const V3_DEFAULTS: V3Params = {
  alpha: 1,
  tau: 0.5,
  pruneRatio: 0.5,
  contestGain: 4,
  forkKeep: 0.25,
  treeFloor: 1,
  baseDepth: 4,
  depthGain: 1,
  minDepth: 1,
  budget: { kind: 'perTree', budget: 16 },
};

/** A plan of v3, or of v4 (v3's allocation on gated scores, v4.ts): the same fields. */
export interface V3Plan {
  params: { alpha: number; tau: number; rule: ScoringRule };
  trees: PlanTree[];
  totalBudget?: number;
  unallocated?: number;
}

// ------------------------------------------------------------------ common to all rules

/** live(v): open(v), or some child of v is live. Children come after parents: walk backwards. */
export function liveness(tree: SpecTree, groups: number[][]): boolean[] {
  const live = new Array<boolean>(tree.nodes.length).fill(false);
  for (let v = tree.nodes.length - 1; v >= 0; v--) live[v] = !isTerminal(tree.nodes[v]) || groups[v].some((c) => live[c]);
  return live;
}

/** ln ψ_v = Σ over the edges p→c of the path root→v of ln(k_p·w_c); −∞ below a weight of 0. */
export function logPathPriority(tree: SpecTree, s: TreeScores): number[] {
  const ln = new Array<number>(tree.nodes.length).fill(0);
  for (let v = 1; v < tree.nodes.length; v++) {
    const p = tree.nodes[v].parent as number;
    ln[v] = ln[p] + Math.log(s.groups[p].length) + Math.log(s.weight[v]);
  }
  return ln;
}

export interface EarlyStopV3 {
  /** E_p per node, in group order (empty when p has no live child). */
  kept: number[][];
  pruned: number[];
  /** Visited live children whose weight is tied with their group's bar ρ·w*. */
  tiedToBar: Set<number>;
}

/**
 * v3's early stop, in every group: X = live children, V = the visited ones; with V empty E = X,
 * else w* = max over V and E = {unvisited, or w ≥ ρ·w*}. `follow` overrides the decision for
 * the children it names (true: kept) — only sound where that decision is tied.
 */
export function earlyStopV3(tree: SpecTree, s: TreeScores, live: boolean[], rho: number, follow?: ReadonlyMap<number, boolean>): EarlyStopV3 {
  const kept: number[][] = [];
  const pruned: number[] = [];
  const tiedToBar = new Set<number>();
  for (const kids of s.groups) {
    const X = kids.filter((c) => live[c]);
    const V = X.filter((c) => visitsOf(tree.nodes[c]) > 0);
    if (V.length === 0) {
      kept.push(X);
      continue;
    }
    const bar = rho * Math.max(...V.map((c) => s.weight[c]));
    const E: number[] = [];
    for (const c of X) {
      const visited = visitsOf(tree.nodes[c]) > 0;
      const own = !visited || s.weight[c] >= bar;
      if (visited && tied(s.weight[c], bar)) tiedToBar.add(c);
      const keep = visited && follow?.has(c) ? (follow.get(c) as boolean) : own;
      if (keep) E.push(c);
      else pruned.push(c);
    }
    kept.push(E);
  }
  pruned.sort((a, b) => a - b);
  return { kept, pruned, tiedToBar };
}

/** reach(v): v is the live root, or reach(parent) and v ∈ E_parent. */
export function reachability(tree: SpecTree, live: boolean[], kept: number[][]): boolean[] {
  const reach = new Array<boolean>(tree.nodes.length).fill(false);
  const keptSet = kept.map((E) => new Set(E));
  reach[0] = live[0];
  for (let v = 1; v < tree.nodes.length; v++) {
    const p = tree.nodes[v].parent as number;
    reach[v] = reach[p] && keptSet[p].has(v);
  }
  return reach;
}

// ------------------------------------------------------------------ v3 steps 2 and 5

/**
 * ν, success seen: with lo < hi the visited rewards' range, (r − lo)/(hi − lo) for a visited node
 * and the parent's ν for an unvisited one (the root: 1); all 1 when no two visited rewards differ.
 * hi − lo can overflow for rewards near ±10³⁰⁸ (the document lists no rule for it): both
 * differences are then taken at a quarter of their size, which leaves the ratio unchanged.
 */
export function successSeen(tree: SpecTree): number[] {
  const n = tree.nodes.length;
  let lo = Infinity;
  let hi = -Infinity;
  for (const v of tree.nodes) {
    if (visitsOf(v) > 0) {
      lo = Math.min(lo, rewardOf(v));
      hi = Math.max(hi, rewardOf(v));
    }
  }
  const nu = new Array<number>(n).fill(1);
  if (!(hi > lo)) return nu;
  const wide = !Number.isFinite(hi - lo);
  const ratio = (r: number) => (wide ? (r / 4 - lo / 4) / (hi / 4 - lo / 4) : (r - lo) / (hi - lo));
  for (let v = 0; v < n; v++) {
    const node = tree.nodes[v];
    if (visitsOf(node) > 0) nu[v] = ratio(rewardOf(node));
    else nu[v] = v === 0 ? 1 : nu[node.parent as number];
  }
  return nu;
}

/**
 * The region of every non-root node (−1 for the root): a node whose parent is the root or heads
 * a group of k ≥ 2 starts one (its own index names it); every other node is in its parent's.
 */
export function regions(tree: SpecTree, groups: number[][]): number[] {
  const region = new Array<number>(tree.nodes.length).fill(-1);
  for (let v = 1; v < tree.nodes.length; v++) {
    const p = tree.nodes[v].parent as number;
    region[v] = p === 0 || groups[p].length >= 2 ? v : region[p];
  }
  return region;
}

// ------------------------------------------------------------------ v3 steps 1, 3, 4, 6: claims

export interface ClaimsV3 {
  /** π_v, scaled by a common positive factor (all 0 when Σπ = 0). */
  claim: number[];
  /** Whether p is a contested fork (reached, k ≥ 2, I > 0). */
  contested: boolean[];
  /**
   * The scaled form with M floored at 0 (M = max(0, max ln ψ_p over contested forks)) would let
   * a part of some claim underflow to 0 that is not below 2⁻¹⁰⁷⁴ of the largest claim: the
   * library computed there before it took M over the parts claimed (no longer a known disagreement).
   */
  literalScaledFormDiffers: boolean;
  /** The largest part of any claim in that form (0 when none). */
  literalLargestPart: number;
}

/**
 * Steps 1–6 with every part of every claim as a logarithm: the root's fresh share ln 1 = 0; a
 * contested fork's keep ln(η_p·κ·ψ_p·I_p); its pass to a kept child, spread over the child's
 * region; and what no child took, kept at an open fork. Σπ = 0 exactly when no part is left.
 */
export function claimsV3(
  tree: SpecTree, s: TreeScores, lnPsi: number[], reach: boolean[], kept: number[][], nu: number[], p: V3Params,
): ClaimsV3 {
  const n = tree.nodes.length;
  const open = (v: number) => !isTerminal(tree.nodes[v]);
  const parts: number[][] = tree.nodes.map(() => []);
  const contested = new Array<boolean>(n).fill(false);
  if (reach[0] && open(0)) parts[0].push(0);

  const region = regions(tree, s.groups);
  const openReached = new Map<number, number[]>();
  for (let v = 1; v < n; v++) {
    if (!(reach[v] && open(v))) continue;
    const list = openReached.get(region[v]) ?? [];
    list.push(v);
    openReached.set(region[v], list);
  }

  const ln = Math.log;
  for (let f = 0; f < n; f++) {
    if (!(reach[f] && s.groups[f].length >= 2 && s.intensity[f] > 0)) continue;
    contested[f] = true;
    const lnEmit = ln(p.contestGain) + lnPsi[f] + ln(s.intensity[f]);
    const keep = open(f) ? p.forkKeep : 0;
    if (keep > 0) parts[f].push(lnEmit + ln(keep));
    const lnPass = lnEmit + ln(1 - keep);
    const E = kept[f];
    let W = 0;
    for (const c of E) W += s.weight[c];
    if (W > 0) {
      let untaken = 0; // Σ w_c·(1 − ν_c) / W: the part of P no child takes
      for (const c of E) {
        untaken += s.weight[c] * (1 - nu[c]);
        const receivers = openReached.get(region[c]) ?? []; // a region with none drops its share
        const lnEach = lnPass + ln(s.weight[c]) + ln(nu[c]) - ln(W) - ln(receivers.length);
        for (const v of receivers) parts[v].push(lnEach);
      }
      if (open(f)) parts[f].push(lnPass + ln(untaken / W));
    } else if (open(f)) {
      parts[f].push(lnPass);
    }
  }

  let top = -Infinity;
  for (const list of parts) for (const x of list) top = Math.max(top, x);
  const claim = parts.map((list) => list.reduce((acc, x) => acc + (top === -Infinity ? 0 : Math.exp(x - top)), 0));

  // the document's M: every part x is exp(x − M) there; a part that underflows must be negligible
  let M = 0;
  for (let f = 0; f < n; f++) if (contested[f]) M = Math.max(M, lnPsi[f]);
  let literalScaledFormDiffers = false;
  let literalLargestPart = 0;
  if (top > -Infinity) {
    for (const list of parts) {
      for (const x of list) {
        literalLargestPart = Math.max(literalLargestPart, Math.exp(x - M));
        if (x > -Infinity && Math.exp(x - M) === 0 && x - top > -1074 * Math.LN2) literalScaledFormDiffers = true;
      }
    }
  }
  return { claim, contested, literalScaledFormDiffers, literalLargestPart };
}

// ------------------------------------------------------------------ whole numbers and depth

export interface Rounding {
  units: number[];
  /** Entries whose unit count another correct implementation may move by one (a tied cut). */
  tiedAtCut: Set<number>;
}

/**
 * Largest remainder: ⌊x⌋ each; the remaining units one each to the entries with x > 0, larger
 * fractional part first, ties to the smaller index, walking the order again while units remain;
 * an excess of Σ⌊x⌋ over the total taken back one unit at a time from entries with a unit,
 * smaller fractional part first, ties to the larger index, walking again if needed.
 *
 * A cut is tied when the fractional parts either side of it are within 1e−9·max(1, x): the
 * document's absolute 1e−9 on the fractions themselves, widened to the scale of x, because two
 * float64 implementations within the document's |Δx| ≤ 1e−9·max(1, |x|) differ by that much in
 * the fraction of a large x.
 */
export function largestRemainder(x: readonly number[], total: number): Rounding {
  const units = x.map((v) => Math.floor(v));
  const frac = x.map((v, i) => v - units[i]);
  let left = total - units.reduce((a, b) => a + b, 0);
  const tiedAtCut = new Set<number>();
  const markCut = (order: number[], placed: number) => {
    if (placed <= 0 || placed >= order.length) return;
    const a = order[placed - 1];
    const b = order[placed];
    const scale = Math.max(x[a], x[b]);
    if (!tied(frac[a], frac[b], scale)) return;
    for (const i of order) if (tied(frac[i], frac[a], Math.max(x[i], scale)) || tied(frac[i], frac[b], Math.max(x[i], scale))) tiedAtCut.add(i);
  };
  if (left > 0) {
    const order = x.map((_, i) => i).filter((i) => x[i] > 0).sort((a, b) => frac[b] - frac[a] || a - b);
    if (order.length === 0) throw new Error(`largest remainder: ${left} units left and no entry with x > 0`);
    markCut(order, left % order.length);
    for (let r = 0; r < left; r++) units[order[r % order.length]]++;
  } else if (left < 0) {
    const order = x.map((_, i) => i).filter((i) => units[i] > 0).sort((a, b) => frac[a] - frac[b] || b - a);
    markCut(order, -left % order.length);
    for (let r = 0; left < 0; r++) {
      const i = order[r % order.length];
      if (units[i] > 0) { units[i]--; left++; }
    }
  }
  return { units, tiedAtCut };
}

/**
 * depth_v = clamp(⌊D0·ψ^γ + 0.5⌋, minDepth, maxDepth), from ln ψ: ψ^0 = 1 for every ψ, ψ = 0
 * with γ > 0 gives minDepth, and a D0·ψ^γ beyond the float64 range counts as above maxDepth. ψ
 * here is the float64 value exp(ln ψ) (the document's Depth section): +∞ beyond the float64
 * range (maxDepth when γ > 0), 0 below it (minDepth when γ > 0). `tiedEdge`: D0·ψ^γ + 0.5 is
 * tied with an integer that the clamp keeps.
 */
export function forkHorizon(lnPsi: number, p: V3Params): { depth: number; tiedEdge: boolean } {
  const maxDepth = p.maxDepth ?? 4 * p.baseDepth;
  let raw: number;
  if (p.depthGain === 0) raw = p.baseDepth + 0.5;
  else if (Math.exp(lnPsi) === 0) raw = 0.5;
  else if (Math.exp(lnPsi) === Infinity) raw = Infinity;
  else {
    const lnScaled = Math.log(p.baseDepth) + p.depthGain * lnPsi;
    raw = lnScaled > 700 ? Infinity : Math.exp(lnScaled) + 0.5;
  }
  const depth = Math.min(maxDepth, Math.max(p.minDepth, Math.floor(raw)));
  const edge = Math.round(raw);
  const tiedEdge = Number.isFinite(raw) && tied(raw, edge) && edge > p.minDepth && edge <= maxDepth;
  return { depth, tiedEdge };
}

// ------------------------------------------------------------------ one tree

export interface TreeAllocationV3 {
  tree: PlanTree;
  ties: TreeTies;
  lnPsi: number[];
  nu: number[];
  reach: boolean[];
  /** E_p per node, in group order. */
  kept: number[][];
  contested: boolean[];
  /** π_v up to a common factor. */
  claim: number[];
  /** x_v before rounding. */
  mass: number[];
  /** Σπ = 0 with a live root: x spread equally over the reached open nodes. */
  fallback: boolean;
  literalScaledFormDiffers: boolean;
  literalLargestPart: number;
  /** depth_v of every node, allocated or not. */
  depth: number[];
}

/** One tree with budget B. `follow`: tied prune decisions taken the other implementation's way. */
export function allocateTreeV3(
  tree: SpecTree, id: string, s: TreeScores, budget: number, p: V3Params, follow?: ReadonlyMap<number, boolean>,
): TreeAllocationV3 {
  const n = tree.nodes.length;
  const live = liveness(tree, s.groups);
  const stop = earlyStopV3(tree, s, live, p.pruneRatio, follow);
  const lnPsi = logPathPriority(tree, s);
  const reach = reachability(tree, live, stop.kept);
  const nu = successSeen(tree);
  const claims = claimsV3(tree, s, lnPsi, reach, stop.kept, nu, p);
  const sum = claims.claim.reduce((a, b) => a + b, 0);
  const openReached = tree.nodes.map((v, i) => reach[i] && !isTerminal(v));
  const receivers = openReached.filter(Boolean).length;

  let mass = new Array<number>(n).fill(0);
  let places = false;
  let fallback = false;
  if (live[0] && sum > 0) {
    mass = claims.claim.map((c) => (budget * c) / sum);
    places = true;
  } else if (live[0] && receivers > 0) {
    mass = openReached.map((o) => (o ? budget / receivers : 0));
    places = true;
    fallback = true;
  }
  const rounded = places ? largestRemainder(mass, budget) : { units: new Array<number>(n).fill(0), tiedAtCut: new Set<number>() };
  const horizons = lnPsi.map((l) => forkHorizon(l, p));
  const allocations: PlanAllocation[] = [];
  rounded.units.forEach((b, v) => { if (b > 0) allocations.push({ node: v, branches: b, depth: horizons[v].depth }); });
  const depthTies = new Set<number>();
  horizons.forEach((h, v) => { if (h.tiedEdge) depthTies.add(v); });
  return {
    tree: { id, budget, unallocated: places ? 0 : budget, allocations, pruned: stop.pruned },
    ties: { prune: stop.tiedToBar, rounding: rounded.tiedAtCut, depth: depthTies, budget: false },
    lnPsi,
    nu,
    reach,
    kept: stop.kept,
    contested: claims.contested,
    claim: claims.claim,
    mass,
    fallback,
    literalScaledFormDiffers: claims.literalScaledFormDiffers,
    literalLargestPart: claims.literalLargestPart,
    depth: horizons.map((h) => h.depth),
  };
}

// ------------------------------------------------------------------ the global split

/** v3's S_t: the intensity of the root's group when the root heads k ≥ 2 children, else 0. */
export function rootEvidence(s: TreeScores): number {
  return s.groups[0].length >= 2 ? s.intensity[0] : 0;
}

/** M_t = μ + (B_total − μ·|L|)·Q_t/ΣQ over live trees, 0 for the others; largest remainder across trees. */
export function splitTotal(rootLive: boolean[], Q: number[], total: number, mu: number): Rounding {
  const L = rootLive.filter(Boolean).length;
  if (total < mu * L) throw new Error(`total budget ${total} < μ·|L| = ${mu}·${L}: the CLI must refuse this`);
  if (L === 0) return { units: rootLive.map(() => 0), tiedAtCut: new Set() };
  let qSum = 0;
  rootLive.forEach((l, t) => { if (l) qSum += Q[t]; });
  const spare = total - mu * L;
  const M = rootLive.map((l, t) => (l ? mu + (spare * Q[t]) / qSum : 0));
  if (M.every((m) => m === 0)) return { units: M, tiedAtCut: new Set() }; // μ = 0 and nothing to share
  return largestRemainder(M, total);
}

// ------------------------------------------------------------------ the whole plan

export interface V3Result {
  plan: V3Plan;
  scores: TreeScores[];
  trees: TreeAllocationV3[];
  /** Global mode: trees whose budget sits at a tied cut across trees. */
  budgetTies: Set<number>;
}

export function treeId(tree: SpecTree, t: number): string {
  return tree.id ?? String(t);
}

export function referencePlanV3(forest: SpecForest, p: V3Params): V3Result {
  return contestFlowPlan(forest, p, 'v3');
}

/**
 * v3's allocation (early stop, flow, claims, whole numbers, depth, global split with v3's S_t and
 * q0) on the scores of `rule`: v3's own, or v4's gated ones (ALGORITHM.md "v4":
 * "v4 allocates exactly as v3 below ... from its own scores").
 */
export function contestFlowPlan(forest: SpecForest, p: V3Params, rule: ScoringRule): V3Result {
  const scores = forest.trees.map((t) => scoreTree(t, p.alpha, p.tau, rule));
  let budgets: number[];
  let budgetTies = new Set<number>();
  if (p.budget.kind === 'perTree') {
    const b = p.budget.budget;
    budgets = forest.trees.map(() => b);
  } else {
    const rootLive = forest.trees.map((t, i) => liveness(t, scores[i].groups)[0]);
    const split = splitTotal(rootLive, scores.map((s) => p.treeFloor + rootEvidence(s)), p.budget.total, p.budget.minPerTree);
    budgets = split.units;
    budgetTies = split.tiedAtCut;
  }
  const trees = forest.trees.map((tree, t) => allocateTreeV3(tree, treeId(tree, t), scores[t], budgets[t], p));
  const plan: V3Plan = {
    params: { alpha: p.alpha, tau: p.tau, rule },
    trees: trees.map((a, t) => ({ ...a.tree, ...scoreFields(forest.trees[t], scores[t]) })),
  };
  if (p.budget.kind === 'global') {
    plan.totalBudget = p.budget.total;
    plan.unallocated = p.budget.total - budgets.reduce((a, b) => a + b, 0);
  }
  return { plan, scores, trees, budgetTies };
}

/** The plan's `scores` (every non-root node) and `groups` (every parent), in node order. */
export function scoreFields(tree: SpecTree, s: TreeScores): Pick<PlanTree, 'scores' | 'groups'> {
  return {
    scores: tree.nodes.slice(1).map((_, i) => ({
      node: i + 1, contrast: s.contrast[i + 1], weight: s.weight[i + 1], gradAlpha: s.gradAlpha[i + 1], gradTau: s.gradTau[i + 1],
    })),
    groups: s.groups.flatMap((kids, v) => (kids.length > 0 ? [{ parent: v, intensity: s.intensity[v] }] : [])),
  };
}
