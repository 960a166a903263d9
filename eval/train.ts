import { Rng } from '../src/util/random.js';
import { createAllocator, type AllocatorName } from './allocators/index.js';
import type { Allocator } from './allocators/types.js';
import { createEnv, type EnvName } from './envs/index.js';
import type { Env } from './envs/types.js';
import { treeMetrics } from './metrics.js';
import { TabularPolicy } from './policy.js';
import { Grower, RolloutForest } from './tree.js';

export interface TrainConfig {
  env: EnvName;
  allocator: AllocatorName;
  seed: number;
  /** Training steps (policy updates). */
  steps: number;
  /** Environment steps each training step may spend growing trees. */
  budgetPerStep: number;
  /** Trees (prompts) per training step. */
  prompts: number;
  /** Policy learning rate. */
  learningRate: number;
  /** Evaluate the policy every this many training steps (and after the last). */
  evalEvery: number;
  evalEpisodes: number;
  finalEpisodes: number;
  /** TRACE: rollouts placed per tree in each allocation round (SPEC §4's budget, global mode); ignored by the others. */
  traceRolloutsPerTree: number;
  /** Segment length of the segment-based allocators and TRACE's D0; default a quarter of the horizon. */
  segment?: number;
  /**
   * How the policy learns from a step's trees: 'treerl' (default) — TreeRL's per-node advantages;
   * 'grpo' — every finished rollout is one trajectory from the prompt (shared prefixes included),
   * advantage = its reward minus the mean over its tree's finished rollouts, averaged per tree
   * (GRPO as a trainer that treats a tree's leaves as its group sees it).
   */
  learner?: 'treerl' | 'grpo';
  /** Trie trees: identical actions from one node share a child (see `Grower`). Default false. */
  merge?: boolean;
  /** Builds the allocator instead of `allocator`'s registered one (settings sweeps). */
  makeAllocator?: (segment: number) => Allocator;
}

export interface TrainResult {
  config: TrainConfig;
  /** Cumulative budget (environment steps) at which the first successful rollout finished, or null. */
  firstReward: number | null;
  /** Sibling groups with mixed outcomes / groups with ≥ 2 children that have outcomes, over the run. */
  mixedFraction: number;
  /** Budget on nodes no finished rollout ever passed through (truncated, no verifiable outcome). */
  deadFraction: number;
  /** Budget on nodes whose finished rollouts all got reward 0. */
  zeroFraction: number;
  /** Success rate of the trained policy (sampled episodes) after the whole budget. */
  finalSuccess: number;
  /** Mean allocator decision time per training step (ms), environment stepping excluded. */
  allocatorMs: number;
  /** Budget actually spent (must equal steps × budgetPerStep). */
  budgetUsed: number;
  /** Mean success over the evaluation points after step 0 (area under the learning curve). */
  meanSuccess: number;
  /** Mean environment steps per started rollout. */
  stepsPerRollout: number;
  /** TRACE only: share of rollouts started below a node whose children had all finished. */
  deadEndShare: number | null;
  /** [cumulative budget, success rate] after evaluation points. */
  curve: Array<[number, number]>;
  /** α, τ in use at each training step (TRACE only). */
  alpha: number[];
  tau: number[];
}

/**
 * One training run: each step grows trees under the budget with the allocator, backs up the
 * outcomes, computes TreeRL advantages and takes one GRPO-style policy-gradient step.
 */
