import type { PackedForest } from '../forest/packed.js';
import type { RealArray } from '../score/types.js';
import { splitTree } from './liveness.js';
import type { ResolvedAllocateOptions } from './options.js';
import { pathPriority } from './priority.js';
import { LargestRemainder } from './rounding.js';
import { ruleNamed } from './rules/index.js';
import type { ForestRows } from './rules/rule.js';

/**
 * Everything the per-tree passes of `allocate` read and write. Every pass over a range of trees
 * touches only those trees' rows and entries, so ranges can run on different threads
 * (`allocateOnThreads`) and give the plan of one thread bit for bit. Arrays are over shared
 * memory when the runtime has it, so that worker threads can fill them in place. The per-row
 * arrays are the `ForestRows` the rule reads (`packedRows`): the forest's groups seen from
 * their head rows.
 */
export interface TreeWork {
  /** The forest (in a worker: its numbers and typed arrays only). */
  forest: PackedForest;
  /** w per row and I per group (the scores). */
  weight: RealArray;
  intensity: RealArray;
  options: ResolvedAllocateOptions;
  /** (nodeCount each) each row's children (`groupChild[childStart .. + childCount]`) and the intensity of the group it heads. */
  childStart: Int32Array;
  childCount: Int32Array;
  rowIntensity: Float64Array;
  /** (nodeCount) live(v); the kept/pruned split (by child), Σw and |E| of the kept children (by head row). */
  live: Uint8Array;
  kept: Uint8Array;
  pruned: Uint8Array;
  keptWeight: Float64Array;
  keptCount: Int32Array;
  /** (nodeCount) ψ_v, the rule's flow state, x_v, b_v and depth. */
  priority: Float64Array;
  inflow: Float64Array;
  mass: Float64Array;
  branches: Int32Array;
  depth: Int32Array;
  /** (treeCount) S_t for the global split. */
  signal: Float64Array;
  /** (treeCount) whole-number budget of each tree, set between the two passes. */
  treeBudget: Float64Array;
  /** (treeCount) budget a tree could not place. */
  unallocated: Float64Array;
  /** (1) set to 1 when a range holds a non-finite weight or intensity (the caller then names it). */
  nonFinite: Uint8Array;
}

/** The rows of `work` as the rules read them. */
function packedRows(work: TreeWork): ForestRows {
  const { forest } = work;
  return {
    parentRow: forest.parentRow, childStart: work.childStart, childCount: work.childCount, child: forest.groupChild,
    terminal: forest.terminal, visits: forest.visits, reward: forest.reward, weight: work.weight, intensity: work.rowIntensity,
    live: work.live, kept: work.kept, pruned: work.pruned, keptWeight: work.keptWeight, keptCount: work.keptCount,
    priority: work.priority, inflow: work.inflow, mass: work.mass,
  };
}

/** Per-thread working memory of the rounding (each worker thread has its own module instance). */
const rounding = new LargestRemainder();

/**
 * First pass over trees [t0, t1): the finiteness of their scores, their rows' view of the
 * groups, liveness, the rule's early stop, the rule's signal for the global split, and ψ.
 */
export function prepareTrees(work: TreeWork, t0: number, t1: number): void {
  const { forest, weight, intensity } = work;
  const { treeOffset, treeGroupOffset, childGroup, groupOffset } = forest;
  const lo = treeOffset[t0], hi = treeOffset[t1], g0 = treeGroupOffset[t0], g1 = treeGroupOffset[t1];
  let finite = true;
  for (let v = lo; v < hi; v++) if (!Number.isFinite(weight[v])) finite = false;
  for (let g = g0; g < g1; g++) if (!Number.isFinite(intensity[g])) finite = false;
  if (!finite) work.nonFinite[0] = 1;
  const { childStart, childCount, rowIntensity } = work;
  for (let v = lo; v < hi; v++) {
    const g = childGroup[v];
    if (g < 0) { childStart[v] = 0; childCount[v] = 0; rowIntensity[v] = 0; continue; }
    childStart[v] = groupOffset[g];
    childCount[v] = groupOffset[g + 1] - groupOffset[g];
    rowIntensity[v] = intensity[g];
  }
  const rule = ruleNamed(work.options.rule);
  const rows = packedRows(work);
  const pruneRatio = work.options.pruneRatio;
  for (let t = t0; t < t1; t++) {
    const a = treeOffset[t], b = treeOffset[t + 1];
    splitTree(rule, rows, a, b, pruneRatio);
    work.signal[t] = rule.treeSignal(rows, a, b);
    pathPriority(rows, a, b);
  }
}

/** Second pass over trees [t0, t1), once `treeBudget` is set: each tree's mass under its rule, its rounding, and depths. */
export function placeTrees(work: TreeWork, t0: number, t1: number): void {
  const { forest, treeBudget, unallocated, mass, branches } = work;
  const { treeOffset } = forest;
  const rule = ruleNamed(work.options.rule);
  const rows = packedRows(work);
  for (let t = t0; t < t1; t++) {
    const placed = rule.mass(rows, treeOffset[t], treeOffset[t + 1], treeBudget[t], work.options);
    if (!placed) unallocated[t] = treeBudget[t];
  }

  for (let t = t0; t < t1; t++) {
    if (unallocated[t] > 0 || treeBudget[t] === 0) continue;
    rounding.round(mass, treeOffset[t], treeOffset[t + 1], treeBudget[t], branches);
  }

  const { priority, depth } = work;
  const { baseDepth, depthGain, minDepth, maxDepth } = work.options;
  for (let v = treeOffset[t0]; v < treeOffset[t1]; v++) {
    if (branches[v] > 0) {
      const d = Math.floor(baseDepth * Math.pow(priority[v], depthGain) + 0.5);
      depth[v] = Math.min(maxDepth, Math.max(minDepth, d));
    }
  }
}

/** The passes as worker tasks (`CpuScorer.runOnThreads`): `data` is a `TreeWork` whose forest is its shared fields. */
export function prepareTreesTask(data: Record<string, unknown>, t0: number, t1: number): void {
  prepareTrees(data as unknown as TreeWork, t0, t1);
}

export function placeTreesTask(data: Record<string, unknown>, t0: number, t1: number): void {
  placeTrees(data as unknown as TreeWork, t0, t1);
}
