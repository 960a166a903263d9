import { assertPackedForest, type PackedForest } from '../forest/packed.js';
import type { Scores } from '../score/types.js';
import { liveNodes, splitGroups } from './live.js';
import { resolveAllocateOptions, type AllocateOptions, type ResolvedAllocateOptions } from './options.js';
import { LargestRemainder } from './rounding.js';
import { OptionError } from '../util/errors.js';

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
  /** Depth limit of the new rollouts at each row with branches > 0 (0 elsewhere). */
  readonly depth: Int32Array;
  /** ψ_v, priority relative to a uniform split along the path from the root. */
  readonly priority: Float64Array;
  /** 1 for live rows pruned in their sibling group. */
  readonly pruned: Uint8Array;
  /** 1 for rows where live(v) holds. */
  readonly live: Uint8Array;
}

/** SPEC §4: scores → rollouts per node, depths and early stops. Pure; allocates its outputs only. */
export function allocate(forest: PackedForest, scores: Scores, options: AllocateOptions = {}): Allocation {
  assertPackedForest(forest);
  const opts = resolveAllocateOptions(options);
  const { treeCount, nodeCount, treeOffset, terminal, childGroup, parentRow, groupOffset, groupChild } = forest;
  if (scores.weight.length !== nodeCount || scores.intensity.length !== forest.groupCount) {
    throw new RangeError(`scores do not match the forest (${scores.weight.length} weights for ${nodeCount} nodes)`);
  }
  const { weight, intensity } = scores;
  assertFiniteScores(forest, scores);
  const live = liveNodes(forest);
  const split = splitGroups(forest, weight, live, opts.pruneRatio);

  const treeBudget = new Float64Array(treeCount);
  let unallocatedTotal = 0;
  if (opts.totalBudget !== undefined) {
    unallocatedTotal = splitGlobalBudget(forest, intensity, live, opts.totalBudget, opts.minPerTree, treeBudget);
  } else {
    const b = opts.budget;
    if (typeof b !== 'number' && b.length !== treeCount) throw new OptionError(`budget has ${b.length} entries for ${treeCount} trees`);
    for (let t = 0; t < treeCount; t++) treeBudget[t] = typeof b === 'number' ? b : b[t];
  }

  // Mass flows parent → kept children; rows are in parent-first order within each tree.
  const inflow = new Float64Array(nodeCount);
  const mass = new Float64Array(nodeCount);
  const unallocated = new Float64Array(treeCount);
  for (let t = 0; t < treeCount; t++) {
    const root = treeOffset[t];
    if (!live[root]) { unallocated[t] = treeBudget[t]; continue; }
    inflow[root] = treeBudget[t];
    for (let v = root; v < treeOffset[t + 1]; v++) {
      const m = inflow[v];
      if (m === 0) continue;
      const g = childGroup[v];
      if (g < 0 || split.keptCount[g] === 0) { mass[v] = m; continue; }
      const x = terminal[v] ? 0 : m * opts.widen * intensity[g];
      mass[v] = x;
      const share = (m - x) / split.keptWeight[g];
      for (let s = groupOffset[g]; s < groupOffset[g + 1]; s++) {
        const c = groupChild[s];
        if (split.kept[c]) inflow[c] = share * weight[c];
      }
    }
  }

  const branches = new Int32Array(nodeCount);
  const rounding = new LargestRemainder();
  for (let t = 0; t < treeCount; t++) {
    if (unallocated[t] > 0 || treeBudget[t] === 0) continue;
    rounding.round(mass, treeOffset[t], treeOffset[t + 1], treeBudget[t], branches);
  }

  const priority = new Float64Array(nodeCount);
  const depth = new Int32Array(nodeCount);
  for (let v = 0; v < nodeCount; v++) {
    const p = parentRow[v];
    priority[v] = p < 0 ? 1 : priority[p] * (groupOffset[childGroup[p] + 1] - groupOffset[childGroup[p]]) * weight[v];
    if (branches[v] > 0) {
      const d = Math.floor(opts.baseDepth * Math.pow(priority[v], opts.depthGain) + 0.5);
      depth[v] = Math.min(opts.maxDepth, Math.max(opts.minDepth, d));
    }
  }
  return { options: opts, treeBudget, unallocated, unallocatedTotal, mass, branches, depth, priority, pruned: split.pruned, live };
}

/**
 * Global budget (SPEC §4): each live tree gets μ plus a share of the rest proportional to
 * Q_t = 1e-3 + mean intensity of its groups with k >= 2; whole numbers by largest remainder
 * across trees. Returns what could not be placed (all of it when no tree is live).
 */
function splitGlobalBudget(
  forest: PackedForest,
  intensity: Scores['intensity'],
  live: Uint8Array,
  total: number,
  minPerTree: number,
  out: Float64Array,
): number {
  const { treeCount, treeOffset, treeGroupOffset, groupOffset } = forest;
  const q = new Float64Array(treeCount);
  let liveTrees = 0, qSum = 0;
  for (let t = 0; t < treeCount; t++) {
    if (!live[treeOffset[t]]) continue;
    liveTrees++;
    let sum = 0, count = 0;
    for (let g = treeGroupOffset[t]; g < treeGroupOffset[t + 1]; g++) {
      if (groupOffset[g + 1] - groupOffset[g] >= 2) { sum += intensity[g]; count++; }
    }
    q[t] = 1e-3 + (count > 0 ? sum / count : 0);
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