export function train(config: TrainConfig): TrainResult {
  const env = createEnv(config.env, config.seed);
  const segment = config.segment ?? segmentLength(env);
  const allocator = config.makeAllocator?.(segment) ?? createAllocator(config.allocator, segment, config.traceRolloutsPerTree);
  const policy = new TabularPolicy(env.stateCount, env.actions);
  const rng = new Rng(config.seed * 7919 + 17);
  const curve: Array<[number, number]> = [[0, evaluate(env, policy, config.evalEpisodes, config.seed, 0)]];
  const alpha: number[] = [], tau: number[] = [];
  let firstReward: number | null = null;
  let mixed = 0, groups = 0, dead = 0, zero = 0, used = 0, allocMs = 0, launches = 0;
  for (let step = 0; step < config.steps; step++) {
    env.setTrainingStep(step);
    if (allocator.params) { const p = allocator.params(); alpha.push(p.alpha); tau.push(p.tau); }
    const forest = new RolloutForest(env.dim);
    const grower = new Grower(forest, env, policy, rng, config.budgetPerStep, config.merge ?? false);
    for (let t = 0; t < config.prompts; t++) grower.addRoot(t, env.start(t));
    const t0 = performance.now();
    allocator.grow(grower);
    allocMs += performance.now() - t0 - grower.envMs;
    if (firstReward === null && grower.firstSuccessAt >= 0) firstReward = used + grower.firstSuccessAt;
    used += grower.used;
    launches += grower.launches;
    const m = treeMetrics(forest);
    mixed += m.mixedGroups; groups += m.scoredGroups; dead += m.deadSteps; zero += m.zeroSteps;
    if (config.learner === 'grpo') updatePolicyGrpo(policy, forest, config.learningRate / config.prompts);
    else updatePolicy(policy, forest, config.learningRate / config.prompts);
    if ((step + 1) % config.evalEvery === 0 || step === config.steps - 1) {
      curve.push([used, evaluate(env, policy, config.evalEpisodes, config.seed, step + 1)]);
    }
  }
  return {
    config,
    firstReward,
    mixedFraction: groups > 0 ? mixed / groups : 0,
    deadFraction: used > 0 ? dead / used : 0,
    zeroFraction: used > 0 ? zero / used : 0,
    finalSuccess: evaluate(env, policy, config.finalEpisodes, config.seed, -1),
    allocatorMs: allocMs / config.steps,
    budgetUsed: used,
    meanSuccess: curve.slice(1).reduce((a, c) => a + c[1], 0) / Math.max(1, curve.length - 1),
    stepsPerRollout: launches > 0 ? used / launches : 0,
    deadEndShare: allocator.deadEndLaunches !== undefined && launches > 0 ? allocator.deadEndLaunches / launches : null,
    curve,
    alpha,
    tau,
  };
}

/** Segment length for segment-based allocators: a quarter of the horizon, so four segments finish an episode. */
export function segmentLength(env: Env): number {
  return Math.max(1, Math.ceil(env.horizon / 4));
}

/**
 * TreeRL advantages A(n) = (V(n) − V(parent)) + (V(n) − V(root)), divided by √(finished
 * rollouts through n) as TreeRL does so shared prefixes are not counted many times; one
 * REINFORCE/GRPO step θ += lr · Σ A(n) ∇ log π(a_n | s_parent) over nodes with outcomes.
 */
export function updatePolicy(policy: TabularPolicy, f: RolloutForest, lr: number): void {
  const grad = new Float64Array(policy.logits.length);
  for (let v = 0; v < f.size; v++) {
    const p = f.parent[v];
    if (p < 0 || f.visits[v] === 0) continue;
    const root = f.roots[f.tree[v]];
    const value = f.value(v);
    const advantage = (value - f.value(p) + value - f.value(root)) / Math.sqrt(f.visits[v]);
    if (advantage !== 0) policy.addLogProbGradient(f.state[p], f.action[v], advantage, grad);
  }
  for (let i = 0; i < grad.length; i++) policy.logits[i] += lr * grad[i];
}

/**
 * GRPO over each tree's finished rollouts: rollout i (ending at a terminal node, `visits` times
 * there) has advantage R_i − mean_tree R; every step on its path from the prompt gets it, and the
 * tree's sum is divided by its number of finished rollouts (the group mean of GRPO's loss).
 */
export function updatePolicyGrpo(policy: TabularPolicy, f: RolloutForest, lr: number): void {
  const grad = new Float64Array(policy.logits.length);
  const weight = new Float64Array(f.size);
  for (let t = 0; t < f.treeNodes.length; t++) {
    const nodes = f.treeNodes[t];
    let count = 0, sum = 0;
    for (const v of nodes) if (f.terminal[v] && f.visits[v] > 0) { count += f.visits[v]; sum += f.visits[v] * f.outcome[v]; }
    if (count === 0) continue;
    const mean = sum / count;
    for (const v of nodes) weight[v] = f.terminal[v] && f.visits[v] > 0 ? (f.visits[v] * (f.outcome[v] - mean)) / count : 0;
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

/** Success rate of `episodes` sampled episodes, cycling through the prompts; its own seeded stream. */
export function evaluate(env: Env, policy: TabularPolicy, episodes: number, seed: number, salt: number): number {
  const rng = new Rng((seed * 104729 + salt * 31 + 5) >>> 0);
  let wins = 0;
  for (let e = 0; e < episodes; e++) {
    let s = env.start(e % env.promptCount);
    for (let t = 0; t < env.horizon; t++) {
      const tr = env.step(s, policy.sample(s, rng).action);
      s = tr.next;
      if (tr.done) { wins += tr.reward; break; }
    }
  }
  return wins / episodes;
}

export type { Allocator };
