// The live service's answers from outside, as a hostile or careless client meets them: finite
// values only, refused requests that change nothing, results keyed by any tree id, settings
// named as the request gave them, and removal linear in the forest.
import { describe, expect, it } from 'vitest';
import { allocate } from '../src/allocate/allocate.js';
import { planToJson } from '../src/allocate/plan.js';
import type { NdArray } from '../src/forest/columnar.js';
import { encodeNpz } from '../src/forest/npz.js';
import { LiveSession } from '../src/live/protocol.js';
import { runningMean } from '../src/live/store.js';
import { snapshotLive } from '../src/live/snapshot.js';
import { scoreCpu } from '../src/score/cpu.js';

type Reply = { id: unknown; ok: boolean; result?: any; error?: { code: string; message: string; tree?: string; node?: number; field?: string } };

async function send(s: LiveSession, request: unknown): Promise<Reply> {
  return JSON.parse((await s.handleLine(JSON.stringify(request)))!) as Reply;
}

async function sendFrame(s: LiveSession, header: Record<string, unknown>, payload: Uint8Array): Promise<Reply> {
  const frame = s.binaryFrame(JSON.stringify({ ...header, bytes: payload.length }));
  expect(frame).toBeDefined();
  return JSON.parse(await frame!.complete(payload.slice())) as Reply;
}

/** Every number in a response is finite and nothing is null (JSON writes NaN and infinities as null). */
function expectFinite(x: unknown, where = 'result'): void {
  if (typeof x === 'number') expect(Number.isFinite(x), where).toBe(true);
  else if (Array.isArray(x)) x.forEach((y, i) => expectFinite(y, `${where}[${i}]`));
  else if (x !== null && typeof x === 'object') for (const [k, y] of Object.entries(x)) expectFinite(y, `${where}.${k}`);
  else expect(x, where).not.toBeNull();
}

const f64 = (values: number[]): NdArray => ({ kind: 'numeric', dtype: 'float64', shape: [values.length], data: Float64Array.from(values) });
const i64 = (values: number[]): NdArray => ({ kind: 'numeric', dtype: 'int64', shape: [values.length], data: BigInt64Array.from(values.map(BigInt)) });

describe('running means stay finite for finite rewards', () => {
  it('runningMean: the next mean of finite values at the ends of the range is finite, and exact where the plain form is', () => {
    expect(runningMean(-1.7e308, 1.7e308, 2)).toBe(0);
    expect(runningMean(1.7e308, -1.7e308, 1)).toBe(-1.7e308);
    expect(runningMean(-1.7976931348623157e308, 1.7976931348623157e308, 3)).toBeCloseTo(-1.7976931348623157e308 / 3, -300);
    for (const n of [2, 3, 7, 1e9]) expect(Number.isFinite(runningMean(1.7e308, -1.7e308, n))).toBe(true);
    // Where x − mean is finite the result is the plain form's, bit for bit (plans must not change).
    expect(runningMean(0.25, 1, 3)).toBe(0.25 + (1 - 0.25) / 3);
    expect(runningMean(1e308, 1.5e308, 2)).toBe(1e308 + 0.5e308 / 2);
  });

  it('finish-rollout with ±1.7e308: values, global-shares and both plans are finite, and the plan is score + allocate of the forest', async () => {
    const s = new LiveSession({ backend: 'cpu', threads: 1 });
    try {
      expect((await send(s, { op: 'add-tree', tree: { id: 'q', nodes: [{ embedding: [1, 0] }, { parent: 0, reward: 1, visits: 1, embedding: [1, 0.01] }, { parent: 0, reward: 0, visits: 1, embedding: [0, 1] }] } })).ok).toBe(true);
      for (const reward of [-1.7e308, 1.7e308, -1.7e308]) expect((await send(s, { op: 'finish-rollout', tree: 'q', leaf: 1, reward })).ok).toBe(true);
      const values = await send(s, { op: 'values' });
      expect(values.ok).toBe(true);
      expectFinite(values.result);
      expect(values.result.trees[0].visits).toEqual([3, 4, 1]);
      const shares = await send(s, { op: 'global-shares' });
      expect(shares.ok).toBe(true);
      expectFinite(shares.result);
      for (const scores of [true, false]) {
        const plan = await send(s, { op: 'plan', budget: 8, scores });
        expect(plan.ok, JSON.stringify(plan.error)).toBe(true);
        expectFinite(plan.result);
        const live = s.live!;
        const { forest } = snapshotLive(live);
        const ref = scoreCpu(forest, live.scoreParams);
        const { replanned: _, ...got } = plan.result;
        expect(got).toEqual(JSON.parse(JSON.stringify(planToJson(forest, ref, allocate(forest, ref, { budget: 8 }), { includeScores: scores }))));
      }
    } finally {
      s.destroy();
    }
  });
});

