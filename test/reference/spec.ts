/**
 * An independent float64 implementation of SPEC §2 (scores) and §4 (allocation), written
 * from SPEC.md alone, over the plain JSON forest of §5. It is the oracle the conformance
 * tests hold the real CLI to, so every step is spelled out the way the spec states it,
 * with no packing, no shared code with src/, and no attempt at speed.
 *
 * Besides the §5 plan it reports where its own decisions sit within 1e-9 of a boundary
 * (a prune threshold, a largest-remainder cut, a depth rounding edge):
 * only there may a correct implementation that rounds differently decide the other way.
 */

export const EPSILON = 1e-6;
/** How close to a decision boundary a value must be before another summation order may flip it. */
export const TIE = 1e-9;

export interface SpecNode {
  parent?: number;
  reward?: number;
  visits?: number;
  uncertainty?: number;
  terminal?: boolean;
  embedding?: number[];
}

export interface SpecTree {
  id?: string;
  nodes: SpecNode[];
}

export interface SpecForest {
  dim?: number;
  trees: SpecTree[];
}

export type BudgetMode =
  | { kind: 'perTree'; budget: number }
  | { kind: 'global'; total: number; minPerTree: number };

export interface SpecParams {
  alpha: number;
  tau: number;
  pruneRatio: number;
  widen: number;
  baseDepth: number;
  depthGain: number;
  /** Defaults to 4·baseDepth (SPEC §4). */
  maxDepth?: number;
  budget: BudgetMode;
}

export const DEFAULT_PARAMS: SpecParams = {
  alpha: 1,
  tau: 0.5,
  pruneRatio: 0.5,
  widen: 0.5,
  baseDepth: 4,
  depthGain: 1,
  budget: { kind: 'perTree', budget: 16 },
};

export interface PlanAllocation { node: number; branches: number; depth: number }
export interface PlanScore { node: number; contrast: number; weight: number; gradAlpha: number; gradTau: number }
export interface PlanGroup { parent: number; intensity: number }
export interface PlanTree {
  id: string;
  budget: number;
  unallocated: number;
  allocations: PlanAllocation[];
  pruned: number[];
  scores?: PlanScore[];
  groups?: PlanGroup[];
}
export interface Plan {
  params: { alpha: number; tau: number };
  trees: PlanTree[];
}

/** Where this reference's own decisions for one tree are within TIE of flipping. */
export interface TreeTies {
  /** Live children whose weight is within TIE (relative) of their group's prune threshold ρ·w*. */
  prune: Set<number>;
  /** Nodes at a largest-remainder cut within TIE: their whole-number share may move by one unit. */
  rounding: Set<number>;
  /** Nodes (any, allocated or not) whose depth sits within TIE of a rounding edge of ⌊D0·ψ^γ + 0.5⌋. */
  depth: Set<number>;
  /** Global mode: this tree's budget sits at a largest-remainder near-tie across trees. */
  budget: boolean;
}

export interface ReferenceResult {
  plan: Plan;
  ties: TreeTies[];
  /** Real-valued x_v per tree (before rounding), for diagnostics. */
  mass: number[][];
  /** depth_v of every node per tree, allocated or not (a rounding near-tie can hand a unit to another node). */
  depth: number[][];
}

// ---------------------------------------------------------------- §1 defaults

function reward(v: SpecNode): number { return v.reward ?? 0; }
function visits(v: SpecNode): number { return v.visits ?? 0; }
function uncertainty(v: SpecNode): number { return v.uncertainty ?? 0; }
function terminal(v: SpecNode): boolean { return v.terminal ?? false; }
function parentOf(v: SpecNode, index: number): number { return index === 0 ? -1 : (v.parent as number); }

/** Children of every node, in increasing index order (the sibling groups of SPEC §1). */
export function childrenOf(tree: SpecTree): number[][] {
  const children: number[][] = tree.nodes.map(() => []);
  tree.nodes.forEach((v, i) => {
    if (i > 0) children[parentOf(v, i)].push(i);
  });
  return children;
}

// ---------------------------------------------------------------- §2 scoring

/** s_ij: clamped cosine, 0 when either norm is 0 (which covers D = 0). */
export function similarity(a: readonly number[] | undefined, b: readonly number[] | undefined): number {
  const x = a ?? [];
  const y = b ?? [];
  let dot = 0;
  let xx = 0;
  let yy = 0;
  for (let d = 0; d < x.length; d++) {
    dot += x[d] * y[d];
    xx += x[d] * x[d];
    yy += y[d] * y[d];
  }
  if (xx === 0 || yy === 0) return 0;
  const s = dot / (Math.sqrt(xx) * Math.sqrt(yy));
  return Math.min(1, Math.max(-1, s));
}

