import { packColumns, type PackedForest } from '../src/forest/packed.js';
import type { RolloutForest } from './tree.js';

/**
 * The library's view of the rollout trees (SPEC §1): reward = mean outcome of the finished
 * rollouts through a node, visits = their count, uncertainty = normalized policy entropy at
 * the node's state, terminal = the episode ended there. Row = treeOffset[tree] + localIndex.
 * `closed` (by node id) additionally presents nodes as terminal; see `exhaustedNodes`.
 */
export function packRollouts(f: RolloutForest, closed?: Uint8Array): PackedForest {
  const treeCount = f.treeNodes.length, n = f.size, dim = f.dim;
  const treeOffset = new Int32Array(treeCount + 1);
  for (let t = 0; t < treeCount; t++) treeOffset[t + 1] = treeOffset[t] + f.treeNodes[t].length;
  const parent = new Int32Array(n), reward = new Float64Array(n), visits = new Float64Array(n);
  const uncertainty = new Float64Array(n), terminal = new Uint8Array(n), embedding = new Float32Array(n * dim);
  for (let t = 0; t < treeCount; t++) {
    const nodes = f.treeNodes[t];
    for (let i = 0; i < nodes.length; i++) {
      const v = nodes[i], row = treeOffset[t] + i;
      parent[row] = f.parent[v] < 0 ? -1 : f.localIndex[f.parent[v]];
      visits[row] = f.visits[v];
      reward[row] = f.visits[v] > 0 ? f.rewardSum[v] / f.visits[v] : 0;
      uncertainty[row] = f.entropy[v];
      terminal[row] = f.terminal[v] || (closed !== undefined && closed[v]) ? 1 : 0;
      embedding.set(f.embedding.subarray(v * dim, (v + 1) * dim), row * dim);
    }
  }
  const treeIds = Array.from({ length: treeCount }, (_, t) => String(t));
  return packColumns({ dim, treeIds, treeOffset, parent, reward, visits, uncertainty, terminal, embedding });
}

/** Row of node `v` in a forest packed by `packRollouts` (valid for nodes that existed then). */
export function rowOf(f: RolloutForest, packed: PackedForest, v: number): number {
  return packed.treeOffset[f.tree[v]] + f.localIndex[v];
}

/**
 * Non-root nodes that were expanded and whose children all ended or are themselves exhausted:
 * nothing below them can still change. Only the eval's "closed chains" TRACE variant uses this.
 */
export function exhaustedNodes(f: RolloutForest): Uint8Array {
  const out = new Uint8Array(f.size);
  for (let v = f.size - 1; v >= 0; v--) {
    if (f.parent[v] < 0) continue;
    if (f.terminal[v]) { out[v] = 1; continue; }
    const kids = f.children[v];
    if (kids.length > 0 && kids.every((c) => out[c] === 1)) out[v] = 1;
  }
  return out;
}