describe('a refused request changes nothing', () => {
  it('scores with an unknown tree re-scores nothing: stats stay as they were', async () => {
    const s = new LiveSession({ backend: 'cpu', threads: 1 });
    try {
      await send(s, { op: 'add-tree', tree: { id: 'a', nodes: [{ embedding: [1, 0] }, { parent: 0, reward: 1, visits: 1, embedding: [1, 0] }, { parent: 0, visits: 1, embedding: [0, 1] }] } });
      await send(s, { op: 'plan' });
      expect((await send(s, { op: 'update', tree: 'a', node: 1, reward: 0.5 })).ok).toBe(true);
      const before = (await send(s, { op: 'stats' })).result;
      expect(before).toMatchObject({ rescores: 1, rescoredGroups: 1, dirtyGroups: 1 });
      expect((await send(s, { op: 'scores', trees: ['nope'] })).error).toMatchObject({ code: 'unknown_tree' });
      expect((await send(s, { op: 'scores', trees: ['a', 'a'] })).error?.code).toBe('invalid_request');
      expect((await send(s, { op: 'stats' })).result).toEqual(before);
    } finally {
      s.destroy();
    }
  });

  it('a refused first add-tree does not create the forest (its dim would stick)', async () => {
    const s = new LiveSession({ backend: 'cpu', threads: 1, maxGroupSize: 2 });
    try {
      const wide = { id: 'w', nodes: [{ embedding: [1, 0, 0] }, ...Array.from({ length: 4 }, () => ({ parent: 0, embedding: [0, 1, 0] }))] };
      const empty = (await send(s, { op: 'stats' })).result;
      for (const request of [{ op: 'add-tree', tree: wide }, { op: 'add-tree', trees: [wide] }]) {
        expect((await send(s, request)).error).toMatchObject({ code: 'invalid_value', field: 'children' });
        expect((await send(s, { op: 'stats' })).result).toEqual(empty);
      }
      expect((await send(s, { op: 'add-tree', tree: { id: 'ok', nodes: [{ embedding: [1, 0] }, { parent: 0, embedding: [0, 1] }] } })).ok).toBe(true);
      expect((await send(s, { op: 'stats' })).result).toMatchObject({ dim: 2, trees: 1 });
    } finally {
      s.destroy();
    }
  });

  it('a refused first add-columns does not create the forest either', async () => {
    const s = new LiveSession({ backend: 'cpu', threads: 1, maxGroupSize: 2 });
    try {
      const wide = new Map<string, NdArray>([
        ['tree_offset', i64([0, 5])], ['parent', i64([-1, 0, 0, 0, 0])],
        ['embedding', { kind: 'numeric', dtype: 'float64', shape: [5, 3], data: new Float64Array(15).fill(0.5) }],
      ]);
      const empty = (await send(s, { op: 'stats' })).result;
      expect((await sendFrame(s, { op: 'add-columns' }, encodeNpz(wide))).error).toMatchObject({ code: 'invalid_value', field: 'children' });
      expect((await send(s, { op: 'stats' })).result).toEqual(empty);
      expect((await send(s, { op: 'add-tree', tree: { id: 'ok', nodes: [{ embedding: [1, 0] }] } })).ok).toBe(true);
      expect((await send(s, { op: 'stats' })).result).toMatchObject({ dim: 2, trees: 1 });
    } finally {
      s.destroy();
    }
  });
});