/** d_ij = (1 − s_ij)/2, the spec's primary definition. */
export function distance(a: readonly number[] | undefined, b: readonly number[] | undefined): number {
  return (1 - similarity(a, b)) / 2;
}

/** Δ_ij = Δr_ij + Δu_ij, the reward part only when both siblings were visited. */
export function feedbackDifference(i: SpecNode, j: SpecNode): number {
  const dr = visits(i) > 0 && visits(j) > 0 ? Math.abs(reward(i) - reward(j)) : 0;
  const du = Math.abs(uncertainty(i) - uncertainty(j));
  return dr + du;
}

export interface GroupScores {
  contrast: number[];
  weight: number[];
  gradAlpha: number[];
  gradTau: number[];
  intensity: number;
}

/** SPEC §2 for one sibling group, given as its nodes in group order. */
export function scoreGroup(group: readonly SpecNode[], alpha: number, tau: number): GroupScores {
  const k = group.length;
  if (k === 1) return { contrast: [0], weight: [1], gradAlpha: [0], gradTau: [0], intensity: 0 };

  const contrast: number[] = [];
  const contrastDotA: number[] = [];
  for (let i = 0; i < k; i++) {
    let sumC = 0;
    let sumDc = 0;
    for (let j = 0; j < k; j++) {
      if (j === i) continue;
      const d = distance(group[i].embedding, group[j].embedding);
      const delta = feedbackDifference(group[i], group[j]);
      const denom = delta + alpha * d + EPSILON;
      sumC += delta / denom;
      sumDc += (-alpha * delta * d) / (denom * denom);
    }
    contrast.push(sumC / (k - 1));
    contrastDotA.push(sumDc / (k - 1));
  }

  const cMax = Math.max(...contrast);
  const unnormalized = contrast.map((c) => Math.exp((c - cMax) / tau));
  const z = unnormalized.reduce((s, e) => s + e, 0);
  const weight = unnormalized.map((e) => e / z);

  const meanDotA = weight.reduce((s, w, j) => s + w * contrastDotA[j], 0);
  const meanC = weight.reduce((s, w, j) => s + w * contrast[j], 0);
  const gradAlpha = contrastDotA.map((cd) => (cd - meanDotA) / tau);
  const gradTau = contrast.map((c) => -(c - meanC) / tau);
  const intensity = contrast.reduce((s, c) => s + c, 0) / k;
  return { contrast, weight, gradAlpha, gradTau, intensity };
}

export interface TreeScores {
  /** Per node; the root's entries are unused (it is in no group). */
  contrast: number[];
  weight: number[];
  gradAlpha: number[];
  gradTau: number[];
  /** Per node with children; undefined for leaves. */
  intensity: (number | undefined)[];
  children: number[][];
}

export function scoreTree(tree: SpecTree, alpha: number, tau: number): TreeScores {
  const n = tree.nodes.length;
  const children = childrenOf(tree);
  const out: TreeScores = {
    contrast: new Array<number>(n).fill(0),
    weight: new Array<number>(n).fill(1),
    gradAlpha: new Array<number>(n).fill(0),
    gradTau: new Array<number>(n).fill(0),
    intensity: new Array<number | undefined>(n).fill(undefined),
    children,
  };
  for (let p = 0; p < n; p++) {
    const kids = children[p];
    if (kids.length === 0) continue;
    const g = scoreGroup(kids.map((c) => tree.nodes[c]), alpha, tau);
    kids.forEach((c, idx) => {
      out.contrast[c] = g.contrast[idx];
      out.weight[c] = g.weight[idx];
      out.gradAlpha[c] = g.gradAlpha[idx];
      out.gradTau[c] = g.gradTau[idx];
    });
    out.intensity[p] = g.intensity;
  }
  return out;
}

// ---------------------------------------------------------------- §4 allocation

/** live(v): v is not terminal, or some child of v is live. Parents precede children, so go backwards. */
export function liveness(tree: SpecTree, children: number[][]): boolean[] {
  const n = tree.nodes.length;
  const live = new Array<boolean>(n).fill(false);
  for (let v = n - 1; v >= 0; v--) {
    live[v] = !terminal(tree.nodes[v]) || children[v].some((c) => live[c]);
  }
  return live;
}

