import { assertPackedForest, type PackedForest } from '../forest/packed.js';
import type { Scores } from '../score/types.js';
import type { Allocation } from './allocate.js';
import type { Rule } from './options.js';

export interface NodeAllocation { node: number; branches: number; depth: number }
export interface NodeScore { node: number; contrast: number; weight: number; gradAlpha: number; gradTau: number }
export interface GroupScore { parent: number; intensity: number }

/** One tree of the plan file (docs/ALGORITHM.md §5). `scores` and `groups` appear only when asked for. */
export interface TreePlan {
  id: string;
  budget: number;
  unallocated: number;
  allocations: NodeAllocation[];
  pruned: number[];
  scores?: NodeScore[];
  groups?: GroupScore[];
}

export interface PlanJson {
  /** α, τ and the rule (v3, v2 or v1) that made the plan. */
  params: { alpha: number; tau: number; rule?: Rule };
  /** Global budget mode only: the total and what no live tree could take. */
  totalBudget?: number;
  unallocated?: number;
  trees: TreePlan[];
}

/**
 * A plan about to carry NaN or ±Infinity (JSON would print null). Never expected: inputs and
 * parameters are range-checked so that every score is finite; this is the last guard, so that
 * a bug shows as an internal error instead of a plan a trainer would follow.
 */
export class NonFiniteOutputError extends Error {
  override name = 'NonFiniteOutputError';
}

function finite(x: number, tree: string, what: string): void {
  if (!Number.isFinite(x)) throw new NonFiniteOutputError(`internal error: the plan of tree ${JSON.stringify(tree)} would carry ${x} as ${what}; nothing was written`);
}

/** Throws `NonFiniteOutputError` if any number of one tree's plan is not finite. O(size). */
export function assertFiniteTreePlan(tree: TreePlan): TreePlan {
  const id = tree.id;
  finite(tree.budget, id, 'its budget');
  finite(tree.unallocated, id, 'its unallocated budget');
  for (const a of tree.allocations) { finite(a.branches, id, `node ${a.node}'s branches`); finite(a.depth, id, `node ${a.node}'s depth`); }
  if (tree.scores) {
    for (const s of tree.scores) {
      finite(s.contrast, id, `node ${s.node}'s contrast`); finite(s.weight, id, `node ${s.node}'s weight`);
      finite(s.gradAlpha, id, `node ${s.node}'s gradAlpha`); finite(s.gradTau, id, `node ${s.node}'s gradTau`);
    }
  }
  if (tree.groups) for (const g of tree.groups) finite(g.intensity, id, `the intensity of the fork at node ${g.parent}`);
  return tree;
}

/** Throws `NonFiniteOutputError` if any number of the plan is not finite. */
export function assertFinitePlan(plan: PlanJson): PlanJson {
  for (const [k, x] of [['alpha', plan.params.alpha], ['tau', plan.params.tau], ['totalBudget', plan.totalBudget ?? 0], ['unallocated', plan.unallocated ?? 0]] as const) {
    if (!Number.isFinite(x)) throw new NonFiniteOutputError(`internal error: the plan would carry ${x} as ${k}; nothing was written`);
  }
  for (const tree of plan.trees) assertFiniteTreePlan(tree);
  return plan;
}

/** Builds the docs/ALGORITHM.md §5 plan object. Node numbers are tree-local indices. */
export function planToJson(forest: PackedForest, scores: Scores, allocation: Allocation, options: { includeScores?: boolean } = {}): PlanJson {
  assertPackedForest(forest);
  const { treeOffset, groupOffset, groupParent, treeGroupOffset } = forest;
  const trees: TreePlan[] = [];
  for (let t = 0; t < forest.treeCount; t++) {
    const lo = treeOffset[t], hi = treeOffset[t + 1];
    const allocations: NodeAllocation[] = [];
    const pruned: number[] = [];
    for (let v = lo; v < hi; v++) {
      if (allocation.branches[v] > 0) allocations.push({ node: v - lo, branches: allocation.branches[v], depth: allocation.depth[v] });
      if (allocation.pruned[v]) pruned.push(v - lo);
    }
    const tree: TreePlan = { id: forest.treeIds[t], budget: allocation.treeBudget[t], unallocated: allocation.unallocated[t], allocations, pruned };
    if (options.includeScores) {
      const nodeScores: NodeScore[] = [];
      for (let v = lo + 1; v < hi; v++) {
        nodeScores.push({ node: v - lo, contrast: scores.contrast[v], weight: scores.weight[v], gradAlpha: scores.gradAlpha[v], gradTau: scores.gradTau[v] });
      }
      const groups: GroupScore[] = [];
      for (let g = treeGroupOffset[t]; g < treeGroupOffset[t + 1]; g++) {
        groups.push({ parent: groupParent[g] - lo, intensity: groupOffset[g + 1] - groupOffset[g] > 1 ? scores.intensity[g] : 0 });
      }
      tree.scores = nodeScores;
      tree.groups = groups;
    }
    trees.push(tree);
  }
  const plan: PlanJson = { params: { alpha: scores.params.alpha, tau: scores.params.tau, rule: allocation.options.rule }, trees };
  if (allocation.options.totalBudget !== undefined) {
    plan.totalBudget = allocation.options.totalBudget;
    plan.unallocated = allocation.unallocatedTotal;
  }
  return assertFinitePlan(plan);
}
