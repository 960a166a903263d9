import type { ScoreParams } from '../../src/score/types.js';
import type { Grower } from '../tree.js';

/**
 * A rollout allocator: decides where rollouts start and how far they run until the grower's
 * environment-step budget is spent. One instance lives for a whole training run, so it may
 * carry state (TRACE-learned carries its α, τ).
 */
export interface Allocator {
  readonly name: string;
  grow(g: Grower): void;
  /** The score parameters in use (TRACE only). */
  params?(): ScoreParams;
  /** Rollouts started at a node that already had children, all of them finished episodes (TRACE only). */
  deadEndLaunches?: number;
}

/**
 * Rollouts per allocation round of a round-based allocator (TRACE, knapsack): `perTree` for
 * each tree, or, with `global`, `perTree × trees` split across the trees in one global budget.
 */
export interface RoundSize { perTree: number; global: boolean }

export const DEFAULT_ROUND: Readonly<RoundSize> = Object.freeze({ perTree: 4, global: false });

/** One rollout to start: from `node`, at most `steps` environment steps (Infinity: to the end). */
export interface Launch { node: number; steps: number; deadEnd?: boolean }

/** Round-robin over trees, so a budget that runs out mid-round does not starve the last trees. */
export function interleave<T>(perTree: T[][]): T[] {
  const out: T[] = [];
  const longest = perTree.reduce((m, l) => Math.max(m, l.length), 0);
  for (let i = 0; i < longest; i++) for (const list of perTree) if (i < list.length) out.push(list[i]);
  return out;
}

/** Runs launches in order while budget remains; returns how many started. */
export function runLaunches(g: Grower, launches: Launch[]): number {
  let started = 0;
  for (const l of launches) {
    if (g.remaining() <= 0) break;
    g.rollout(l.node, l.steps);
    started++;
  }
  return started;
}

/** Open (non-terminal) nodes of tree t. */
export function openNodes(g: Grower, t: number): number[] {
  return g.forest.treeNodes[t].filter((v) => g.forest.terminal[v] === 0);
}

/** k distinct picks from `items`, uniformly (partial Fisher–Yates on a copy). */
export function sampleDistinct<T>(items: readonly T[], k: number, next: () => number): T[] {
  const a = items.slice();
  const n = Math.min(k, a.length);
  for (let i = 0; i < n; i++) {
    const j = i + Math.floor(next() * (a.length - i));
    [a[i], a[j]] = [a[j], a[i]];
  }
  return a.slice(0, n);
}