export interface Pruning {
  /** E per parent (kept live children, group order). */
  kept: number[][];
  pruned: number[];
  ties: Set<number>;
}

/** For every group: X = live children, E = {i ∈ X : w_i ≥ ρ·w*}, pruned = X \ E. */
export function prune(scores: TreeScores, live: boolean[], rho: number): Pruning {
  const kept: number[][] = [];
  const pruned: number[] = [];
  const ties = new Set<number>();
  scores.children.forEach((kids) => {
    const x = kids.filter((c) => live[c]);
    if (x.length === 0) {
      kept.push([]);
      return;
    }
    const wStar = Math.max(...x.map((c) => scores.weight[c]));
    const threshold = rho * wStar;
    const e: number[] = [];
    for (const c of x) {
      const w = scores.weight[c];
      if (w >= threshold) e.push(c);
      else pruned.push(c);
      if (threshold > 0 && Math.abs(w - threshold) <= TIE * threshold) ties.add(c);
    }
    kept.push(e);
  });
  pruned.sort((a, b) => a - b);
  return { kept, pruned, ties };
}

/** Real-valued x_v for one tree with budget B, flowing mass root-down (parents precede children). */
export function flow(tree: SpecTree, scores: TreeScores, live: boolean[], kept: number[][], budget: number, widen: number): number[] {
  const n = tree.nodes.length;
  const x = new Array<number>(n).fill(0);
  if (!live[0]) return x;
  const mass = new Array<number>(n).fill(0);
  mass[0] = budget;
  for (let p = 0; p < n; p++) {
    const m = mass[p];
    if (m === 0) continue;
    const e = kept[p];
    if (e.length === 0) {
      x[p] = m;
      continue;
    }
    x[p] = terminal(tree.nodes[p]) ? 0 : m * widen * (scores.intensity[p] as number);
    const rest = m - x[p];
    const wSum = e.reduce((s, c) => s + scores.weight[c], 0);
    for (const c of e) mass[c] = (rest * scores.weight[c]) / wSum;
  }
  return x;
}

export interface Rounded {
  units: number[];
  /** Indices whose unit count another correct summation order could move by one. */
  ties: Set<number>;
}

/**
 * Largest remainder: ⌊x⌋ each, then the `total − Σ⌊x⌋` remaining units to the entries with
 * x > 0 by larger fractional part, ties to the smaller index.
 */
export function largestRemainder(x: readonly number[], total: number): Rounded {
  const units = x.map((v) => Math.floor(v));
  const remaining = total - units.reduce((s, u) => s + u, 0);
  const frac = x.map((v, i) => v - units[i]);
  const order = x.map((_, i) => i).filter((i) => x[i] > 0);
  order.sort((a, b) => frac[b] - frac[a] || a - b);
  const ties = new Set<number>();
  if (remaining < 0 || remaining > order.length) {
    throw new Error(`largest remainder: ${remaining} units left for ${order.length} candidates (Σx = ${x.reduce((s, v) => s + v, 0)}, total ${total})`);
  }
  for (let r = 0; r < remaining; r++) units[order[r]]++;

  // Another order of summation can swap the last winner and the first loser when their
  // fractional parts are this close. An x that lands a hair either side of an integer cannot
  // change the result: just below, its fraction ≈ 1 ranks first and wins back the unit.
  if (remaining > 0 && remaining < order.length) {
    const lastIn = frac[order[remaining - 1]];
    const firstOut = frac[order[remaining]];
    if (lastIn - firstOut <= TIE) {
      for (const i of order) if (frac[i] >= firstOut - TIE && frac[i] <= lastIn + TIE) ties.add(i);
    }
  }
  return { units, ties };
}

/** depth_v = clamp(⌊D0·ψ_v^γ + 0.5⌋, 1, maxDepth), ψ_v = Π k_p·w_c along root→v. */
export function depths(scores: TreeScores, tree: SpecTree, params: SpecParams): { depth: number[]; ties: Set<number> } {
  const n = tree.nodes.length;
  const psi = new Array<number>(n).fill(1);
  for (let v = 1; v < n; v++) {
    const p = parentOf(tree.nodes[v], v);
    psi[v] = psi[p] * scores.children[p].length * scores.weight[v];
  }
  const maxDepth = params.maxDepth ?? 4 * params.baseDepth;
  const ties = new Set<number>();
  const depth = psi.map((s, v) => {
    const raw = params.baseDepth * Math.pow(s, params.depthGain) + 0.5;
    const edge = Math.round(raw);
    // floor gives edge or edge − 1; the clamp hides the difference outside [2, maxDepth].
    if (Math.abs(raw - edge) <= TIE * Math.max(1, raw) && edge >= 2 && edge <= maxDepth) ties.add(v);
    return Math.min(maxDepth, Math.max(1, Math.floor(raw)));
  });
  return { depth, ties };
}

