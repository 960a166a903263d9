import type { AllocatorName } from './allocators/index.js';
import type { EnvName } from './envs/index.js';
import type { TrainConfig } from './train.js';

/**
 * Training steps per environment (the fixed budget is steps × 512): long enough for the policy
 * to learn, short enough that the best allocators have not all saturated at 100%. Navigation
 * gets three goal layouts (they move every 10 steps). Shared by the run, the sweep and the
 * outside-loop check so that all three train the same tasks.
 */
export const STEPS: Record<EnvName, number> = { maze: 15, navigation: 30, dependency: 20, toolagent: 10, twochoice: 20, midchoice: 15, mixed: 15, twoclean: 10 };

/**
 * Trees per training step and the environment steps they share. Every task trains 4 prompts on
 * 512 steps except `mixed`, whose 16 prompts of mixed difficulty share 2048 steps under one
 * global budget (the cross-tree split is what it tests).
 */
export const BATCH: Record<EnvName, { prompts: number; budgetPerStep: number; learningRate: number }> = {
  maze: { prompts: 4, budgetPerStep: 512, learningRate: 1 },
  navigation: { prompts: 4, budgetPerStep: 512, learningRate: 1 },
  dependency: { prompts: 4, budgetPerStep: 512, learningRate: 1 },
  toolagent: { prompts: 4, budgetPerStep: 512, learningRate: 1 },
  twochoice: { prompts: 4, budgetPerStep: 512, learningRate: 1 },
  midchoice: { prompts: 4, budgetPerStep: 512, learningRate: 1 },
  twoclean: { prompts: 4, budgetPerStep: 512, learningRate: 1 },
  // The update divides by the trees of a step: 4× the rate keeps the step per prompt the same.
  mixed: { prompts: 16, budgetPerStep: 2048, learningRate: 4 },
};

/**
 * One tuning-seed training run as the sweep and the outside-loop check make them: the full
 * profile's budget and prompts, 400 final evaluation episodes, no learning curve.
 */
export function tuningConfig(env: EnvName, seed: number, allocator: AllocatorName, traceRolloutsPerTree: number): TrainConfig {
  return { env, allocator, seed, steps: STEPS[env], ...BATCH[env], evalEvery: 1000, evalEpisodes: 10, finalEpisodes: 400, traceRolloutsPerTree };
}
