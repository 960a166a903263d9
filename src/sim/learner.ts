import { Rng } from '../util/random.js';
import type { Env } from './env.js';
import type { TabularPolicy } from './policy.js';

/**
 * What the learners read from one training step's rollout trees: per node its tree, parent,
 * the state it arrived in and the action that led there, and the finished rollouts through it.
 * `treeNodes[t][0]` is tree t's root. The demo's `SimForest` and the evaluation's
 * `RolloutForest` both have this shape.
 */
export interface LearnerForest {
  readonly size: number;
  readonly tree: readonly number[];
  readonly parent: readonly number[];
  readonly state: readonly number[];
  readonly action: readonly number[];
  readonly terminal: readonly number[];
  /** Finished rollouts through the node (the leaves below it) and the sum of their rewards. */
  readonly visits: readonly number[];
  readonly rewardSum: readonly number[];
  readonly treeNodes: readonly (readonly number[])[];
  /** Mean reward of the finished rollouts through a node, NaN when none finished. */
  value(node: number): number;
}

/** θ += lr · Σ_n weight[n] ∇ log π(a_n | s_parent(n)) over the nodes with a nonzero weight. */
function ascend(policy: TabularPolicy, f: LearnerForest, weight: ArrayLike<number>, lr: number): void {
  const grad = new Float64Array(policy.logits.length);
  for (let v = 0; v < f.size; v++) {
    if (weight[v] !== 0 && f.parent[v] >= 0) policy.addLogProbGradient(f.state[f.parent[v]], f.action[v], weight[v], grad);
  }
  for (let i = 0; i < grad.length; i++) policy.logits[i] += lr * grad[i];
}

/**
 * TreeRL's advantages as this project first took them, each node counted once:
 * A(n) = (V(n) − V(parent)) + (V(n) − V(root)), divided by √(finished rollouts through n);
 * θ += lr · Σ A(n) ∇ log π(a_n | s_parent) over the nodes with outcomes. A node shared by N
 * rollouts weighs A/√N. Kept exactly so that the committed evaluation reproduces
 * (learner `treerl`); the published form is `treerlLeafUpdate`.
 */
export function treerlNodeUpdate(policy: TabularPolicy, f: LearnerForest, lr: number): void {
  const weight = new Float64Array(f.size);
  for (let v = 0; v < f.size; v++) {
    const p = f.parent[v];
    if (p < 0 || f.visits[v] === 0) continue;
    const value = f.value(v);
    weight[v] = (value - f.value(p) + value - f.value(f.treeNodes[f.tree[v]][0])) / Math.sqrt(f.visits[v]);
  }
  ascend(policy, f, weight, lr);
}

/**
 * TreeRL's parent segment of node v: its nearest proper ancestor with more finished rollouts
 * through it, or the root. TreeRL's tree nodes are the segments between forking points, so an
 * unforked run of steps is one segment (python/trace_alloc/advantages.py, `segment_parents`).
 */
export function segmentParent(f: LearnerForest, v: number): number {
  let p = f.parent[v];
  while (f.parent[p] >= 0 && f.visits[p] <= f.visits[v]) p = f.parent[p];
  return p;
}

/**
 * TreeRL as published (Hou et al. 2025; python/trace_alloc/advantages.py says how it maps onto
 * these trees): every finished rollout is a training sample, and each step n on its path carries
 * A(n) = (GA(n) + LA(n)) / √L(n) — GA = V(n) − V(root), LA = V(n) − V(parent segment), L(n)
 * the finished rollouts through n. Summed over the L(n) samples a node weighs √L(n)·(GA + LA);
 * each tree's sum is divided by its finished rollouts (the mean over the tree's samples, as the
 * GRPO learner takes it).
 */
export function treerlLeafUpdate(policy: TabularPolicy, f: LearnerForest, lr: number): void {
  ascendTreerlLeaf(policy, f, (v) => f.value(v), lr);
}

