import type { PackedForest } from '../forest/packed.js';
import type { RealArray } from '../score/types.js';
import { liveRows, splitGroupRange, type GroupSplit } from './live.js';
import type { ResolvedAllocateOptions, Rule } from './options.js';
import { logPriorityRows } from './priority.js';
import { LargestRemainder } from './rounding.js';
import { flowClaimsV2 } from './v2.js';
import { ContestFlowScratch, contestFlowRowArrays, fillContestFlowRows, flowContestV3, splitGroupRangeV3, type ContestFlowRows } from './v3.js';

/**
 * Everything the per-tree passes of `allocate` read and write. Every pass over a range of trees
 * touches only those trees' rows, groups and entries, so ranges can run on different threads
 * (`allocateOnThreads`) and give the plan of one thread bit for bit. Arrays are over shared
 * memory when the runtime has it, so that worker threads can fill them in place.
 */
export interface TreeWork {
  /** The forest (in a worker: its numbers and typed arrays only). */
  forest: PackedForest;
  /** w per row and I per group (the scores). */
  weight: RealArray;
  intensity: RealArray;
  options: ResolvedAllocateOptions;
  /** (nodeCount) live(v). */
  live: Uint8Array;
  /** (nodeCount / groupCount) the kept/pruned split. */
  split: GroupSplit;
  /** (nodeCount) ψ_v. */
  priority: Float64Array;
  /** (treeCount) S_t for the global split (`treeSignals`). */
  signal: Float64Array;
  /** (treeCount) whole-number budget of each tree, set between the two passes. */
  treeBudget: Float64Array;
  /** (treeCount) budget a tree could not place. */
  unallocated: Float64Array;
  /** (nodeCount) x_v, b_v and depth. */
  mass: Float64Array;
  branches: Int32Array;
  depth: Int32Array;
  /** v2 (nodeCount; else empty): rows reached through kept children, and ln ψ for scaled claims. */
  reach: Uint8Array;
  logPsi: Float64Array;
  /** v1 (nodeCount; else empty): the mass flowing into each row. */
  inflow: Float64Array;
  /** v3 (nodeCount each; else empty): each row's children and the intensity of the group it heads. */
  childStart: Int32Array;
  childCount: Int32Array;
  rowIntensity: Float64Array;
  /** (1) set to 1 when a range holds a non-finite weight or intensity (the caller then names it). */
  nonFinite: Uint8Array;
}

/** Per-thread working memory of the passes (each worker thread has its own module instance). */
const contestScratch = new ContestFlowScratch();
const rounding = new LargestRemainder();

/**
 * First pass over trees [t0, t1): the finiteness of their scores, liveness, the kept/pruned
 * split of their groups, their signal for the global split, and ψ along their paths.
 */
export function prepareTrees(work: TreeWork, t0: number, t1: number): void {
  const { forest, weight, intensity } = work;
  const { rule, pruneRatio } = work.options;
  const { treeOffset, treeGroupOffset, parentRow, childGroup, groupOffset } = forest;
  const lo = treeOffset[t0], hi = treeOffset[t1], g0 = treeGroupOffset[t0], g1 = treeGroupOffset[t1];
  let finite = true;
  for (let v = lo; v < hi; v++) if (!Number.isFinite(weight[v])) finite = false;
  for (let g = g0; g < g1; g++) if (!Number.isFinite(intensity[g])) finite = false;
  if (!finite) work.nonFinite[0] = 1;
  liveRows(forest, lo, hi, work.live);
  if (rule === 'v3') splitGroupRangeV3(forest, weight, work.live, pruneRatio, g0, g1, work.split);
  else splitGroupRange(forest, weight, work.live, pruneRatio, g0, g1, work.split);
  treeSignalRange(forest, intensity, rule, t0, t1, work.signal);
  // ψ_v: priority relative to a uniform split along the path (depths; v2's claims).
  const priority = work.priority;
  for (let v = lo; v < hi; v++) {
    const p = parentRow[v];
    priority[v] = p < 0 ? 1 : priority[p] * (groupOffset[childGroup[p] + 1] - groupOffset[childGroup[p]]) * weight[v];
  }
}

