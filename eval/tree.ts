import type { Rng } from '../src/util/random.js';
import type { Env } from './envs/types.js';
import type { TabularPolicy } from './policy.js';

/**
 * The rollout trees of one training step, grown node by node. A node is one agent step: the
 * state it arrives in, the action that led there, and the finished rollouts through it.
 * Node ids are global and in creation order, so parents precede children within every tree.
 */
export class RolloutForest {
  readonly tree: number[] = [];
  readonly parent: number[] = [];
  readonly state: number[] = [];
  readonly action: number[] = [];
  readonly depth: number[] = [];
  readonly terminal: number[] = [];
  /** Reward of the episode that ended at a terminal node (0 elsewhere). */
  readonly outcome: number[] = [];
  /** Finished rollouts through the node and the sum of their rewards. */
  readonly visits: number[] = [];
  readonly rewardSum: number[] = [];
  /** Normalized policy entropy at the node's state (0 for terminal nodes). */
  readonly entropy: number[] = [];
  readonly logProb: number[] = [];
  readonly pathLogProb: number[] = [];
  readonly children: number[][] = [];
  /** Index of the node inside its tree. */
  readonly localIndex: number[] = [];
  readonly treeNodes: number[][] = [];
  readonly roots: number[] = [];
  embedding: Float32Array;

  constructor(readonly dim: number) {
    this.embedding = new Float32Array(256 * dim);
  }

  get size(): number { return this.tree.length; }

  /** Adds a node and returns its id; the caller fills the embedding through `embeddingOf`. */
  add(tree: number, parent: number, state: number, action: number, logProb: number, entropy: number): number {
    const id = this.tree.length;
    if ((id + 1) * this.dim > this.embedding.length) {
      const grown = new Float32Array(this.embedding.length * 2);
      grown.set(this.embedding);
      this.embedding = grown;
    }
    if (parent < 0) {
      if (tree !== this.treeNodes.length) throw new RangeError(`tree ${tree}: roots must be added in tree order`);
      this.treeNodes.push([]);
      this.roots.push(id);
    }
    this.tree.push(tree);
    this.parent.push(parent);
    this.state.push(state);
    this.action.push(action);
    this.depth.push(parent < 0 ? 0 : this.depth[parent] + 1);
    this.terminal.push(0);
    this.outcome.push(0);
    this.visits.push(0);
    this.rewardSum.push(0);
    this.entropy.push(entropy);
    this.logProb.push(logProb);
    this.pathLogProb.push(parent < 0 ? 0 : this.pathLogProb[parent] + logProb);
    this.children.push([]);
    this.localIndex.push(this.treeNodes[tree].length);
    this.treeNodes[tree].push(id);
    if (parent >= 0) this.children[parent].push(id);
    return id;
  }

  /** Mean reward of the finished rollouts through a node, or NaN when none finished. */
  value(node: number): number {
    return this.visits[node] > 0 ? this.rewardSum[node] / this.visits[node] : NaN;
  }
}

/**
 * Grows a `RolloutForest` with the policy while counting every environment step against one
 * budget. Allocators only choose where rollouts start and how far they go; every step they
 * buy goes through `extend`, so no allocator can spend more than the budget.
 */
export class Grower {
  used = 0;
  /** Wall time spent stepping the environment and the policy (ms), subtracted from allocator time. */
  envMs = 0;
  finished = 0;
  successes = 0;
  /** Rollouts started (calls to `rollout` that took at least one step). */
  launches = 0;
  /** Budget used when the first successful rollout finished, or −1. */
  firstSuccessAt = -1;

  constructor(
    readonly forest: RolloutForest,
    readonly env: Env,
    readonly policy: TabularPolicy,
    readonly rng: Rng,
    readonly limit: number,
    /**
     * Trie trees: a step that takes the same action as an existing child of `from` walks into
     * that child instead of adding a new node (a tree of distinct state-actions, as a trainer
     * that merges identical turns would build). Every step still costs one unit of budget.
     */
    readonly merge = false,
  ) {}

  remaining(): number { return this.limit - this.used; }

  addRoot(tree: number, state: number): number {
    const f = this.forest;
    const id = f.add(tree, -1, state, -1, 0, this.policy.normalizedEntropy(state));
    this.env.embed(state, f.embedding, id * f.dim, this.rng);
    return id;
  }

  /** Is `node` a place a rollout can continue from? */
  open(node: number): boolean { return this.forest.terminal[node] === 0; }

  /**
   * One environment step from `from`, with `action` or a policy sample. Returns the new node,
   * or −1 when the budget is spent or `from` is terminal.
   */
  extend(from: number, action = -1): number {
    const f = this.forest;
    if (this.used >= this.limit || f.terminal[from]) return -1;
    const t0 = performance.now();
    const s = f.state[from];
    let logProb: number;
    if (action < 0) {
      const pick = this.policy.sample(s, this.rng);
      action = pick.action;
      logProb = pick.logProb;
    } else {
      logProb = Math.log(this.policy.distribution(s)[action]);
    }
    const tr = this.env.step(s, action);
    const done = tr.done || f.depth[from] + 1 >= this.env.horizon;
    if (this.merge) {
      const same = f.children[from].find((c) => f.action[c] === action);
      if (same !== undefined) {
        this.used++;
        if (done) this.finish(same, tr.done ? tr.reward : 0);
        this.envMs += performance.now() - t0;
        return same;
      }
    }
    const id = f.add(f.tree[from], from, tr.next, action, logProb, done ? 0 : this.policy.normalizedEntropy(tr.next));
    this.env.embed(tr.next, f.embedding, id * f.dim, this.rng);
    this.used++;
    if (done) this.finish(id, tr.done ? tr.reward : 0);
    this.envMs += performance.now() - t0;
    return id;
  }

  /** Up to `maxSteps` policy steps from `from` (Infinity: to the end of the episode). Returns the last node, or `from` if none was taken. */
  rollout(from: number, maxSteps: number): number {
    let node = from;
    if (maxSteps > 0 && this.used < this.limit && !this.forest.terminal[from]) this.launches++;
    for (let i = 0; i < maxSteps; i++) {
      const next = this.extend(node);
      if (next < 0) break;
      node = next;
      if (this.forest.terminal[node]) break;
    }
    return node;
  }

  private finish(node: number, reward: number): void {
    const f = this.forest;
    f.terminal[node] = 1;
    f.outcome[node] = reward;
    for (let v = node; v >= 0; v = f.parent[v]) { f.visits[v]++; f.rewardSum[v] += reward; }
    this.finished++;
    if (reward > 0) {
      this.successes++;
      if (this.firstSuccessAt < 0) this.firstSuccessAt = this.used;
    }
  }
}
