import { packColumns, type PackedForest } from '../forest/packed.js';
import { Rng } from '../util/random.js';
import { sharedArray } from '../util/shared.js';

/**
 * Seeded synthetic rollout forests: the demo's workload, the benchmarks' workloads and the
 * tests' random inputs. Each node carries a latent state; a child's state is its parent's
 * plus noise, so siblings really are semantically close, and a fraction of forks are
 * "contested": near-duplicate siblings whose outcomes differ.
 */
export interface SynthFeatures {
  dim: number;
  seed: number;
  /** Probability that a non-root node ends the episode (it is then a leaf). Default 0.1. */
  terminalRate?: number;
  /** Probability that a fork's children are near-duplicates with diverging outcomes. Default 0.2. */
  contestRate?: number;
  /** Probability that a node has no finished rollouts yet. Default 0.15. */
  unvisitedRate?: number;
  /**
   * Probability that a tree is settled: every rollout of its prompt agreed (all failed or all
   * succeeded, one uncertainty for every node), so no fork in it is contested (I = 0). Default 0.
   */
  settledRate?: number;
}

export interface RandomShape extends SynthFeatures {
  trees: number;
  minNodes?: number;
  maxNodes?: number;
  minBranch?: number;
  maxBranch?: number;
}

export interface RegularShape extends SynthFeatures {
  trees: number;
  /** Children per internal node. */
  branching: number;
  /** Levels below the root. */
  depth: number;
}

/** Trees of `minNodes..maxNodes` nodes with forks of `minBranch..maxBranch` children. */
export function generateForest(shape: RandomShape): PackedForest {
  const rng = new Rng(shape.seed);
  const minNodes = shape.minNodes ?? 20, maxNodes = shape.maxNodes ?? 200;
  const minBranch = shape.minBranch ?? 2, maxBranch = shape.maxBranch ?? 8;
  const terminalRate = shape.terminalRate ?? 0.1;
  const parents: Int32Array[] = [];
  const terminals: Uint8Array[] = [];
  for (let t = 0; t < shape.trees; t++) {
    const n = rng.int(minNodes, maxNodes);
    const parent = new Int32Array(n).fill(-1);
    const terminal = new Uint8Array(n);
    const frontier: number[] = [0];
    let count = 1;
    while (count < n) {
      if (frontier.length === 0) {
        // Every open node has been expanded or ended: reopen the last node so the tree reaches n.
        terminal[count - 1] = 0;
        frontier.push(count - 1);
      }
      const pick = rng.int(0, frontier.length - 1);
      const p = frontier[pick];
      frontier[pick] = frontier[frontier.length - 1];
      frontier.pop();
      const k = Math.min(n - count, rng.int(minBranch, maxBranch));
      for (let c = 0; c < k; c++) {
        parent[count] = p;
        if (rng.bernoulli(terminalRate)) terminal[count] = 1;
        else frontier.push(count);
        count++;
      }
    }
    parents.push(parent);
    terminals.push(terminal);
  }
  return fillFeatures(shape, rng, parents, terminals);
}

/** Full trees: every node down to `depth` has exactly `branching` children; leaves are open. */
export function generateRegularForest(shape: RegularShape): PackedForest {
  const rng = new Rng(shape.seed);
  let n = 1, level = 1;
  for (let d = 0; d < shape.depth; d++) { level *= shape.branching; n += level; }
  const parent = new Int32Array(n).fill(-1);
  for (let v = 1; v < n; v++) parent[v] = Math.floor((v - 1) / shape.branching);
  const terminal = new Uint8Array(n);
  const parents = Array.from({ length: shape.trees }, () => parent);
  const terminals = Array.from({ length: shape.trees }, () => terminal);
  return fillFeatures(shape, rng, parents, terminals);
}

function fillFeatures(f: SynthFeatures, rng: Rng, parents: Int32Array[], terminals: Uint8Array[]): PackedForest {
  const dim = f.dim;
  const contestRate = f.contestRate ?? 0.2;
  const unvisitedRate = f.unvisitedRate ?? 0.15;
  const treeCount = parents.length;
  const treeOffset = sharedArray(Int32Array, treeCount + 1);
  for (let t = 0; t < treeCount; t++) treeOffset[t + 1] = treeOffset[t] + parents[t].length;
  const nodeCount = treeOffset[treeCount];
  const parent = sharedArray(Int32Array, nodeCount);
  const terminal = sharedArray(Uint8Array, nodeCount);
  const reward = sharedArray(Float64Array, nodeCount);
  const visits = sharedArray(Float64Array, nodeCount);
  const uncertainty = sharedArray(Float64Array, nodeCount);
  const embedding = sharedArray(Float32Array, nodeCount * dim);
  const logit = new Float64Array(nodeCount);
  const contested = new Uint8Array(nodeCount);
  const goal = new Float32Array(dim);
  const settledRate = f.settledRate ?? 0;
  for (let t = 0; t < treeCount; t++) {
    const base = treeOffset[t];
    const n = parents[t].length;
    // Drawn only when asked for, so the default workloads keep their exact random streams.
    const settled = settledRate > 0 && rng.bernoulli(settledRate);
    const settledReward = settled && rng.bernoulli(0.5) ? 1 : 0;
    for (let d = 0; d < dim; d++) goal[d] = rng.normal();
    for (let v = 0; v < n; v++) {
      const row = base + v;
      const p = parents[t][v];
      parent[row] = p;
      terminal[row] = terminals[t][v];
      const e = row * dim;
      if (p < 0) {
        for (let d = 0; d < dim; d++) embedding[e + d] = rng.normal();
        logit[row] = rng.normal() * 0.5;
      } else {
        const pr = base + p;
        // The first child decides whether this fork is contested; its siblings follow it.
        if (v === 0 || parents[t][v - 1] !== p) contested[pr] = rng.bernoulli(contestRate) ? 1 : 0;
        const spread = contested[pr] ? 0.02 : 0.6;
        let drift = 0;
        for (let d = 0; d < dim; d++) {
          const step = rng.normal() * spread;
          embedding[e + d] = embedding[pr * dim + d] + step;
          drift += step * goal[d];
        }
        logit[row] = logit[pr] + (dim > 0 ? drift / Math.sqrt(dim) : 0) + rng.normal() * (contested[pr] ? 1.5 : 0.4);
      }
      const success = 1 / (1 + Math.exp(-logit[row]));
      const n_ = terminal[row] ? rng.int(1, 4) : rng.bernoulli(unvisitedRate) ? 0 : rng.int(1, 12);
      let wins = 0;
      for (let i = 0; i < n_; i++) if (rng.bernoulli(success)) wins++;
      visits[row] = n_;
      reward[row] = n_ > 0 ? wins / n_ : 0;
      uncertainty[row] = Math.abs(4 * success * (1 - success) * 0.8 + rng.normal() * 0.05);
      if (settled) { reward[row] = settledReward; uncertainty[row] = 0.1; }
    }
  }
  const treeIds = Array.from({ length: treeCount }, (_, t) => `t${t}`);
  return packColumns({ dim, treeIds, treeOffset, parent, reward, visits, uncertainty, terminal, embedding });
}
