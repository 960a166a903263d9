import { DEFAULT_RULE } from '../src/allocate/rules/index.js';
import type { AllocatorName } from './allocators/index.js';
import type { Evaluation } from './settings.js';
import type { Learner } from './train.js';

export type ProfileName = 'full' | 'quick' | 'robustness';

/** One evaluation profile: which seeds, learners and rows it trains, on which trees. */
export interface Profile {
  name: ProfileName;
  /** Seeds firstSeed … firstSeed + seeds − 1. */
  firstSeed: number;
  seeds: number;
  learners: readonly Learner[];
  rows: readonly AllocatorName[];
  /** Trie trees (identical actions from one node share a child). */
  merge: boolean;
  evaluation: Evaluation;
}

/** Every row of the full run, in table order. */
export const FULL_ROWS: readonly AllocatorName[] = [
  'trace', 'trace-learned', 'trace-nocontrast', 'trace-outcome', 'trace-v4', 'trace-v3', 'trace-v2', 'trace-v1',
  'independent', 'independent-1.5x', 'independent-2x',
  'uniform', 'entropy', 'puct', 'spo-tree', 'treepo', 'knapsack',
];

/**
 * The quick run's rows: the default and its learned variant (the two the direction check
 * watches), both ablations, the rule it replaces (v3), and the baselines it must not lose to (chains,
 * uniform expansion, knapsack) plus PUCT, which often leads; the treerl-leaf learner only.
 */
export const QUICK_ROWS: readonly AllocatorName[] = ['trace', 'trace-learned', 'trace-nocontrast', 'trace-outcome', 'trace-v3', 'independent', 'uniform', 'knapsack', 'puct'];

/** The robustness table's rows (trie trees). */
export const ROBUSTNESS_ROWS: readonly AllocatorName[] = ['trace', 'trace-nocontrast', 'trace-outcome', 'trace-v4', 'trace-v3', 'independent', 'uniform', 'knapsack'];

/**
 * full: seeds 1–100, both reported learners (treerl-leaf, grpo), every row, 200 evaluation
 * episodes per curve point (one per training step) and 1000 at the end. quick: the full run's
 * first 40 seeds, treerl-leaf, the quick rows, 100 and 400 episodes (training is identical seed
 * for seed, the evaluation samples fewer episodes). robustness: trie trees, seeds 101–140 (in
 * neither run), both reported learners. `--learner treerl` reproduces the committed runs, which
 * were made with the earlier TreeRL learner.
 * Tuning seeds (1001 and up, `sweep.ts`; 2001 and up, `outside-loop.ts`) are in none of them.
 */
export const PROFILES: Record<ProfileName, Profile> = {
  full: { name: 'full', firstSeed: 1, seeds: 100, learners: ['treerl-leaf', 'grpo'], rows: FULL_ROWS, merge: false, evaluation: { evalEvery: 1, evalEpisodes: 200, finalEpisodes: 1000 } },
  quick: { name: 'quick', firstSeed: 1, seeds: 40, learners: ['treerl-leaf'], rows: QUICK_ROWS, merge: false, evaluation: { evalEvery: 1, evalEpisodes: 100, finalEpisodes: 400 } },
  robustness: { name: 'robustness', firstSeed: 101, seeds: 40, learners: ['treerl-leaf', 'grpo'], rows: ROBUSTNESS_ROWS, merge: true, evaluation: { evalEvery: 1, evalEpisodes: 200, finalEpisodes: 1000 } },
};

/** Rows that run with more budget than the others: compute-equivalence references, kept out of the direction. */
export const MORE_BUDGET: readonly AllocatorName[] = ['independent-1.5x', 'independent-2x'];

/** TRACE rows: their paired gaps against independent chains and uniform expansion are reported. */
export const TRACE_ROWS: readonly AllocatorName[] = ['trace', 'trace-learned', 'trace-nocontrast', 'trace-outcome', 'trace-v4', 'trace-v3', 'trace-v2', 'trace-v2-learned', 'trace-v1', 'trace-v1-learned'];

/**
 * Rows drawn in the learning curves (those a profile has). `trace-nocontrast` is left out: it is
 * independent chains seed for seed, and its line would hide theirs.
 */
export const CURVE_ROWS: readonly AllocatorName[] = ['trace', 'trace-outcome', 'trace-v3', 'independent', 'independent-2x', 'uniform', 'knapsack', 'puct'];

/** Bars of the success chart: the curves' rows at equal budget (seven, the palette's size). */
export const BAR_ROWS: readonly AllocatorName[] = CURVE_ROWS.filter((a) => !MORE_BUDGET.includes(a));

export const LABEL: Record<AllocatorName, string> = {
  trace: `TRACE ${DEFAULT_RULE} (α=1, τ=0.5)`,
  'trace-learned': `TRACE ${DEFAULT_RULE} (learned α, τ)`,
  'trace-nocontrast': `TRACE ${DEFAULT_RULE} without contrast (C = 0)`,
  'trace-outcome': `TRACE ${DEFAULT_RULE} on outcome disagreement`,
  'trace-v4': 'TRACE v4 (α=1, τ=0.5)',
  'trace-v3': 'TRACE v3 (α=1, τ=0.5)',
  'trace-v2': 'TRACE v2 (α=1, τ=0.5)',
  'trace-v2-learned': 'TRACE v2 (learned α, τ)',
  'trace-v1': 'TRACE v1 (α=1, τ=0.5)',
  'trace-v1-learned': 'TRACE v1 (learned α, τ)',
  'trace-closed': 'TRACE v1, closed chains',
  'trace-closed-learned': 'TRACE v1, closed chains, learned α, τ',
  independent: 'Independent chains (no tree)',
  'independent-1.5x': 'Independent chains, 1.5× budget',
  'independent-2x': 'Independent chains, 2× budget',
  uniform: 'Uniform (Tree-GRPO)',
  entropy: 'Entropy (TreeRL/ARPO)',
  puct: 'PUCT (mctx)',
  'spo-tree': 'Fixed tree (SPO-tree)',
  treepo: 'Logprob split (TreePO)',
  knapsack: 'Knapsack (Knapsack RL, cross-prompt)',
};

export const SHORT: Record<AllocatorName, string> = {
  trace: DEFAULT_RULE, 'trace-learned': `${DEFAULT_RULE} learned`, 'trace-nocontrast': `${DEFAULT_RULE} no contrast`, 'trace-outcome': `${DEFAULT_RULE} outcome`, 'trace-v4': 'v4', 'trace-v3': 'v3',
  'trace-v2': 'v2', 'trace-v2-learned': 'v2 learned', 'trace-v1': 'v1', 'trace-v1-learned': 'v1 learned',
  'trace-closed': 'v1 closed chains', 'trace-closed-learned': 'v1 closed, learned',
  independent: 'independent', 'independent-1.5x': 'independent 1.5×', 'independent-2x': 'independent 2×',
  uniform: 'uniform', entropy: 'entropy', puct: 'PUCT', 'spo-tree': 'SPO-tree', treepo: 'TreePO', knapsack: 'knapsack',
};
