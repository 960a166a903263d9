import { assertPackedForest, type PackedForest } from '../forest/packed.js';
import type { Scores } from '../score/types.js';
import { liveNodes, splitGroups, type GroupSplit } from './live.js';
import { resolveAllocateOptions, type AllocateOptions, type ResolvedAllocateOptions } from './options.js';
import { LargestRemainder } from './rounding.js';
import { flowClaimsV2 } from './v2.js';
import { ContestFlowScratch, contestFlowRows, flowContestV3, splitGroupsV3 } from './v3.js';
import { logPriority } from './priority.js';
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
 * rule v3 (default), v2 or v1. Pure; allocates its outputs only.
 */
export function allocate(forest: PackedForest, scores: Scores, options: AllocateOptions = {}): Allocation {
  assertPackedForest(forest);
  const opts = resolveAllocateOptions(options, scores.params.rule);
  const { treeCount, nodeCount, treeOffset, childGroup, parentRow, groupOffset } = forest;
  if (scores.weight.length !== nodeCount || scores.intensity.length !== forest.groupCount) {
    throw new RangeError(`scores do not match the forest (${scores.weight.length} weights for ${nodeCount} nodes)`);
  }
  const { weight, intensity } = scores;
  assertFiniteScores(forest, scores);
  const live = liveNodes(forest);
  const split = opts.rule === 'v3' ? splitGroupsV3(forest, weight, live, opts.pruneRatio) : splitGroups(forest, weight, live, opts.pruneRatio);

  const treeBudget = new Float64Array(treeCount);
  let unallocatedTotal = 0;
  if (opts.totalBudget !== undefined) {
    unallocatedTotal = splitGlobalBudget(forest, treeSignals(forest, intensity, opts.rule), live, opts.totalBudget, opts.minPerTree, opts.treeFloor, treeBudget);
  } else {
    const b = opts.budget;
    if (typeof b !== 'number' && b.length !== treeCount) throw new OptionError(`budget has ${b.length} entries for ${treeCount} trees`);
    for (let t = 0; t < treeCount; t++) treeBudget[t] = typeof b === 'number' ? b : b[t];
  }

  // ψ_v: priority relative to a uniform split along the path (depths; v2's claims).
  const priority = new Float64Array(nodeCount);
  for (let v = 0; v < nodeCount; v++) {
    const p = parentRow[v];
    priority[v] = p < 0 ? 1 : priority[p] * (groupOffset[childGroup[p] + 1] - groupOffset[childGroup[p]]) * weight[v];
  }

  const mass = new Float64Array(nodeCount);
  const unallocated = new Float64Array(treeCount);
  if (opts.rule === 'v3') {
    const rows = contestFlowRows(forest, weight, intensity);
    const scratch = new ContestFlowScratch();
    const settings = { contestGain: opts.contestGain, forkKeep: opts.forkKeep };
    for (let t = 0; t < treeCount; t++) {
      const placed = flowContestV3(rows, treeOffset[t], treeOffset[t + 1], treeBudget[t], split.kept, live, settings, scratch, mass);
      if (!placed) unallocated[t] = treeBudget[t];
    }
  } else if (opts.rule === 'v2') {
    const reach = new Uint8Array(nodeCount);
    let logPsi: Float64Array | undefined;
    const lazyLogPsi = () => (logPsi ??= logPriority(forest, weight));
    for (let t = 0; t < treeCount; t++) {
      const placed = live[treeOffset[t]] === 1 && flowClaimsV2(forest, t, treeBudget[t], split, live, intensity, opts.contestGain, priority, reach, mass, lazyLogPsi);
      if (!placed) unallocated[t] = treeBudget[t];
    }
  } else {
    flowV1(forest, weight, intensity, live, split, treeBudget, opts.widen, mass, unallocated);
  }

  const branches = new Int32Array(nodeCount);
  const rounding = new LargestRemainder();
  for (let t = 0; t < treeCount; t++) {
    if (unallocated[t] > 0 || treeBudget[t] === 0) continue;
    rounding.round(mass, treeOffset[t], treeOffset[t + 1], treeBudget[t], branches);
  }

  const depth = new Int32Array(nodeCount);
  for (let v = 0; v < nodeCount; v++) {
    if (branches[v] > 0) {
      const d = Math.floor(opts.baseDepth * Math.pow(priority[v], opts.depthGain) + 0.5);
      depth[v] = Math.min(opts.maxDepth, Math.max(opts.minDepth, d));
    }
  }
  return { options: opts, treeBudget, unallocated, unallocatedTotal, mass, branches, depth, priority, pruned: split.pruned, live };
}

/**
 * Rule v1's flow: the root gets mass B; a node with mass m and kept children keeps
 * x = m·λ·I (0 if terminal) and passes m − x to its kept children in proportion to their
 * weights; a node with no kept child keeps all of m. Rows are parent-first within each tree.
 */
function flowV1(
  forest: PackedForest,
  weight: Scores['weight'],
  intensity: Scores['intensity'],
  live: Uint8Array,
  split: GroupSplit,
  treeBudget: Float64Array,
  widen: number,
  mass: Float64Array,
  unallocated: Float64Array,
): void {
  const { treeCount, nodeCount, treeOffset, terminal, childGroup, groupOffset, groupChild } = forest;
  const inflow = new Float64Array(nodeCount);
  for (let t = 0; t < treeCount; t++) {
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
 * Each tree's evidence for the global split, S_t in Q_t = q0 + S_t. v1, v2: the mean intensity
 * of its groups with k ≥ 2 (0 without one). v3: the intensity of the root's group (0 when the
 * root has fewer than two children) — how much its fresh rollouts disagree.
 */
export function treeSignals(forest: PackedForest, intensity: Scores['intensity'], rule: ResolvedAllocateOptions['rule']): Float64Array {
  const { treeCount, treeOffset, treeGroupOffset, groupOffset, childGroup } = forest;
  const out = new Float64Array(treeCount);
  for (let t = 0; t < treeCount; t++) {
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
