import type { PackedForest } from '../forest/packed.js';
import type { Scores } from '../score/types.js';
import type { Allocation } from './allocate.js';

export interface NodeAllocation { node: number; branches: number; depth: number }
export interface NodeScore { node: number; contrast: number; weight: number; gradAlpha: number; gradTau: number }
export interface GroupScore { parent: number; intensity: number }

/** One tree of the plan file (SPEC §5). `scores` and `groups` appear only when asked for. */
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
  /** α, τ and the rule (v2 or v1) that made the plan. */
  params: { alpha: number; tau: number; rule?: 'v1' | 'v2' };
  /** Global budget mode only: the total and what no live tree could take. */
  totalBudget?: number;
  unallocated?: number;
  trees: TreePlan[];
}

/** Builds the SPEC §5 plan object. Node numbers are tree-local indices. */
export function planToJson(forest: PackedForest, scores: Scores, allocation: Allocation, options: { includeScores?: boolean } = {}): PlanJson {
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
  return plan;
}
