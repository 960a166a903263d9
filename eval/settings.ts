import type { AllocatorName } from './allocators/index.js';
import type { EnvName } from './envs/index.js';
import type { TrainConfig } from './train.js';

/**
 * Training steps per environment (the fixed budget is steps × 512): long enough for the policy
 * to learn, short enough that the best allocators have not all saturated at 100%. Navigation
 * gets three goal layouts (they move every 10 steps). Shared by the run, the sweep and the
 * outside-loop check so that all three train the same tasks.
 */
export const STEPS: Record<EnvName, number> = { maze: 15, navigation: 30, dependency: 20, toolagent: 10 };

/**
 * One tuning-seed training run as the sweep and the outside-loop check make them: the full
 * profile's budget and prompts, 400 final evaluation episodes, no learning curve.
 */
export function tuningConfig(env: EnvName, seed: number, allocator: AllocatorName, traceRolloutsPerTree: number): TrainConfig {
  return { env, allocator, seed, steps: STEPS[env], budgetPerStep: 512, prompts: 4, learningRate: 1, evalEvery: 1000, evalEpisodes: 10, finalEpisodes: 400, traceRolloutsPerTree };
}
