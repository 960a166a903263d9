import { packColumns, type PackedForest } from '../forest/packed.js';
import type { Rng } from '../util/random.js';
import type { Env } from './env.js';
import type { TabularPolicy } from './policy.js';

/**
 * The rollout trees of one simulated training step, one node per environment step, grown
 * under one budget of environment steps. Every strategy buys its steps through `rollout`, so
 * none can spend more than the budget. Node ids are global and in creation order, so parents
 * precede children within every tree.
 */
export class SimForest {
  /** Per node (index = node id): its tree, parent id (−1 for a root), environment state. */
  readonly tree: number[] = [];
  readonly parent: number[] = [];
  readonly state: number[] = [];
  /** Action that led into the node (−1 for a root); 1 where the episode ended. */
  readonly action: number[] = [];
  readonly terminal: number[] = [];
  readonly depth: number[] = [];
  /** Finished rollouts through the node and the sum of their 0/1 rewards. */
  readonly visits: number[] = [];
  readonly rewardSum: number[] = [];
  /** Normalized policy entropy at the node's state (0 where the episode ended): the uncertainty TRACE reads. */
  readonly entropy: number[] = [];
  readonly children: number[][] = [];
  /** Index of the node inside its tree (its row within the tree once packed). */
  readonly localIndex: number[] = [];
  /** Node ids of each tree, in creation order. */
  readonly treeNodes: number[][] = [];
  /** Semantic embeddings, `env.dim` floats per node, row-major (node id × dim); grows geometrically. */
  private embedding: Float32Array;
  /** Environment steps spent so far. */
  used = 0;

  constructor(readonly env: Env, readonly policy: TabularPolicy, readonly rng: Rng, readonly budget: number) {
    this.embedding = new Float32Array(64 * env.dim);
  }

  get size(): number { return this.tree.length; }
  remaining(): number { return this.budget - this.used; }
  root(tree: number): number { return this.treeNodes[tree][0]; }

  /** Adds the prompt `prompt` as the root of the next tree. */
  addRoot(prompt: number): number {
    return this.add(this.treeNodes.length, -1, this.env.start(prompt), -1, false);
  }

  /** Mean reward of the finished rollouts through a node, or NaN when none finished. */
  value(node: number): number {
    return this.visits[node] > 0 ? this.rewardSum[node] / this.visits[node] : NaN;
  }

  /**
   * One rollout from `from`: policy steps until the episode ends or `maxSteps` are taken (or
   * the budget is spent). A finished episode's reward is backed up to the root. Returns the
   * steps taken.
   */
  rollout(from: number, maxSteps = Infinity): number {
    let node = from, taken = 0;
    while (taken < maxSteps && this.used < this.budget && !this.terminal[node]) {
      const { action } = this.policy.sample(this.state[node], this.rng);
      const step = this.env.step(this.state[node], action);
      const done = step.done || this.depth[node] + 1 >= this.env.horizon;
      node = this.add(this.tree[node], node, step.next, action, done);
      this.used++;
      taken++;
      if (done) this.backUp(node, step.done ? step.reward : 0);
    }
    return taken;
  }

  /** The trees as the library's input: reward = mean outcome through a node, visits = finished rollouts, uncertainty = policy entropy. */
  pack(): PackedForest {
    const trees = this.treeNodes.length, n = this.size, dim = this.env.dim;
    const treeOffset = new Int32Array(trees + 1);
    for (let t = 0; t < trees; t++) treeOffset[t + 1] = treeOffset[t] + this.treeNodes[t].length;
    const parent = new Int32Array(n), reward = new Float64Array(n), visits = new Float64Array(n);
    const uncertainty = new Float64Array(n), terminal = new Uint8Array(n), embedding = new Float32Array(n * dim);
    for (let t = 0; t < trees; t++) {
      this.treeNodes[t].forEach((v, i) => {
        const row = treeOffset[t] + i;
        parent[row] = this.parent[v] < 0 ? -1 : this.localIndex[this.parent[v]];
        visits[row] = this.visits[v];
        reward[row] = this.visits[v] > 0 ? this.rewardSum[v] / this.visits[v] : 0;
        uncertainty[row] = this.entropy[v];
        terminal[row] = this.terminal[v];
        embedding.set(this.embedding.subarray(v * dim, (v + 1) * dim), row * dim);
      });
    }
    const treeIds = Array.from({ length: trees }, (_, t) => `p${t}`);
    return packColumns({ dim, treeIds, treeOffset, parent, reward, visits, uncertainty, terminal, embedding });
  }

  private add(tree: number, parent: number, state: number, action: number, done: boolean): number {
    const id = this.size, dim = this.env.dim;
    if ((id + 1) * dim > this.embedding.length) {
      const grown = new Float32Array(Math.max(this.embedding.length * 2, (id + 1) * dim));
      grown.set(this.embedding);
      this.embedding = grown;
    }
    if (parent < 0) this.treeNodes.push([]);
    this.tree.push(tree);
    this.parent.push(parent);
    this.state.push(state);
    this.action.push(action);
    this.terminal.push(done ? 1 : 0);
    this.depth.push(parent < 0 ? 0 : this.depth[parent] + 1);
    this.visits.push(0);
    this.rewardSum.push(0);
    this.entropy.push(done ? 0 : this.policy.normalizedEntropy(state));
    this.children.push([]);
    this.localIndex.push(this.treeNodes[tree].length);
    this.treeNodes[tree].push(id);
    if (parent >= 0) this.children[parent].push(id);
    this.env.embed(state, this.embedding, id * dim, this.rng);
    return id;
  }

  private backUp(leaf: number, reward: number): void {
    for (let v = leaf; v >= 0; v = this.parent[v]) { this.visits[v]++; this.rewardSum[v] += reward; }
  }
}
