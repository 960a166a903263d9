import type { PackedForest } from '../forest/packed.js';
import type { RealArray } from '../score/types.js';

/**
 * live(v) = open(v) or some child of v is live (docs/ALGORITHM.md §4). Parents precede children, so one
 * reverse pass over the rows settles every node.
 */
export function liveNodes(forest: PackedForest): Uint8Array {
  const { nodeCount, terminal, parentRow } = forest;
  const live = new Uint8Array(nodeCount);
  for (let v = 0; v < nodeCount; v++) live[v] = terminal[v] ? 0 : 1;
  for (let v = nodeCount - 1; v >= 0; v--) if (live[v] && parentRow[v] >= 0) live[parentRow[v]] = 1;
  return live;
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

/** Splits every group's live children into kept and pruned by the weight threshold ρ·w*. */
export function splitGroups(forest: PackedForest, weight: RealArray, live: Uint8Array, pruneRatio: number): GroupSplit {
  const { nodeCount, groupCount, groupOffset, groupChild } = forest;
  const kept = new Uint8Array(nodeCount);
  const pruned = new Uint8Array(nodeCount);
  const keptWeight = new Float64Array(groupCount);
  const keptCount = new Int32Array(groupCount);
  for (let g = 0; g < groupCount; g++) {
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
  return { kept, pruned, keptWeight, keptCount };
}
