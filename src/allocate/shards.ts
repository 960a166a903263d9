import { createHash } from 'node:crypto';
import { assertPackedForest, type PackedForest } from '../forest/packed.js';
import type { Scores } from '../score/types.js';
import { allocate, beginAllocation, type Allocation } from './allocate.js';
import { resolveAllocateOptions, type AllocateOptions, type Rule } from './options.js';
import { LargestRemainder } from './rounding.js';
import { prepareTrees } from './trees.js';
import { OptionError } from '../util/errors.js';

/**
 * Phase 1 of a sharded global budget: what the split across trees needs about one shard's
 * trees, in tree order. O(trees) numbers, never embeddings.
 */
export interface ShardShares {
  /** The allocation rule these weights were computed under. */
  rule: Rule;
  /** q0 of Q_t. */
  treeFloor: number;
  /** 1 for a tree with a live root, else 0. */
  live: number[];
  /** Q_t = q0 + S_t (the rule's signal) for live trees, 0 for the others. */
  q: number[];
  /** Hash of the trees' ids, node counts, liveness, Q and the rule: phase 2 refuses a shard whose state moved. */
  fingerprint: string;
}

/**
 * Per tree of `forest`, in tree order: liveness and the global-budget weight Q_t, summed in
 * group order exactly as `allocate`'s global split does, so the numbers are bit-identical.
 */
export function globalBudgetShares(forest: PackedForest, scores: Scores, options: AllocateOptions = {}): ShardShares {
  assertPackedForest(forest);
  const perTree = { ...options, budget: undefined, totalBudget: undefined };
  const opts = resolveAllocateOptions(perTree, scores.params.rule);
  const { treeCount, treeOffset } = forest;
  if (scores.intensity.length !== forest.groupCount) throw new RangeError(`scores do not match the forest (${scores.intensity.length} intensities for ${forest.groupCount} groups)`);
  // allocate's own first pass: liveness and S_t exactly as its global split reads them.
  const work = beginAllocation(forest, scores, perTree);
  prepareTrees(work, 0, treeCount);
  const live: number[] = new Array(treeCount);
  const q: number[] = new Array(treeCount);
  for (let t = 0; t < treeCount; t++) {
    live[t] = work.live[treeOffset[t]];
    q[t] = live[t] === 0 ? 0 : opts.treeFloor + work.signal[t];
  }
  const sizes = Array.from({ length: treeCount }, (_, t) => treeOffset[t + 1] - treeOffset[t]);
  return { rule: opts.rule, treeFloor: opts.treeFloor, live, q, fingerprint: shareFingerprint(opts.rule, opts.treeFloor, forest.treeIds, sizes, live, q) };
}

/** A short hash of what phase 2 relies on; equal states give equal strings on every machine. */
export function shareFingerprint(rule: Rule, treeFloor: number, ids: readonly string[], sizes: readonly number[], live: readonly number[], q: readonly number[]): string {
  const h = createHash('sha256');
  h.update(JSON.stringify([rule, treeFloor, ids, sizes, live, q]));
  return h.digest('hex').slice(0, 32);
}

/** Every shard's phase-1 data must be well formed and computed under one rule and one q0. */
export function checkGathered(gathered: readonly ShardShares[]): void {
  if (!Array.isArray(gathered) || gathered.length === 0) throw new OptionError('the gathered shares must be a non-empty array, one entry per shard');
  const first = gathered[0];
  gathered.forEach((s, i) => {
    if (s === null || typeof s !== 'object') throw new OptionError(`gathered[${i}] must be a shard's shares object`);
    if (s.rule !== first.rule || s.treeFloor !== first.treeFloor) throw new OptionError(`gathered[${i}] was computed under rule ${String(s.rule)}, treeFloor ${String(s.treeFloor)}; shard 0 under rule ${first.rule}, treeFloor ${first.treeFloor}`);
    if (!Array.isArray(s.live) || !Array.isArray(s.q) || s.live.length !== s.q.length) throw new OptionError(`gathered[${i}] must have arrays "live" and "q" of one length`);
    for (let t = 0; t < s.q.length; t++) {
      const l = s.live[t], qt = s.q[t];
      if ((l !== 0 && l !== 1) || typeof qt !== 'number' || !Number.isFinite(qt) || (l === 1 ? !(qt > 0) : qt !== 0)) {
        throw new OptionError(`gathered[${i}] tree #${t}: live must be 0 or 1 and q a number > 0 for a live tree, 0 otherwise; got live ${String(l)}, q ${String(qt)}`);
      }
    }
    if (typeof s.fingerprint !== 'string') throw new OptionError(`gathered[${i}].fingerprint must be a string`);
  });
}

