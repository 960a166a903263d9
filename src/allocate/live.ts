import type { PackedForest } from '../forest/packed.js';
import type { RealArray } from '../score/types.js';

/**
 * live(v) = open(v) or some child of v is live (docs/ALGORITHM.md §4). Parents precede children, so one
 * reverse pass over the rows settles every node.
 */
export function liveNodes(forest: PackedForest): Uint8Array {
  const live = new Uint8Array(forest.nodeCount);
  liveRows(forest, 0, forest.nodeCount, live);
  return live;
}

/** `liveNodes` for rows [lo, hi), which must be whole trees (a parent is in its child's tree), into `live`. */
export function liveRows(forest: PackedForest, lo: number, hi: number, live: Uint8Array): void {
  const { terminal, parentRow } = forest;
  for (let v = lo; v < hi; v++) live[v] = terminal[v] ? 0 : 1;
  for (let v = hi - 1; v >= lo; v--) if (live[v] && parentRow[v] >= 0) live[parentRow[v]] = 1;
}

export interface GroupSplit {
  /** 1 for children in their group's kept set E. */
  kept: Uint8Array;
  /** 1 for live children with w < ρ·w* (early stop this step). */
  pruned: Uint8Array;
  /** Σ_{j∈E} w_j per group; 0 when E is empty. */
  keptWeight: Float64Array;
  /** Number of kept children per group. */
  keptCount: Int32Array;
}

/** Empty kept/pruned arrays for `forest` (rows and groups), filled by `splitGroupRange` or `splitGroupRangeV3`. */
export function emptySplit(forest: PackedForest, array: <T extends Uint8Array | Int32Array | Float64Array>(Ctor: { new (n: number): T }, n: number) => T = (Ctor, n) => new Ctor(n)): GroupSplit {
  return {
    kept: array(Uint8Array, forest.nodeCount),
    pruned: array(Uint8Array, forest.nodeCount),
    keptWeight: array(Float64Array, forest.groupCount),
    keptCount: array(Int32Array, forest.groupCount),
  };
}

/** Splits every group's live children into kept and pruned by the weight threshold ρ·w*. */
export function splitGroups(forest: PackedForest, weight: RealArray, live: Uint8Array, pruneRatio: number): GroupSplit {
  const split = emptySplit(forest);
  splitGroupRange(forest, weight, live, pruneRatio, 0, forest.groupCount, split);
  return split;
}

/** `splitGroups` for groups [g0, g1) into `out` (zeroed there). */
export function splitGroupRange(forest: PackedForest, weight: RealArray, live: Uint8Array, pruneRatio: number, g0: number, g1: number, out: GroupSplit): void {
  const { groupOffset, groupChild } = forest;
  const { kept, pruned, keptWeight, keptCount } = out;
  for (let g = g0; g < g1; g++) {
    const start = groupOffset[g], end = groupOffset[g + 1];
    let wStar = -Infinity;
    for (let s = start; s < end; s++) {
      const c = groupChild[s];
      if (live[c] && weight[c] > wStar) wStar = weight[c];
    }
    if (wStar === -Infinity) continue; // no live child: E is empty
    const threshold = pruneRatio * wStar;
    let sum = 0, count = 0;
    for (let s = start; s < end; s++) {
      const c = groupChild[s];
      if (!live[c]) continue;
      if (weight[c] >= threshold) { kept[c] = 1; sum += weight[c]; count++; } else pruned[c] = 1;
    }
    keptWeight[g] = sum;
    keptCount[g] = count;
  }
}
