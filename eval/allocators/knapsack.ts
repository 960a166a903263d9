import type { Grower } from '../tree.js';
import { DEFAULT_ROUND, interleave, runLaunches, type Allocator, type Launch, type RoundSize } from './types.js';

/**
 * Value of N rollouts on a prompt of success rate p, after Knapsack RL (Li et al. 2025,
 * "Knapsack RL: Unlocking Exploration of LLMs via Optimizing Budget Allocation", arXiv
 * 2509.25849): the chance that N rollouts have both outcomes (a non-zero GRPO gradient),
 * 1 − p^N − (1−p)^N, times their information gain p(1−p)².
 */
export function knapsackValue(n: number, p: number): number {
  return (1 - p ** n - (1 - p) ** n) * p * (1 - p) ** 2;
}

/**
 * value(N + 1, p) − value(N, p) = p(1−p)²·(p^N·(1−p) + (1−p)^N·p), in closed form (positive
 * and falling with N for 0 < p < 1, so greedy allocation solves the unit-cost knapsack exactly).
 */
export function marginalValue(n: number, p: number): number {
  return p * (1 - p) ** 2 * (p ** n * (1 - p) + (1 - p) ** n * p);
}

/**
 * Splits `units` rollouts over prompts greedily: each unit goes to the prompt with the largest
 * marginal value of one more rollout, given its count so far (`counts[t]` plus the units it
 * already got in this split) and its success rate `p[t]`; exact ties go to the smaller tree.
 * Returns the units per prompt (length = counts.length).
 */
export function knapsackSplit(units: number, counts: readonly number[], p: readonly number[]): number[] {
  const given = counts.map(() => 0);
  for (let u = 0; u < units; u++) {
    let best = -1, bestValue = -Infinity;
    for (let t = 0; t < counts.length; t++) {
      const value = marginalValue(counts[t] + given[t], p[t]);
      if (value > bestValue) { best = t; bestValue = value; }
    }
    if (best < 0) break;
    given[best]++;
  }
  return given;
}

/**
 * A cross-prompt baseline after Knapsack RL: every rollout is an independent chain from its
 * prompt (no tree), but each round's `perTree × trees` rollouts — the same round size as TRACE's
 * — are split across prompts by `knapsackSplit`, then interleaved across trees as TRACE's are.
 *
 * The paper's: the value function (the chance of a non-zero gradient × p(1−p)²) and the idea of
 * a budget split across prompts as a knapsack. Ours: unit cost per rollout (the step budget
 * still counts environment steps); p = (successes + 1)/(finished + 2) over the prompt's finished
 * rollouts of the current training step (a Laplace estimate, so no prompt's p is ever 0 or 1),
 * N = its rollouts started so far in that step; the split is re-solved every round greedily.
 * The paper solves the knapsack by dynamic programming once per batch from success rates of
 * earlier training, and adds a fallback for unsolved tasks; neither is reproduced here.
 */
export class KnapsackAllocator implements Allocator {
  readonly name = 'knapsack';
  constructor(private readonly round: RoundSize = DEFAULT_ROUND) {}

  grow(g: Grower): void {
    const f = g.forest;
    const roots = f.roots;
    const started = roots.map(() => 0);
    while (g.remaining() > 0) {
      const p = roots.map((r) => (f.rewardSum[r] + 1) / (f.visits[r] + 2));
      const split = knapsackSplit(this.round.perTree * roots.length, started, p);
      const perTree: Launch[][] = split.map((count, t) => Array.from({ length: count }, () => ({ node: roots[t], steps: Infinity })));
      const launches = interleave(perTree);
      const ran = runLaunches(g, launches);
      for (let i = 0; i < ran; i++) started[f.tree[launches[i].node]]++;
      if (ran === 0) break;
    }
  }
}
