import { assertPackedForest, type PackedForest } from '../forest/packed.js';
import type { Scores } from '../score/types.js';
import { emptySplit } from './live.js';
import { resolveAllocateOptions, type AllocateOptions, type ResolvedAllocateOptions } from './options.js';
import { LargestRemainder } from './rounding.js';
import { placeTrees, prepareTrees, treeSignalRange, type TreeWork } from './trees.js';
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
  const rows = (rule: ResolvedAllocateOptions['rule']) => (opts.rule === rule ? nodeCount : 0);
  return {
    forest, weight: scores.weight, intensity: scores.intensity, options: opts,
    live: sharedArray(Uint8Array, nodeCount),
    split: emptySplit(forest, (Ctor, n) => sharedArray(Ctor as never, n)),
    priority: f64(nodeCount), signal: f64(treeCount), treeBudget: f64(treeCount), unallocated: f64(treeCount),
    mass: f64(nodeCount), branches: sharedArray(Int32Array, nodeCount), depth: sharedArray(Int32Array, nodeCount),
    reach: sharedArray(Uint8Array, rows('v2')), logPsi: f64(rows('v2')), inflow: f64(rows('v1')),
    childStart: sharedArray(Int32Array, rows('v3')), childCount: sharedArray(Int32Array, rows('v3')), rowIntensity: f64(rows('v3')),
    nonFinite: sharedArray(Uint8Array, 1),
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
    branches: work.branches, depth: work.depth, priority: work.priority, pruned: work.split.pruned, live: work.live,
  };
}

/**
 * Each tree's evidence for the global split, S_t in Q_t = q0 + S_t. v1, v2: the mean intensity
 * of its groups with k ≥ 2 (0 without one). v3: the intensity of the root's group (0 when the
 * root has fewer than two children) — how much its fresh rollouts disagree.
 */
export function treeSignals(forest: PackedForest, intensity: Scores['intensity'], rule: ResolvedAllocateOptions['rule']): Float64Array {
  const out = new Float64Array(forest.treeCount);
  treeSignalRange(forest, intensity, rule, 0, forest.treeCount, out);
  return out;
}

/**
 * Global budget: each live tree gets μ plus a share of the rest proportional to
 * Q_t = q0 + S_t (`treeSignals`; q0: 1e-3 under v1, 0.25 by default under v2 and v3); whole
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
