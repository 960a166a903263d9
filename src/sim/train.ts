import { Rng } from '../util/random.js';
import type { Env } from './env.js';
import { successRate, treerlLeafUpdate } from './learner.js';
import { TabularPolicy } from './policy.js';
import { SimForest } from './rollouts.js';
import type { Strategy } from './strategies.js';

export interface SimTrainConfig {
  /** Builds the task; called once per run with the run's seed. */
  env: (seed: number) => Env;
  seed: number;
  /** Training steps (policy updates). */
  steps: number;
  /** Environment steps every training step may spend growing its trees (the same for every strategy). */
  budgetPerStep: number;
  /** Trees (prompts) per training step. */
  prompts: number;
  learningRate: number;
  /** Episodes sampled from the trained policy to measure its success. */
  evalEpisodes: number;
}

export interface SimTrainResult {
  /** Success rate of the trained policy over `evalEpisodes` sampled episodes. */
  success: number;
  /** Environment steps spent over the run (steps × budgetPerStep when every step spent its budget). */
  envSteps: number;
  /** Rollouts finished over the run. */
  finished: number;
}

/**
 * One simulated training run: every step grows one tree per prompt with `strategy` under the
 * step budget, then takes one policy-gradient step with TreeRL's advantages as published
 * (every finished rollout a sample; `treerlLeafUpdate`).
 * The policy's and the environment's randomness depend only on the seed, so two strategies
 * trained from one seed start from the same policy and tasks.
 */
export function trainSim(config: SimTrainConfig, strategy: Strategy): SimTrainResult {
  const env = config.env(config.seed);
  const policy = new TabularPolicy(env.stateCount, env.actions);
  const rng = new Rng(config.seed * 7919 + 17);
  let envSteps = 0, finished = 0;
  for (let step = 0; step < config.steps; step++) {
    env.setTrainingStep(step);
    const forest = new SimForest(env, policy, rng, config.budgetPerStep);
    for (let p = 0; p < config.prompts; p++) forest.addRoot(p);
    strategy.grow(forest);
    envSteps += forest.used;
    for (let p = 0; p < config.prompts; p++) finished += forest.visits[forest.root(p)];
    treerlLeafUpdate(policy, forest, config.learningRate / config.prompts);
  }
  return { success: successRate(env, policy, config.evalEpisodes, config.seed), envSteps, finished };
}
