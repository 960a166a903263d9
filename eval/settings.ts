import { budgetMultiplier, type AllocatorName } from './allocators/index.js';
import type { EnvName } from './envs/index.js';
import type { Learner, TrainConfig } from './train.js';

/**
 * The learners a run can take: the two reported ones, then `treerl`, the committed evaluation's,
 * and `treerl-branch`, TreeRL's credit with branch-mean values (plain trees only).
 */
export const LEARNERS: readonly Learner[] = ['treerl-leaf', 'grpo', 'treerl', 'treerl-branch'];

/** What one (environment, learner) pair trains with. */
export interface Task {
  /** Trees (prompts) per training step. */
  prompts: number;
  /** Environment steps one training step may spend (before an allocator's budget multiplier). */
  budgetPerStep: number;
  /** Training steps (policy updates) per run. */
  steps: number;
  /** Policy learning rate (the update divides it by the trees of a step). */
  learningRate: number;
  /**
   * Rollouts per allocation round of the round-based allocators (TRACE, knapsack): `perTree` per
   * tree; `global` splits `perTree × trees` across trees in one global budget (TRACE:
   * `totalBudget`, `minPerTree: 1`, as `trace-alloc score --total-budget`), otherwise each tree
   * gets `perTree` (TRACE: `budget`, as `trace-alloc score --budget`).
   */
  round: { perTree: number; global: boolean };
}

/**
 * Training steps per (environment, learner) at the budget below: long enough for the policy to
 * learn, short enough that the best allocators have not all saturated at 100%. GRPO learns
 * slower on navigation and the tool agent (its advantage is one number per rollout), so it
 * gets more steps there. The published TreeRL learner (`treerl-leaf`) keeps `treerl`'s steps
 * except on the tool agent, where it learns slower too: at `treerl`'s 3 steps independent
 * chains reached 5% there, at 5 steps 31% (TRACE 50%), at 10 steps 89% (TRACE 92%, saturating;
 * tuning seeds 1001–1008, 400 final episodes). Navigation's goals move every 10 training
 * steps, so every run here trains on one goal layout.
 */
const STEPS: Record<EnvName, Record<Exclude<Learner, 'treerl-branch'>, number>> = {
  maze: { 'treerl-leaf': 4, grpo: 4, treerl: 4 },
  navigation: { 'treerl-leaf': 5, grpo: 10, treerl: 5 },
  dependency: { 'treerl-leaf': 5, grpo: 5, treerl: 5 },
  toolagent: { 'treerl-leaf': 5, grpo: 10, treerl: 3 },
  twochoice: { 'treerl-leaf': 5, grpo: 5, treerl: 5 },
  midchoice: { 'treerl-leaf': 4, grpo: 4, treerl: 4 },
  mixed: { 'treerl-leaf': 4, grpo: 4, treerl: 4 },
  twoclean: { 'treerl-leaf': 3, grpo: 3, treerl: 3 },
};

/**
 * GRPO's learning rate relative to TreeRL's. GRPO divides a tree's summed advantages by its
 * finished rollouts (dozens per tree at this budget), where TreeRL gives every node of a chain
 * its outcome minus the root's value, divided by √visits only: at one rate GRPO's steps are far
 * smaller. 16× makes independent chains learn at a comparable pace under both learners.
 */
export const GRPO_RATE_FACTOR = 16;

/**
 * The published TreeRL learner's (`treerl-leaf`) learning rate relative to `treerl`'s. Like
 * GRPO it averages over a tree's finished rollouts, so it takes GRPO's factor.
 */
export const TREERL_LEAF_RATE_FACTOR = GRPO_RATE_FACTOR;

/**
 * The task table, used by the run, the sweep and the outside-loop check so that all three train
 * the same tasks. Every task trains 4 prompts on 2048 environment steps per training step except
 * `mixed`, whose 16 prompts of mixed difficulty share 8192 steps under one global budget (the
 * cross-tree split is what it tests); its learning rate is 4× because the update divides by
 * the trees of a step. TRACE and knapsack place 4 rollouts per tree per round.
 */
export const TASKS: Record<EnvName, Record<Learner, Task>> = Object.fromEntries(
  (Object.keys(STEPS) as EnvName[]).map((env) => {
    const mixed = env === 'mixed';
    const base = { prompts: mixed ? 16 : 4, budgetPerStep: mixed ? 8192 : 2048, round: { perTree: 4, global: mixed } };
    const rate = mixed ? 4 : 1;
    return [env, {
      'treerl-leaf': { ...base, steps: STEPS[env]['treerl-leaf'], learningRate: rate * TREERL_LEAF_RATE_FACTOR },
      // TreeRL's credit with branch-mean values: trained exactly as the published one
      'treerl-branch': { ...base, steps: STEPS[env]['treerl-leaf'], learningRate: rate * TREERL_LEAF_RATE_FACTOR },
      grpo: { ...base, steps: STEPS[env].grpo, learningRate: rate * GRPO_RATE_FACTOR },
      treerl: { ...base, steps: STEPS[env].treerl, learningRate: rate },
    }];
  }),
) as Record<EnvName, Record<Learner, Task>>;

/** How a run samples its evaluation episodes (learning-curve points and the final success). */
export interface Evaluation { evalEvery: number; evalEpisodes: number; finalEpisodes: number }

/**
 * The training run of `allocator` on (env, learner) with `seed`: the task's prompts, steps,
 * learning rate and round, and its budget per step times the allocator's budget multiplier
 * (1 except the compute-equivalence rows `independent-1.5x`, `independent-2x`). `merge`: trie
 * trees; `task` overrides parts of the task (small runs in tests).
 */
export function trainConfig(env: EnvName, learner: Learner, allocator: AllocatorName, seed: number, evaluation: Evaluation, options: { merge?: boolean; task?: Partial<Task> } = {}): TrainConfig {
  const task = { ...TASKS[env][learner], ...options.task };
  return {
    env, learner, allocator, seed, merge: options.merge ?? false,
    steps: task.steps, prompts: task.prompts, learningRate: task.learningRate, round: task.round,
    budgetPerStep: task.budgetPerStep * budgetMultiplier(allocator),
    ...evaluation,
  };
}

/** One tuning-seed training run as the sweep and the outside-loop check make them: 400 final evaluation episodes, no learning curve. */
export function tuningConfig(env: EnvName, learner: Learner, seed: number, allocator: AllocatorName): TrainConfig {
  return trainConfig(env, learner, allocator, seed, { evalEvery: 1000, evalEpisodes: 10, finalEpisodes: 400 });
}
