import { assertPackedForest, type PackedForest } from '../forest/packed.js';
import type { Scores } from '../score/types.js';
import { resolveAllocateOptions, type AllocateOptions, type ResolvedAllocateOptions } from './options.js';
import { LargestRemainder } from './rounding.js';
import { placeTrees, prepareTrees, type TreeWork } from './trees.js';
import { OptionError } from '../util/errors.js';
import { sharedArray } from '../util/shared.js';

/** A plan in packed form: per-tree and per-row arrays aligned with the `PackedForest`. */
export interface Allocation {
  readonly options: ResolvedAllocateOptions;
  /** Whole-number budget of each tree (given, or its share of the global budget). */
  readonly treeBudget: Float64Array;
  /** Budget a tree could not place because its root is not live. */
  readonly unallocated: Float64Array;
  /** In global mode with no live tree at all, the whole total; otherwise 0. */
  readonly unallocatedTotal: number;
  /** x_v: real-valued rollouts to start at each row, before rounding. */
  readonly mass: Float64Array;
  /** b_v: whole rollouts to start at each row. */
  readonly branches: Int32Array;
  /** Depth of each row with branches > 0 (0 elsewhere): v2 and v3, the fork horizon; v1, the steps the new rollouts take. */
  readonly depth: Int32Array;
  /** ψ_v, priority relative to a uniform split along the path from the root. */
  readonly priority: Float64Array;
  /** 1 for live rows pruned in their sibling group. */
  readonly pruned: Uint8Array;
  /** 1 for rows where live(v) holds. */
  readonly live: Uint8Array;
}

/**
 * Scores → rollouts per node, depths and early stops (docs/ALGORITHM.md, "Allocation"), under
 * rule v3 (default), v2 or v1. Pure; allocates its outputs only. `allocateOnThreads` gives the
 * same plan bit for bit on the CPU scorer's worker threads.
 */
export function allocate(forest: PackedForest, scores: Scores, options: AllocateOptions = {}): Allocation {
  const work = beginAllocation(forest, scores, options);
  prepareTrees(work, 0, forest.treeCount);
  const unallocatedTotal = budgetTrees(work, scores);
  placeTrees(work, 0, forest.treeCount);
  return finishAllocation(work, unallocatedTotal);
}

/**
 * The checks and the arrays of an allocation (`TreeWork`), before its two per-tree passes
 * (`prepareTrees`, then `placeTrees` once `budgetTrees` has set every tree's budget).
 */
export function beginAllocation(forest: PackedForest, scores: Scores, options: AllocateOptions): TreeWork {
  assertPackedForest(forest);
  const opts = resolveAllocateOptions(options, scores.params.rule);
  const { treeCount, nodeCount, groupCount } = forest;
  if (scores.weight.length !== nodeCount || scores.intensity.length !== groupCount) {
    throw new RangeError(`scores do not match the forest (${scores.weight.length} weights for ${nodeCount} nodes)`);
  }
  const f64 = (n: number) => sharedArray(Float64Array, n);
  const i32 = (n: number) => sharedArray(Int32Array, n);
  const u8 = (n: number) => sharedArray(Uint8Array, n);
  return {
    forest, weight: scores.weight, intensity: scores.intensity, options: opts,
    childStart: i32(nodeCount), childCount: i32(nodeCount), rowIntensity: f64(nodeCount),
    live: u8(nodeCount), kept: u8(nodeCount), pruned: u8(nodeCount), keptWeight: f64(nodeCount), keptCount: i32(nodeCount),
    priority: f64(nodeCount), inflow: f64(nodeCount), mass: f64(nodeCount), branches: i32(nodeCount), depth: i32(nodeCount),
    signal: f64(treeCount), treeBudget: f64(treeCount), unallocated: f64(treeCount),
    nonFinite: u8(1),
  };
}

/**
 * Between the passes: names a non-finite score, then sets every tree's budget (given, or its
 * share of the global total, rounded across trees). Returns the total that could not be placed.
 */
export function budgetTrees(work: TreeWork, scores: Scores): number {
  const { forest, treeBudget, options: opts } = work;
  if (work.nonFinite[0]) assertFiniteScores(forest, scores);
  if (opts.totalBudget !== undefined) {
    return splitGlobalBudget(forest, work.signal, work.live, opts.totalBudget, opts.minPerTree, opts.treeFloor, treeBudget);
  }
  const b = opts.budget;
  if (typeof b !== 'number' && b.length !== forest.treeCount) throw new OptionError(`budget has ${b.length} entries for ${forest.treeCount} trees`);
  for (let t = 0; t < forest.treeCount; t++) treeBudget[t] = typeof b === 'number' ? b : b[t];
  return 0;
}

/** The allocation the passes filled in. */
export function finishAllocation(work: TreeWork, unallocatedTotal: number): Allocation {
  return {
    options: work.options, treeBudget: work.treeBudget, unallocated: work.unallocated, unallocatedTotal, mass: work.mass,
    branches: work.branches, depth: work.depth, priority: work.priority, pruned: work.pruned, live: work.live,
  };
}

/**
 * Global budget: each live tree gets μ plus a share of the rest proportional to
 * Q_t = q0 + S_t (S_t and q0's default are the rule's: `treeSignal`, `treeFloor`); whole
 * numbers by largest remainder across trees. Returns what could not be placed (all of it when
 * no tree is live).
 */
function splitGlobalBudget(
  forest: PackedForest,
  signal: Float64Array,
  live: Uint8Array,
  total: number,
  minPerTree: number,
  treeFloor: number,
  out: Float64Array,
): number {
  const { treeCount, treeOffset } = forest;
  const q = new Float64Array(treeCount);
  let liveTrees = 0, qSum = 0;
  for (let t = 0; t < treeCount; t++) {
    if (!live[treeOffset[t]]) continue;
    liveTrees++;
    q[t] = treeFloor + signal[t];
    qSum += q[t];
  }
  if (total < minPerTree * liveTrees) {
    throw new OptionError(`total budget ${total} is below minPerTree ${minPerTree} × ${liveTrees} live trees`);
  }
  if (liveTrees === 0) return total;
  const share = new Float64Array(treeCount);
  const rest = total - minPerTree * liveTrees;
  for (let t = 0; t < treeCount; t++) if (q[t] > 0) share[t] = minPerTree + (rest * q[t]) / qSum;
  new LargestRemainder().round(share, 0, treeCount, total, out);
  return 0;
}

/** A NaN weight would silently count as pruned; a backend that produced one has a bug to report. */
function assertFiniteScores(forest: PackedForest, scores: Scores): void {
  for (let v = 0; v < forest.nodeCount; v++) {
    if (!Number.isFinite(scores.weight[v])) {
      const t = forest.nodeTree[v];
      throw new Error(`the ${scores.backend} backend returned a non-finite weight for tree ${JSON.stringify(forest.treeIds[t])} (#${t}), node ${v - forest.treeOffset[t]}`);
    }
  }
  for (let g = 0; g < forest.groupCount; g++) {
    if (!Number.isFinite(scores.intensity[g])) {
      const p = forest.groupParent[g], t = forest.nodeTree[p];
      throw new Error(`the ${scores.backend} backend returned a non-finite intensity for tree ${JSON.stringify(forest.treeIds[t])} (#${t}), parent node ${p - forest.treeOffset[t]}`);
    }
  }
}