/** Q_t = 1e−3 + mean I_p over the tree's groups with k ≥ 2 (the mean being 0 when there are none). */
export function treeContestedness(scores: TreeScores): number {
  const groups = scores.children
    .map((kids, p) => ({ k: kids.length, i: scores.intensity[p] }))
    .filter((g) => g.k >= 2);
  const mean = groups.length === 0 ? 0 : groups.reduce((s, g) => s + (g.i as number), 0) / groups.length;
  return 1e-3 + mean;
}

/** Global budget mode: integer budgets per tree (0 for trees whose root is not live). */
export function globalBudgets(live: boolean[], q: number[], total: number, minPerTree: number): { budgets: number[]; ties: Set<number> } {
  const liveTrees = live.map((l, t) => (l ? t : -1)).filter((t) => t >= 0);
  if (total < minPerTree * liveTrees.length) {
    throw new Error(`total budget ${total} < minPerTree ${minPerTree} × ${liveTrees.length} live trees`);
  }
  if (liveTrees.length === 0) return { budgets: live.map(() => 0), ties: new Set() };
  const qSum = liveTrees.reduce((s, t) => s + q[t], 0);
  const spare = total - minPerTree * liveTrees.length;
  const mass = live.map((l, t) => (l ? minPerTree + (spare * q[t]) / qSum : 0));
  const { units, ties } = largestRemainder(mass, total);
  return { budgets: units, ties };
}

// ---------------------------------------------------------------- the whole plan

export function referencePlan(forest: SpecForest, params: SpecParams, withScores = true): ReferenceResult {
  const trees = forest.trees;
  const scored = trees.map((t) => scoreTree(t, params.alpha, params.tau));
  const live = trees.map((t, i) => liveness(t, scored[i].children));

  let budgets: number[];
  let budgetTies = new Set<number>();
  if (params.budget.kind === 'perTree') {
    const b = params.budget.budget;
    budgets = trees.map(() => b);
  } else {
    const g = globalBudgets(live.map((l) => l[0]), scored.map(treeContestedness), params.budget.total, params.budget.minPerTree);
    budgets = g.budgets;
    budgetTies = g.ties;
  }

  const ties: TreeTies[] = [];
  const masses: number[][] = [];
  const depthAll: number[][] = [];
  const planTrees: PlanTree[] = trees.map((tree, t) => {
    const s = scored[t];
    const pr = prune(s, live[t], params.pruneRatio);
    const x = flow(tree, s, live[t], pr.kept, budgets[t], params.widen);
    masses.push(x);
    const rootLive = live[t][0];
    const rounded = rootLive ? largestRemainder(x, budgets[t]) : { units: x.map(() => 0), ties: new Set<number>() };
    const dp = depths(s, tree, params);
    depthAll.push(dp.depth);
    const allocations: PlanAllocation[] = [];
    rounded.units.forEach((b, v) => {
      if (b > 0) allocations.push({ node: v, branches: b, depth: dp.depth[v] });
    });
    ties.push({ prune: pr.ties, rounding: rounded.ties, depth: dp.ties, budget: budgetTies.has(t) });
    const out: PlanTree = {
      id: tree.id ?? String(t),
      budget: budgets[t],
      unallocated: rootLive ? 0 : budgets[t],
      allocations,
      pruned: pr.pruned,
    };
    if (withScores) {
      out.scores = tree.nodes.slice(1).map((_, i) => ({
        node: i + 1,
        contrast: s.contrast[i + 1],
        weight: s.weight[i + 1],
        gradAlpha: s.gradAlpha[i + 1],
        gradTau: s.gradTau[i + 1],
      }));
      out.groups = s.children
        .map((kids, p) => ({ kids, p }))
        .filter((g) => g.kids.length > 0)
        .map((g) => ({ parent: g.p, intensity: s.intensity[g.p] as number }));
    }
    return out;
  });
  return { plan: { params: { alpha: params.alpha, tau: params.tau }, trees: planTrees }, ties, mass: masses, depth: depthAll };
}
