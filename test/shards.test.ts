import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { allocate } from '../src/allocate/allocate.js';
import type { AllocateOptions, Rule } from '../src/allocate/options.js';
import { planToJson } from '../src/allocate/plan.js';
import { allocateShard, globalBudgetShares, StaleSharesError, type ShardShares } from '../src/allocate/shards.js';
import type { ForestInput, TreeInput } from '../src/forest/input.js';
import { packForest } from '../src/forest/packed.js';
import { scoreCpu } from '../src/score/cpu.js';
import { forestArb } from './arbitraries.js';

/** Trees with ids; with `ties`, every tree appears twice (so equal Q_t, and often equal remainders, fall in different shards). */
function named(input: ForestInput, ties: boolean): TreeInput[] {
  const trees = ties ? [...input.trees, ...input.trees] : input.trees;
  return trees.map((t, i) => ({ ...t, id: `t${i}` }));
}

/** Splits `trees` at the given cut points (sorted, deduplicated, clamped) into consecutive shards. */
function cut(trees: TreeInput[], cuts: number[]): TreeInput[][] {
  const points = [...new Set(cuts.map((c) => c % (trees.length + 1)))].sort((a, b) => a - b);
  const shards: TreeInput[][] = [];
  let lo = 0;
  for (const p of [...points, trees.length]) { shards.push(trees.slice(lo, p)); lo = p; }
  return shards.filter((s) => s.length > 0);
}

/** Runs both phases over the shards; returns each shard's plan JSON. */
function shardedPlans(dim: number, shards: TreeInput[][], rule: Rule, options: AllocateOptions) {
  const parts = shards.map((trees) => { const f = packForest({ dim, trees }); return { f, s: scoreCpu(f, { rule }) }; });
  const gathered: ShardShares[] = parts.map(({ f, s }) => JSON.parse(JSON.stringify(globalBudgetShares(f, s, options))) as ShardShares);
  return parts.map(({ f, s }, i) => planToJson(f, s, allocateShard(f, s, gathered, i, options), { includeScores: true }));
}

describe('sharded global budget', () => {
  it('the union of shard plans equals the single-process plan, bit for bit, under both rules and with ties across shards', () => {
    const config = fc.record({
      rule: fc.constantFrom<Rule>('v1', 'v2', 'v3'),
      ties: fc.boolean(),
      cuts: fc.array(fc.nat(40), { maxLength: 4 }),
      minPerTree: fc.integer({ min: 0, max: 3 }),
      extra: fc.integer({ min: 0, max: 300 }),
      treeFloor: fc.constantFrom(undefined, 0.01, 2),
    });
    fc.assert(fc.property(forestArb({ maxTrees: 8 }), config, (input, c) => {
      const trees = named(input, c.ties);
      const whole = packForest({ dim: input.dim, trees });
      const scores = scoreCpu(whole, { rule: c.rule });
      const base: AllocateOptions = { minPerTree: c.minPerTree, ...(c.rule === 'v2' && c.treeFloor !== undefined ? { treeFloor: c.treeFloor } : {}) };
      const liveTrees = allocate(whole, scores, { budget: 0 }).live.filter((_, v) => whole.parentRow[v] < 0).reduce((a, b) => a + b, 0);
      const options = { ...base, totalBudget: c.minPerTree * liveTrees + c.extra };
      const single = planToJson(whole, scores, allocate(whole, scores, options), { includeScores: true });
      const plans = shardedPlans((input.dim ?? 0), cut(trees, c.cuts), c.rule, options);
      for (const p of plans) {
        expect(p.totalBudget).toBe(single.totalBudget);
        expect(p.unallocated).toBe(single.unallocated);
        expect(p.params).toEqual(single.params);
      }
      expect(JSON.stringify(plans.flatMap((p) => p.trees))).toBe(JSON.stringify(single.trees));
    }), { numRuns: 300 });
  });

  it('breaks exact ties across shards toward the smaller global index', () => {
    // Five identical one-fork trees, two units left over after the even split: they go to the
    // first tree of shard 0 and the first of shard 1, never to later trees of shard 1.
    const tree = (id: string): TreeInput => ({ id, nodes: [{ embedding: [1, 0] }, { parent: 0, reward: 1, embedding: [1, 0.1] }, { parent: 0, reward: 0, embedding: [0, 1] }] });
    const trees = ['a', 'b', 'c', 'd', 'e'].map(tree);
    for (const rule of ['v1', 'v2', 'v3'] as const) {
      const whole = packForest({ dim: 2, trees });
      const scores = scoreCpu(whole, { rule });
      const single = planToJson(whole, scores, allocate(whole, scores, { totalBudget: 12 }), { includeScores: true });
      expect(single.trees.map((t) => t.budget)).toEqual([3, 3, 2, 2, 2]);
      const plans = shardedPlans(2, [trees.slice(0, 1), trees.slice(1)], rule, { totalBudget: 12 });
      expect(JSON.stringify(plans.flatMap((p) => p.trees))).toBe(JSON.stringify(single.trees));
    }
  });

  it('refuses a phase-2 message whose entry for this shard no longer matches its trees', () => {
    const trees: TreeInput[] = [{ id: 'a', nodes: [{ embedding: [1] }, { parent: 0, reward: 1, embedding: [0.5] }, { parent: 0, embedding: [1] }] }];
    const f = packForest({ dim: 1, trees });
    const s = scoreCpu(f);
    const gathered = [globalBudgetShares(f, s)];
    const changed = packForest({ dim: 1, trees: [{ ...trees[0], nodes: [...trees[0].nodes, { parent: 1, embedding: [0] }] }] });
    const cs = scoreCpu(changed);
    expect(() => allocateShard(changed, cs, gathered, 0, { totalBudget: 8 })).toThrow(StaleSharesError);
    expect(() => allocateShard(f, s, gathered, 1, { totalBudget: 8 })).toThrow(/shard index/);
    expect(() => allocateShard(f, s, [{ ...gathered[0], rule: 'v1' }, gathered[0]], 1, { totalBudget: 8 })).toThrow(/rule/);
    expect(() => allocateShard(f, s, gathered, 0, {})).toThrow(/totalBudget/);
    expect(planToJson(f, s, allocateShard(f, s, gathered, 0, { totalBudget: 8 }))).toEqual(planToJson(f, s, allocate(f, s, { totalBudget: 8 })));
  });
});