/**
 * Phase 2's global split: the budgets of every tree of every shard, in the global order
 * (shard order, then tree order within a shard), computed exactly as `allocate` does for the
 * concatenated forest: Σ Q in that order, μ + rest·Q_t/ΣQ, largest remainder across all trees
 * (ties to the smaller global index). Returns the budgets and what no tree received.
 */
export function splitGathered(gathered: readonly ShardShares[], total: number, minPerTree: number): { budgets: Float64Array; unallocatedTotal: number } {
  let treeCount = 0;
  for (const s of gathered) treeCount += s.q.length;
  const share = new Float64Array(treeCount);
  let liveTrees = 0, qSum = 0, t = 0;
  for (const s of gathered) {
    for (let i = 0; i < s.q.length; i++, t++) {
      if (!s.live[i]) continue;
      liveTrees++;
      share[t] = s.q[i];
      qSum += share[t];
    }
  }
  if (total < minPerTree * liveTrees) throw new OptionError(`total budget ${total} is below minPerTree ${minPerTree} × ${liveTrees} live trees`);
  const budgets = new Float64Array(treeCount);
  if (liveTrees === 0) return { budgets, unallocatedTotal: total };
  const rest = total - minPerTree * liveTrees;
  for (let u = 0; u < treeCount; u++) if (share[u] > 0) share[u] = minPerTree + (rest * share[u]) / qSum;
  new LargestRemainder().round(share, 0, treeCount, total, budgets);
  return { budgets, unallocatedTotal: 0 };
}

/** A phase-2 message that does not fit this shard's current state. */
export class StaleSharesError extends OptionError {
  override name = 'StaleSharesError';
}

/**
 * Phase 2: this shard's part of the plan a single process holding every shard's trees (in
 * the global order) would make with `options.totalBudget` — identical, field for field.
 * `gathered[shardIndex]` must be this shard's phase-1 data for its current state.
 */
export function allocateShard(forest: PackedForest, scores: Scores, gathered: readonly ShardShares[], shardIndex: number, options: AllocateOptions): Allocation {
  const opts = resolveAllocateOptions(options, scores.params.rule);
  if (opts.totalBudget === undefined) throw new OptionError('a sharded plan needs totalBudget');
  checkGathered(gathered);
  if (!Number.isInteger(shardIndex) || shardIndex < 0 || shardIndex >= gathered.length) throw new OptionError(`shard index must be an integer in [0, ${gathered.length - 1}], got ${String(shardIndex)}`);
  const mine = globalBudgetShares(forest, scores, options);
  const entry = gathered[shardIndex];
  if (entry.fingerprint !== mine.fingerprint || entry.q.length !== forest.treeCount) {
    throw new StaleSharesError(`gathered[${shardIndex}] does not match this shard's trees as they are now (fingerprint ${String(entry.fingerprint)}, now ${mine.fingerprint}): the trees changed after phase 1; run phase 1 again`);
  }
  const { budgets, unallocatedTotal } = splitGathered(gathered, opts.totalBudget, opts.minPerTree);
  let offset = 0;
  for (let i = 0; i < shardIndex; i++) offset += gathered[i].q.length;
  const own = budgets.subarray(offset, offset + forest.treeCount);
  const { totalBudget: _total, ...perTree } = options;
  const allocation = allocate(forest, scores, { ...perTree, budget: own });
  return { ...allocation, options: opts, unallocatedTotal };
}
