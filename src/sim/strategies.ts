import { allocate } from '../allocate/allocate.js';
import { DEFAULT_RULE, type AllocateOptions } from '../allocate/options.js';
import { scoreCpu } from '../score/cpu.js';
import type { ScoreParams } from '../score/types.js';
import type { SimForest } from './rollouts.js';

/** Where a training step's rollouts start: spends the forest's whole budget of environment steps. */
export interface Strategy {
  readonly name: string;
  grow(forest: SimForest): void;
}

/** A rollout to start: at `node`, for `steps` policy steps (Infinity: to the episode's end). */
interface Launch { node: number; steps: number }

/** Runs the trees' launch lists round-robin (one per tree in turn), so a budget that runs out cuts every tree alike. Returns rollouts that took a step. */
function runRoundRobin(forest: SimForest, perTree: Launch[][]): number {
  let started = 0;
  const longest = Math.max(0, ...perTree.map((list) => list.length));
  for (let i = 0; i < longest && forest.remaining() > 0; i++) {
    for (const list of perTree) if (i < list.length && forest.rollout(list[i].node, list[i].steps) > 0) started++;
  }
  return started;
}

/** The no-tree baseline (GRPO's sampling): every rollout starts at the prompt and runs to the episode's end. */
export const independentChains: Strategy = {
  name: 'independent chains',
  grow(forest) {
    const roots = forest.treeNodes.map((nodes) => [{ node: nodes[0], steps: Infinity }]);
    while (forest.remaining() > 0) if (runRoundRobin(forest, roots) === 0) break;
  },
};

/**
 * Uniform random expansion (Tree-GRPO's sampler): 2 chains per prompt, then rounds of 2 nodes
 * drawn uniformly from each tree's open nodes, each continued to the episode's end.
 */
export const uniformExpansion: Strategy = {
  name: 'uniform expansion',
  grow(forest) {
    runRoundRobin(forest, forest.treeNodes.map((nodes) => [nodes[0], nodes[0]].map((node) => ({ node, steps: Infinity }))));
    while (forest.remaining() > 0) {
      const perTree = forest.treeNodes.map((nodes) => pickDistinct(nodes.filter((v) => !forest.terminal[v]), 2, forest).map((node) => ({ node, steps: Infinity })));
      if (runRoundRobin(forest, perTree) === 0) break;
    }
  },
};

/** `count` distinct items drawn uniformly (partial Fisher–Yates on a copy). */
function pickDistinct(items: number[], count: number, forest: SimForest): number[] {
  const n = Math.min(count, items.length);
  for (let i = 0; i < n; i++) {
    const j = i + Math.floor(forest.rng.next() * (items.length - i));
    [items[i], items[j]] = [items[j], items[i]];
  }
  return items.slice(0, n);
}

/**
 * TRACE through the library: each round packs the trees, scores them on the CPU and allocates
 * `rolloutsPerTree` × trees rollouts under one global budget, then starts `branches` rollouts at
 * every planned node (to the episode's end; under v1, for `depth` steps as v1 specifies), until
 * the step budget is spent.
 */
export function traceStrategy(params: ScoreParams, options: AllocateOptions = {}, rolloutsPerTree = 4): Strategy {
  const rule = params.rule ?? DEFAULT_RULE;
  return {
    name: `TRACE ${rule}`,
    grow(forest) {
      const trees = forest.treeNodes.length;
      while (forest.remaining() > 0) {
        const packed = forest.pack();
        const scores = scoreCpu(packed, params);
        const plan = allocate(packed, scores, { ...options, budget: undefined, totalBudget: trees * rolloutsPerTree, minPerTree: 1 });
        const perTree = forest.treeNodes.map((nodes, t) => nodes.flatMap((node, i) => {
          const row = packed.treeOffset[t] + i;
          return Array.from({ length: plan.branches[row] }, () => ({ node, steps: rule === 'v1' ? plan.depth[row] : Infinity }));
        }));
        if (runRoundRobin(forest, perTree) === 0) break;
      }
    },
  };
}