describe('results keyed by tree id', () => {
  it('extend: "first" holds every tree that got rows, __proto__ and constructor included', async () => {
    const s = new LiveSession({ backend: 'cpu', threads: 1 });
    try {
      const tree = (id: string) => ({ id, nodes: [{ embedding: [1] }, { parent: 0, embedding: [0.5] }, { parent: 0, embedding: [0.25] }] });
      expect((await send(s, { op: 'add-tree', trees: [tree('__proto__'), tree('x'), tree('constructor')] })).ok).toBe(true);
      const rows = new Map<string, NdArray>([
        ['tree_id', { kind: 'string', dtype: '<U11', shape: [3], data: ['__proto__', 'x', 'constructor'] }],
        ['parent', i64([0, 1, 0])],
        ['embedding', { kind: 'numeric', dtype: 'float64', shape: [3, 1], data: Float64Array.from([0.1, 0.2, 0.3]) }],
        ['reward', f64([1, 0, 1])],
      ]);
      const r = await sendFrame(s, { op: 'extend', rollouts: [{ tree: '__proto__', leaf: 3, reward: 1 }] }, encodeNpz(rows));
      expect(r.ok, JSON.stringify(r.error)).toBe(true);
      // (A literal { __proto__: 3 } would set a prototype: the expected object comes from JSON.)
      expect(r.result).toEqual(JSON.parse('{"added":3,"first":{"__proto__":3,"x":3,"constructor":3},"updated":0,"rollouts":1}'));
      expect(Object.keys(r.result.first)).toEqual(['__proto__', 'x', 'constructor']);
      const plan = await send(s, { op: 'plan', budget: { ['__proto__']: 2, x: 1, constructor: 3 } });
      expect(plan.result.trees.map((t: { id: string; budget: number }) => [t.id, t.budget])).toEqual([['__proto__', 2], ['x', 1], ['constructor', 3]]);
    } finally {
      s.destroy();
    }
  });

  it('a tree listed twice is refused by plan, scores, values and plan-shard, as by remove-tree', async () => {
    const s = new LiveSession({ backend: 'cpu', threads: 1 });
    try {
      await send(s, { op: 'add-tree', trees: [{ id: 'a', nodes: [{ embedding: [1] }] }, { id: 'b', nodes: [{ embedding: [1] }] }] });
      const shares = (await send(s, { op: 'global-shares' })).result;
      const before = (await send(s, { op: 'stats' })).result;
      for (const request of [
        { op: 'plan', trees: ['b', 'b'] }, { op: 'plan', trees: ['b', 'a', 'b'], scores: true }, { op: 'scores', trees: ['b', 'b'] },
        { op: 'values', trees: ['a', 'a'] }, { op: 'plan-shard', shares: [shares], shard: 0, totalBudget: 4, trees: ['a', 'a'] }, { op: 'remove-tree', trees: ['a', 'a'] },
      ]) {
        const r = await send(s, request);
        expect(r.error?.code, JSON.stringify(request)).toBe('invalid_request');
        expect(r.error?.message).toMatch(/twice/);
        expect((await send(s, { op: 'stats' })).result).toEqual(before);
      }
      expect((await send(s, { op: 'plan', trees: ['b', 'a'] })).result.trees.map((t: { id: string }) => t.id)).toEqual(['b', 'a']);
    } finally {
      s.destroy();
    }
  });
});

describe('settings are named as the request gave them', () => {
  it('a baseDepth whose default maxDepth (4 × baseDepth) is out of range names baseDepth, not maxDepth', async () => {
    const s = new LiveSession({ backend: 'cpu', threads: 1 });
    try {
      await send(s, { op: 'add-tree', tree: { id: 'a', nodes: [{ embedding: [1] }] } });
      const before = (await send(s, { op: 'stats' })).result;
      for (const request of [{ op: 'plan', baseDepth: 2147483647 }, { op: 'plan-shard', shares: [(await send(s, { op: 'global-shares' })).result], shard: 0, totalBudget: 4, baseDepth: 600000000 }]) {
        const r = await send(s, request);
        expect(r.error?.code).toBe('invalid_options');
        expect(r.error?.message).toMatch(/"baseDepth" \d+ makes the default "maxDepth"/);
      }
      expect((await send(s, { op: 'stats' })).result).toEqual(before);
      expect((await send(s, { op: 'plan', baseDepth: 2147483647, maxDepth: 2147483647 })).ok).toBe(true);
      expect((await send(s, { op: 'plan', baseDepth: 536870911 })).ok).toBe(true);
    } finally {
      s.destroy();
    }
  });
});

describe('bulk removal', () => {
  it('removing every tree in one request reads the tree order a linear number of times', async () => {
    const s = new LiveSession({ backend: 'cpu', threads: 1 });
    try {
      const n = 3000;
      const ids = Array.from({ length: n }, (_, t) => `t${t}`);
      expect((await send(s, { op: 'add-tree', trees: ids.map((id) => ({ id, nodes: [{}] })) })).ok).toBe(true);
      // Count every element access to the store's tree order while the request runs.
      const store = s.live!.store;
      let touches = 0;
      store.treeOrder = new Proxy(store.treeOrder, {
        get: (target, key, receiver) => { if (typeof key === 'string' && /^\d+$/.test(key)) touches++; return Reflect.get(target, key, receiver); },
        set: (target, key, value, receiver) => { touches++; return Reflect.set(target, key, value, receiver); },
      });
      expect((await send(s, { op: 'remove-tree', trees: ids })).result).toEqual({ removed: n, trees: 0 });
      expect(touches).toBeLessThanOrEqual(4 * n);
      expect((await send(s, { op: 'stats' })).result).toMatchObject({ trees: 0, nodes: 0 });
      expect((await send(s, { op: 'add-tree', tree: { id: 't1', nodes: [{}] } })).ok).toBe(true);
    } finally {
      s.destroy();
    }
  });
});
