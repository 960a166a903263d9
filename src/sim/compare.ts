import { mixedPrompts } from './choices.js';
import type { Strategy } from './strategies.js';
import { type SimTrainConfig, trainSim } from './train.js';

/** One strategy's runs over the seeds, in seed order. */
export interface StrategyRuns {
  name: string;
  /** Final success rate per seed, in [0, 1]. */
  success: number[];
  /** Environment steps spent per seed. */
  envSteps: number[];
}

/** A paired difference over seeds: mean and 95% t-interval, in success-rate units. */
export interface PairedGap {
  mean: number;
  low: number;
  high: number;
}

/**
 * The demo's task: 16 prompts of mixed difficulty (from solved by the untrained policy to one
 * right option in 4 at four decisions, each revealed only at the episode's end), 2048
 * environment steps per training step shared by all 16 trees, 15 training steps. Learning rate
 * 16 for the published TreeRL update (a mean over each tree's rollouts): independent chains then
 * learn at the pace they did under the earlier per-node update at rate 4 (tuning seeds
 * 1001–1010: 67.0% against 69.2% after training; rate 4 gives 39.7%, rate 64 87.4%).
 */
export function demoTask(seed: number): SimTrainConfig {
  return { env: mixedPrompts, seed, steps: 15, budgetPerStep: 2048, prompts: 16, learningRate: 16, evalEpisodes: 400 };
}

/** Trains every strategy on every seed (the same seeds for all, so differences are paired). */
export function compareStrategies(strategies: readonly Strategy[], seeds: readonly number[], task: (seed: number) => SimTrainConfig = demoTask): StrategyRuns[] {
  return strategies.map((strategy) => {
    const runs = seeds.map((seed) => trainSim(task(seed), strategy));
    return { name: strategy.name, success: runs.map((r) => r.success), envSteps: runs.map((r) => r.envSteps) };
  });
}

/** a − b per seed: the mean and its 95% t-interval (NaN bounds with fewer than 2 seeds). */
export function pairedGap(a: readonly number[], b: readonly number[]): PairedGap {
  const d = a.map((x, i) => x - b[i]);
  const n = d.length;
  const mean = d.reduce((s, x) => s + x, 0) / n;
  if (n < 2) return { mean, low: NaN, high: NaN };
  const variance = d.reduce((s, x) => s + (x - mean) ** 2, 0) / (n - 1);
  const half = tQuantile975(n - 1) * Math.sqrt(variance / n);
  return { mean, low: mean - half, high: mean + half };
}

/** The 97.5% quantile of Student's t with `df` degrees of freedom (table to 30, then the normal's 1.96 plus its first correction). */
function tQuantile975(df: number): number {
  const table = [12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.16, 2.145, 2.131,
    2.12, 2.11, 2.101, 2.093, 2.086, 2.08, 2.074, 2.069, 2.064, 2.06, 2.056, 2.052, 2.048, 2.045, 2.042];
  return df <= 30 ? table[df - 1] : 1.96 + (1.96 ** 3 + 1.96) / (4 * df);
}
