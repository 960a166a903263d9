import { grpoUpdate, successRate, treerlBranchUpdate, treerlLeafUpdate, treerlNodeUpdate } from '../src/sim/learner.js';
import { Rng } from '../src/util/random.js';
import { createAllocator, type AllocatorName } from './allocators/index.js';
import type { Allocator, RoundSize } from './allocators/types.js';
import { createEnv, type EnvName } from './envs/index.js';
import type { Env } from './envs/types.js';
import { treeMetrics } from './metrics.js';
import { TabularPolicy } from './policy.js';
import { Grower, RolloutForest } from './tree.js';

/**
 * How the policy learns from a step's trees (src/sim/learner.ts): 'treerl-leaf' — TreeRL as
 * published, every finished rollout a sample carrying (GA + LA)/√L on each step of its path,
 * averaged per tree; 'grpo' — every finished rollout is one trajectory from the prompt (shared
 * prefixes included), advantage = its reward minus the mean over its tree's finished rollouts,
 * averaged per tree (GRPO as a trainer that treats a tree's leaves as its group sees it);
 * 'treerl' — TreeRL's advantages with every node counted once (A/√visits, summed), the learner
 * of the committed evaluation, kept so that it reproduces; 'treerl-branch' — 'treerl-leaf' with
 * each node's value the mean over its branches instead of over its finished rollouts (plain
 * trees only).
 */
export type Learner = 'treerl-leaf' | 'grpo' | 'treerl' | 'treerl-branch';

/** Each learner's update. */
const UPDATES: Record<Learner, (policy: TabularPolicy, f: RolloutForest, lr: number) => void> = {
  'treerl-leaf': treerlLeafUpdate, grpo: grpoUpdate, treerl: treerlNodeUpdate, 'treerl-branch': treerlBranchUpdate,
};

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
  /** Round-based allocators (TRACE, knapsack): rollouts per tree per round, per tree or in one global budget. Default 4 per tree. */
  round?: RoundSize;
  /** Segment length of the segment-based allocators and TRACE's D0; default a quarter of the horizon. */
  segment?: number;
  /** How the policy learns (`Learner`). Default 'treerl-leaf'. */
  learner?: Learner;
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
  /** Share of rollouts started at the prompt (the tree's root): 1 for independent chains. */
  rootShare: number;
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
 * outcomes and takes one policy-gradient step with the config's learner.
 */
export function train(config: TrainConfig): TrainResult {
  const env = createEnv(config.env, config.seed);
  const segment = config.segment ?? segmentLength(env);
  const allocator = config.makeAllocator?.(segment) ?? createAllocator(config.allocator, segment, config.round);
  const policy = new TabularPolicy(env.stateCount, env.actions);
  const rng = new Rng(config.seed * 7919 + 17);
  const update = UPDATES[config.learner ?? 'treerl-leaf'];
  // On trie trees a child holds every draw of its action, so an unweighted mean over children is
  // not the policy's value there; the branch mean is defined for plain trees only.
  if (config.learner === 'treerl-branch' && config.merge) throw new Error('learner treerl-branch needs plain trees (merge: false)');
  const curve: Array<[number, number]> = [[0, successRate(env, policy, config.evalEpisodes, config.seed, 0)]];
  const alpha: number[] = [], tau: number[] = [];
  let firstReward: number | null = null;
  let mixed = 0, groups = 0, dead = 0, zero = 0, used = 0, allocMs = 0, launches = 0, rootLaunches = 0;
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
    rootLaunches += grower.rootLaunches;
    const m = treeMetrics(forest);
    mixed += m.mixedGroups; groups += m.scoredGroups; dead += m.deadSteps; zero += m.zeroSteps;
    update(policy, forest, config.learningRate / config.prompts);
    if ((step + 1) % config.evalEvery === 0 || step === config.steps - 1) {
      curve.push([used, successRate(env, policy, config.evalEpisodes, config.seed, step + 1)]);
    }
  }
  return {
    config,
    firstReward,
    mixedFraction: groups > 0 ? mixed / groups : 0,
    deadFraction: used > 0 ? dead / used : 0,
    zeroFraction: used > 0 ? zero / used : 0,
    finalSuccess: successRate(env, policy, config.finalEpisodes, config.seed, -1),
    allocatorMs: allocMs / config.steps,
    budgetUsed: used,
    meanSuccess: curve.slice(1).reduce((a, c) => a + c[1], 0) / Math.max(1, curve.length - 1),
    stepsPerRollout: launches > 0 ? used / launches : 0,
    rootShare: launches > 0 ? rootLaunches / launches : 0,
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

export type { Allocator };