/** The TreeRL per-leaf step with node values V = `value`: weight √L·(GA + LA) over the tree's rollouts. */
function ascendTreerlLeaf(policy: TabularPolicy, f: LearnerForest, value: (v: number) => number, lr: number): void {
  const weight = new Float64Array(f.size);
  for (let v = 0; v < f.size; v++) {
    if (f.parent[v] < 0 || f.visits[v] === 0) continue;
    const root = f.treeNodes[f.tree[v]][0];
    const own = value(v);
    weight[v] = Math.sqrt(f.visits[v]) * (own - value(root) + own - value(segmentParent(f, v))) / f.visits[root];
  }
  ascend(policy, f, weight, lr);
}

/**
 * Per node, the mean over its branches: a terminal node's outcome, an inner node's unweighted
 * mean of its children's branch values over the children with a finished rollout below them, NaN
 * where none has. On plain trees every child is one draw of the node's next step (a rollout adds
 * new nodes from where it starts), so this estimates the node's value under the policy however
 * unevenly the allocator forked its branches (python/trace_alloc/advantages.py, `branch_values`).
 */
export function branchValues(f: LearnerForest): Float64Array {
  const total = new Float64Array(f.size);
  const count = new Int32Array(f.size);
  const out = new Float64Array(f.size).fill(NaN);
  for (let v = f.size - 1; v >= 0; v--) {
    if (f.terminal[v] && f.visits[v] > 0) out[v] = f.value(v);
    else if (count[v] > 0) out[v] = total[v] / count[v];
    const p = f.parent[v];
    if (p >= 0 && !Number.isNaN(out[v])) {
      total[p] += out[v];
      count[p] += 1;
    }
  }
  return out;
}

/**
 * TreeRL's per-leaf credit (`treerlLeafUpdate`) with every V the branch mean (`branchValues`)
 * instead of the mean of the node's finished rollouts; L(n), √L and the parent segments are
 * TreeRL's. Plain trees only: on trie trees a child holds several draws and would need weighing.
 */
export function treerlBranchUpdate(policy: TabularPolicy, f: LearnerForest, lr: number): void {
  const value = branchValues(f);
  ascendTreerlLeaf(policy, f, (v) => value[v], lr);
}

/**
 * GRPO over each tree's finished rollouts: rollout i (ending at a terminal node, `visits` times
 * there) has advantage R_i − mean_tree R; every step on its path from the prompt gets it, and the
 * tree's sum is divided by its number of finished rollouts (the group mean of GRPO's loss).
 */
export function grpoUpdate(policy: TabularPolicy, f: LearnerForest, lr: number): void {
  const grad = new Float64Array(policy.logits.length);
  const weight = new Float64Array(f.size);
  for (const nodes of f.treeNodes) {
    let count = 0, sum = 0;
    for (const v of nodes) if (f.terminal[v] && f.visits[v] > 0) { count += f.visits[v]; sum += f.visits[v] * f.value(v); }
    if (count === 0) continue;
    const mean = sum / count;
    for (const v of nodes) weight[v] = f.terminal[v] && f.visits[v] > 0 ? (f.visits[v] * (f.value(v) - mean)) / count : 0;
    // Children before parents: each node passes its rollouts' summed advantage up.
    for (let i = nodes.length - 1; i > 0; i--) {
      const v = nodes[i];
      if (weight[v] !== 0) {
        policy.addLogProbGradient(f.state[f.parent[v]], f.action[v], weight[v], grad);
        weight[f.parent[v]] += weight[v];
      }
    }
  }
  for (let i = 0; i < grad.length; i++) policy.logits[i] += lr * grad[i];
}

/**
 * Success rate of `episodes` sampled episodes, cycling through the prompts, on its own seeded
 * stream (`salt` tells the evaluation points of one run apart).
 */
export function successRate(env: Env, policy: TabularPolicy, episodes: number, seed: number, salt = 0): number {
  const rng = new Rng((seed * 104729 + salt * 31 + 5) >>> 0);
  let wins = 0;
  for (let e = 0; e < episodes; e++) {
    let state = env.start(e % env.promptCount);
    for (let t = 0; t < env.horizon; t++) {
      const step = env.step(state, policy.sample(state, rng).action);
      state = step.next;
      if (step.done) { wins += step.reward; break; }
    }
  }
  return wins / episodes;
}