/** Second pass over trees [t0, t1), once `treeBudget` is set: each tree's mass under its rule, its rounding, and depths. */
export function placeTrees(work: TreeWork, t0: number, t1: number): void {
  const { forest, weight, intensity, live, split, treeBudget, unallocated, mass, branches } = work;
  const { treeOffset } = forest;
  const { rule, contestGain, forkKeep } = work.options;
  if (rule === 'v3') {
    const rows: ContestFlowRows = contestFlowRowArrays(forest, weight, work.childStart, work.childCount, work.rowIntensity);
    fillContestFlowRows(forest, intensity, treeOffset[t0], treeOffset[t1], rows);
    const settings = { contestGain, forkKeep };
    for (let t = t0; t < t1; t++) {
      const placed = flowContestV3(rows, treeOffset[t], treeOffset[t + 1], treeBudget[t], split.kept, live, settings, contestScratch, mass);
      if (!placed) unallocated[t] = treeBudget[t];
    }
  } else if (rule === 'v2') {
    for (let t = t0; t < t1; t++) {
      const lo = treeOffset[t], hi = treeOffset[t + 1];
      const logPsi = () => { logPriorityRows(forest, weight, lo, hi, work.logPsi); return work.logPsi; };
      const placed = live[lo] === 1 && flowClaimsV2(forest, t, treeBudget[t], split, live, intensity, contestGain, work.priority, work.reach, mass, logPsi);
      if (!placed) unallocated[t] = treeBudget[t];
    }
  } else {
    flowV1(work, t0, t1);
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

/**
 * Rule v1's flow over trees [t0, t1): the root gets mass B; a node with mass m and kept children
 * keeps x = m·λ·I (0 if terminal) and passes m − x to its kept children in proportion to their
 * weights; a node with no kept child keeps all of m. Rows are parent-first within each tree.
 */
function flowV1(work: TreeWork, t0: number, t1: number): void {
  const { forest, weight, intensity, live, split, treeBudget, mass, unallocated, inflow } = work;
  const widen = work.options.widen;
  const { treeOffset, terminal, childGroup, groupOffset, groupChild } = forest;
  for (let t = t0; t < t1; t++) {
    const root = treeOffset[t];
    if (!live[root]) { unallocated[t] = treeBudget[t]; continue; }
    inflow[root] = treeBudget[t];
    for (let v = root; v < treeOffset[t + 1]; v++) {
      const m = inflow[v];
      if (m === 0) continue;
      const g = childGroup[v];
      if (g < 0 || split.keptCount[g] === 0) { mass[v] = m; continue; }
      const x = terminal[v] ? 0 : m * widen * intensity[g];
      mass[v] = x;
      const share = (m - x) / split.keptWeight[g];
      for (let s = groupOffset[g]; s < groupOffset[g + 1]; s++) {
        const c = groupChild[s];
        if (split.kept[c]) inflow[c] = share * weight[c];
      }
    }
  }
}

/**
 * Each tree's evidence for the global split, S_t in Q_t = q0 + S_t, for trees [t0, t1) into
 * `out`. v1, v2: the mean intensity of its groups with k ≥ 2 (0 without one). v3: the intensity
 * of the root's group (0 when the root has fewer than two children) — how much its fresh
 * rollouts disagree.
 */
export function treeSignalRange(forest: PackedForest, intensity: RealArray, rule: Rule, t0: number, t1: number, out: Float64Array): void {
  const { treeOffset, treeGroupOffset, groupOffset, childGroup } = forest;
  for (let t = t0; t < t1; t++) {
    if (rule === 'v3') {
      const g = childGroup[treeOffset[t]];
      out[t] = g >= 0 && groupOffset[g + 1] - groupOffset[g] >= 2 ? intensity[g] : 0;
      continue;
    }
    let sum = 0, count = 0;
    for (let g = treeGroupOffset[t]; g < treeGroupOffset[t + 1]; g++) {
      if (groupOffset[g + 1] - groupOffset[g] >= 2) { sum += intensity[g]; count++; }
    }
    out[t] = count > 0 ? sum / count : 0;
  }
}

/** The passes as worker tasks (`CpuScorer.runOnThreads`): `data` is a `TreeWork` whose forest is its shared fields. */
export function prepareTreesTask(data: Record<string, unknown>, t0: number, t1: number): void {
  prepareTrees(data as unknown as TreeWork, t0, t1);
}

export function placeTreesTask(data: Record<string, unknown>, t0: number, t1: number): void {
  placeTrees(data as unknown as TreeWork, t0, t1);
}
