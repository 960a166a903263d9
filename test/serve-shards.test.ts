import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { TreeInput } from '../src/forest/input.js';
import { LiveSession } from '../src/live/protocol.js';
import { forestArb } from './arbitraries.js';

type Ok = { ok: true; result: Record<string, unknown> };
type Fail = { ok: false; error: { code: string; message: string } };

async function call(session: LiveSession, request: Record<string, unknown>): Promise<Ok | Fail> {
  return JSON.parse((await session.handleLine(JSON.stringify(request)))!) as Ok | Fail;
}

async function ok(session: LiveSession, request: Record<string, unknown>): Promise<Record<string, unknown>> {
  const r = await call(session, request);
  if (!r.ok) throw new Error(`${String(request.op)}: ${r.error.code}: ${r.error.message}`);
  return r.result;
}

async function sessionWith(trees: TreeInput[], dim: number, rule: 'v1' | 'v2' | 'v3'): Promise<LiveSession> {
  const s = new LiveSession({ backend: 'cpu', dim, params: { rule } });
  if (trees.length > 0) await ok(s, { op: 'add-tree', trees });
  return s;
}

/** Both phases over one session per shard, with the gather done by hand. */
async function shardedPlan(shards: LiveSession[], settings: Record<string, unknown>): Promise<Record<string, unknown>[]> {
  const shares = [];
  for (const s of shards) shares.push(await ok(s, { op: 'global-shares', ...(settings.treeFloor !== undefined ? { treeFloor: settings.treeFloor } : {}) }));
  const plans = [];
  for (let i = 0; i < shards.length; i++) plans.push(await ok(shards[i], { op: 'plan-shard', shares, shard: i, scores: true, ...settings }));
  return plans;
}

describe('serve: global-shares and plan-shard', () => {
  it('shard plans together equal one session planning the whole forest, every rule, ties across shards', async () => {
    const config = fc.record({
      rule: fc.constantFrom<'v1' | 'v2' | 'v3'>('v1', 'v2', 'v3'),
      cuts: fc.array(fc.nat(20), { maxLength: 4 }),
      minPerTree: fc.integer({ min: 0, max: 2 }),
      extra: fc.integer({ min: 0, max: 100 }),
    });
    await fc.assert(fc.asyncProperty(forestArb({ maxTrees: 5 }), config, async (input, c) => {
      const trees = [...input.trees, ...input.trees].map((t, i) => ({ ...t, id: `t${i}` }));
      const points = [...new Set(c.cuts.map((x) => x % (trees.length + 1)))].sort((a, b) => a - b);
      const parts: TreeInput[][] = [];
      let lo = 0;
      for (const p of [...points, trees.length]) { parts.push(trees.slice(lo, p)); lo = p; }
      const whole = await sessionWith(trees, (input.dim ?? 0), c.rule);
      const shards = await Promise.all(parts.map((p) => sessionWith(p, (input.dim ?? 0), c.rule)));
      const liveTrees = trees.filter((t) => t.nodes.some((n) => !n.terminal)).length;
      const settings = { totalBudget: c.minPerTree * liveTrees + c.extra, minPerTree: c.minPerTree };
      const single = await ok(whole, { op: 'plan', scores: true, ...settings });
      const plans = await shardedPlan(shards, settings);
      for (const p of plans) { expect(p.totalBudget).toBe(single.totalBudget); expect(p.unallocated).toBe(single.unallocated); expect(p.params).toEqual(single.params); }
      expect(JSON.stringify(plans.flatMap((p) => p.trees as unknown[]))).toBe(JSON.stringify(single.trees));
      for (const s of [whole, ...shards]) s.destroy();
    }), { numRuns: 60 });
  });

  it('refuses shares that no longer match the shard, and bad requests, changing nothing', async () => {
    const tree = (id: string): TreeInput => ({ id, nodes: [{ embedding: [1, 0] }, { parent: 0, reward: 1, embedding: [1, 0.1] }, { parent: 0, embedding: [0, 1] }] });
    const a = await sessionWith([tree('a')], 2, 'v2');
    const b = await sessionWith([tree('b')], 2, 'v2');
    const shares = [await ok(a, { op: 'global-shares' }), await ok(b, { op: 'global-shares' })];
    expect(shares[0]).toMatchObject({ rule: 'v2', treeFloor: 0.25, live: [1] });
    await ok(a, { op: 'update', tree: 'a', node: 1, reward: 0 });
    const before = await ok(a, { op: 'stats' });
    const stale = await call(a, { op: 'plan-shard', shares, shard: 0, totalBudget: 8 });
    expect(stale).toMatchObject({ ok: false, error: { code: 'stale_shares' } });
    for (const bad of [
      { op: 'plan-shard', shares, shard: 1, totalBudget: 8 }, // b's entry, a's trees
      { op: 'plan-shard', shares, shard: 0 },
      { op: 'plan-shard', shares, shard: 2, totalBudget: 8 },
      { op: 'plan-shard', shares: {}, shard: 0, totalBudget: 8 },
      { op: 'plan-shard', shares, shard: 0, totalBudget: 8, budget: 3 },
      { op: 'global-shares', treeFloor: -1 },
    ]) expect((await call(a, bad)).ok).toBe(false);
    expect(await ok(a, { op: 'stats' })).toEqual(before);
    // Phase 1 again, and it goes through; b's entry is still current.
    shares[0] = await ok(a, { op: 'global-shares' });
    const plan = await ok(a, { op: 'plan-shard', shares, shard: 0, totalBudget: 9 });
    expect(plan).toMatchObject({ totalBudget: 9, unallocated: 0 });
    expect((await ok(b, { op: 'plan-shard', shares, shard: 1, totalBudget: 9 })).trees).toHaveLength(1);
    // An empty shard takes part with an empty entry.
    const empty = new LiveSession({ backend: 'cpu', dim: 2, params: { rule: 'v2' } });
    const all = [...shares, await ok(empty, { op: 'global-shares' })];
    expect(await ok(empty, { op: 'plan-shard', shares: all, shard: 2, totalBudget: 9 })).toMatchObject({ totalBudget: 9, unallocated: 0, trees: [] });
    for (const s of [a, b, empty]) s.destroy();
  });
});
