import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { largestRemainder } from '../src/allocate/rounding.js';
import { generateForest } from '../src/synth/generate.js';
import { roundTree } from '../src/live/plan.js';
import { createLiveForest } from '../src/live/create.js';
import { snapshotLive } from '../src/live/snapshot.js';
import { LiveError } from '../src/live/store.js';
import { Rng } from '../src/util/random.js';
import { checkLiveAgainstScratch, randomOps } from './live-ops.js';

describe('live forest on the cpu backend', () => {
  it('after any random sequence of changes, scores and plans equal a from-scratch score + allocate (bit for bit)', async () => {
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 0, max: 2 ** 31 - 1 }), fc.integer({ min: 0, max: 5 }), fc.integer({ min: 1, max: 40 }), async (seed, dim, steps) => {
        const live = await createLiveForest({ dim, backend: 'cpu' });
        try {
          const rng = new Rng(seed);
          for (const op of randomOps(live, rng, steps)) {
            await op.apply();
            if (op.check) await checkLiveAgainstScratch(live, op.check, { exact: true });
          }
          await checkLiveAgainstScratch(live, { budget: 1 + rng.int(0, 20) }, { exact: true });
        } finally {
          live.destroy();
        }
      }),
      { numRuns: 150 },
    );
  });

  it('re-scores only the sibling groups a change touches', async () => {
    const live = await createLiveForest({ dim: 4, backend: 'cpu' });
    live.addForest(generateForest({ trees: 6, dim: 4, seed: 3, minNodes: 10, maxNodes: 30 }));
    expect(await live.rescore()).toBe(live.stats().groups);
    expect(await live.rescore()).toBe(0);

    live.update({ tree: 't2', node: 5, reward: 0.25, visits: 3 });
    expect(await live.rescore()).toBe(1);
    live.update({ tree: 't2', node: 0, reward: 0.9, visits: 7 }); // the root is in no group
    expect(await live.rescore()).toBe(0);
    live.update({ tree: 't2', node: 5, terminal: true }); // terminal changes the plan only
    expect(await live.rescore()).toBe(0);

    const path = live.store.pathTo('t3', live.store.slotSize[live.store.slotOf('t3')] - 1);
    live.finishRollout('t3', { path }, 1);
    expect(await live.rescore()).toBe(path.length - 1);

    await live.plan({ budget: 8 });
    live.update({ tree: 't4', node: 1, uncertainty: 0.5 });
    const summary = await live.plan({ budget: 8 });
    expect(summary.replanned).toEqual(['t4']);
    live.destroy();
  });

  it('hands the budget of branches that stopped early to their siblings (v1 flow on the updated tree)', async () => {
    const live = await createLiveForest({ dim: 0, backend: 'cpu', params: { rule: 'v1' } });
    live.addTree({ id: 'q', nodes: [{}, { parent: 0, uncertainty: 0.1 }, { parent: 0, uncertainty: 0.2 }, { parent: 0, uncertainty: 0.3 }] });
    await live.plan({ budget: 12, widen: 0, pruneRatio: 0 });
    const before = live.treePlan('q').allocations;
    expect(before.map((a) => a.node)).toEqual([1, 2, 3]);
    live.update([{ tree: 'q', node: 3, terminal: true }]);
    const after = live.treePlan('q', {});
    await live.plan({ budget: 12, widen: 0, pruneRatio: 0 });
    const replanned = live.treePlan('q').allocations;
    expect(after.allocations).toEqual(before); // nothing changes until re-planned
    expect(replanned.map((a) => a.node)).toEqual([1, 2]);
    expect(replanned.reduce((s, a) => s + a.branches, 0)).toBe(12);
    live.destroy();
  });

  it('rejects bad changes with the tree, node and field named, and applies none of a rejected batch', async () => {
    const live = await createLiveForest({ dim: 2, backend: 'cpu' });
    live.addTree({ id: 'a', nodes: [{ embedding: [1, 0] }, { parent: 0, embedding: [0, 1], visits: 2, reward: 1 }] });
    const before = snapshotLive(live);
    const err = (f: () => void) => { try { f(); } catch (e) { return e as LiveError; } throw new Error('expected an error'); };

    let e = err(() => live.update([{ tree: 'a', node: 1, reward: 0 }, { tree: 'a', node: 1, visits: -1 }]));
    expect(e).toBeInstanceOf(LiveError);
    expect(e.message).toBe('tree "a" (#0), node 1, field "visits": must be an integer >= 0, got -1');
    expect(live.store.reward[live.store.rowOf('a', 1)]).toBe(1);

    e = err(() => live.addNodes('a', [{ parent: 1, embedding: [1, 1] }, { parent: 7, embedding: [1, 1] }]));
    expect(e.message).toBe('tree "a" (#0), node 3, field "parent": must be a node index in [0, 2] (parents come before children), got 7');
    e = err(() => live.addNodes('a', [{ parent: 0, embedding: [1, NaN] }]));
    expect(e.message).toBe('tree "a" (#0), node 2, field "embedding[1]": must be a finite number, got NaN');
    e = err(() => live.update({ tree: 'b', node: 0, reward: 1 }));
    expect(e.code).toBe('unknown_tree');
    expect(e.message).toContain('"b"');
    e = err(() => live.update({ tree: 'a', node: 2, reward: 1 }));
    expect(e.code).toBe('unknown_node');
    e = err(() => live.finishRollout('a', { path: [1] }, 1));
    expect(e.message).toBe('tree "a" (#0), node 1, field "path[0]": the path must start at the root (node 0)');
    e = err(() => live.addTree({ id: 'a', nodes: [{ embedding: [1, 1] }] }));
    expect(e.code).toBe('duplicate_tree');
    e = err(() => live.addTree({ id: 'c', nodes: [{ embedding: [1, 1] }, { parent: 0, embedding: [1] }] }));
    expect(e.message).toBe('tree "c" (#1), node 1, field "embedding": must have 2 numbers (dim), got 1');

    const after = snapshotLive(live);
    expect(after.forest).toEqual(before.forest);
    expect(live.treeIds()).toEqual(['a']);
    live.destroy();
  });

  it('keeps a group\'s pair distances only while its children stay (slab reuse, appends, pool compaction)', async () => {
    const live = await createLiveForest({ dim: 3, backend: 'cpu' });
    const rng = new Rng(11);
    const emb = () => [rng.normal(), rng.normal(), rng.normal()];
    const wide = (id: string, k: number) => ({
      id,
      nodes: [{ embedding: emb() }, ...Array.from({ length: k }, () => ({ parent: 0, embedding: emb(), visits: rng.int(0, 3), reward: rng.next(), uncertainty: rng.next() }))],
    });
    const s = live.store;
    for (let round = 0; round < 6; round++) {
      // Groups of 30+ children hold 435+ distances each: the pool grows and compacts on the way.
      live.addTree(wide(`a${round}`, 30 + round));
      live.addTree(wide(`b${round}`, 20));
      await checkLiveAgainstScratch(live, { budget: 16 }, { exact: true });
      const root = s.rowOf(`b${round}`, 0);
      expect(s.pairKnown[root]).toBe(1);
      live.addNodes(`b${round}`, [{ parent: 0, embedding: emb(), visits: 2, reward: 0.5 }]);
      expect(s.pairKnown[s.rowOf(`b${round}`, 0)]).toBe(0); // a new sibling: the distances are recomputed
      live.update({ tree: `a${round}`, node: 1 + round, reward: rng.next(), visits: 3 });
      await checkLiveAgainstScratch(live, { budget: 16 }, { exact: true });
      live.removeTree(`a${round}`); // its slab, and the rows' distance storage, go to the next tree
    }
    live.destroy();
  });

  it('grows a tree past its slab and keeps its scores and plan right', async () => {
    const live = await createLiveForest({ dim: 3, backend: 'cpu' });
    live.addTree({ id: 'x', nodes: [{ embedding: [1, 0, 0] }, { parent: 0, embedding: [1, 0.1, 0], visits: 1, reward: 1 }] });
    live.addTree({ id: 'y', nodes: [{ embedding: [0, 1, 0] }] });
    const rng = new Rng(9);
    for (let i = 0; i < 200; i++) {
      const n = live.store.slotSize[live.store.slotOf('x')];
      live.addNodes('x', [{ parent: rng.int(0, n - 1), embedding: [rng.normal(), rng.normal(), rng.normal()], visits: rng.int(0, 3), reward: rng.next() }]);
    }
    expect(live.store.slotCap[live.store.slotOf('x')]).toBeGreaterThanOrEqual(202);
    await checkLiveAgainstScratch(live, { totalBudget: 40 }, { exact: true });
    live.destroy();
  });
});

describe('roundTree', () => {
  it('equals the shared largestRemainder, ties included', () => {
    fc.assert(fc.property(fc.array(fc.oneof(fc.constantFrom(0, 0.25, 0.5, 0.75, 1.5, 2.25), fc.double({ min: 0, max: 5, noNaN: true })), { minLength: 1, maxLength: 40 }), fc.integer({ min: 0, max: 3 }), (xs, pad) => {
      const n = xs.length + pad;
      const x = new Float64Array(n + 3);
      xs.forEach((v, i) => { x[pad + i] = v; });
      const total = Math.round(xs.reduce((a, b) => a + b, 0));
      const identity = Int32Array.from({ length: n + 3 }, (_, i) => i);
      const got = new Int32Array(n + 3), want = new Int32Array(n + 3);
      roundTree(x, pad, n, total, got, identity, new Int32Array(n + 3));
      largestRemainder(x, identity.subarray(pad, n), total, want, new Int32Array(n));
      expect(Array.from(got)).toEqual(Array.from(want));
    }), { numRuns: 2000 });
  });
});

describe('global budget and per-tree budgets', () => {
  it('per-tree budgets by id must name every tree', async () => {
    const live = await createLiveForest({ dim: 0, backend: 'cpu' });
    live.addTree({ id: 'a', nodes: [{}] });
    live.addTree({ id: 'b', nodes: [{}] });
    await expect(live.plan({ budget: { a: 3 } })).rejects.toThrow('budget has no entry for tree "b"');
    const summary = await live.plan({ budget: { a: 3, b: 5 } });
    expect(summary.replanned).toEqual(['a', 'b']);
    expect(live.treePlan('b').allocations).toEqual([{ node: 0, branches: 5, depth: 4 }]);
    live.destroy();
  });
});

describe('adding a batch of trees', () => {
  it('grows the columns once for the whole batch, not tree by tree, and plans it as a from-scratch scoring and allocation would', async () => {
    const batch = generateForest({ trees: 200, dim: 8, seed: 21 });
    const live = await createLiveForest({ dim: 8, backend: 'cpu' });
    live.addTree({ id: 'first', nodes: [{ embedding: new Array(8).fill(0.5) }] });
    const before = live.store.capacityVersion;
    live.addForest(batch);
    // Each growth copies every column (the embeddings too): one for the batch, not one per doubling.
    expect(live.store.capacityVersion - before).toBeLessThanOrEqual(1);
    expect(live.store.capacity).toBeGreaterThanOrEqual(live.store.usedRows);
    // Batch after batch, growth stays geometric: 20 more batches of a fifth the size grow it a few times, not 20.
    const mid = live.store.capacityVersion;
    for (let i = 0; i < 20; i++) {
      const more = generateForest({ trees: 40, dim: 8, seed: 100 + i });
      live.addForest({ ...more, treeIds: more.treeIds.map((id) => `more${i}-${id}`) } as typeof more);
    }
    expect(live.store.capacityVersion - mid).toBeLessThanOrEqual(4);
    await checkLiveAgainstScratch(live, { budget: 7 }, { exact: true });
    live.destroy();
  });
});

describe('the cpu live backend on several threads', () => {
  it('scores large re-scores on worker threads bit for bit like one thread, through random changes', async () => {
    const one = await createLiveForest({ dim: 64, backend: 'cpu', threads: 1 });
    const two = await createLiveForest({ dim: 64, backend: 'cpu', threads: 2 });
    const scorerOf = (live: typeof one) => (live as unknown as { backendNow: { scorer: { workerChunks: number } } }).backendNow.scorer;
    const same = () => {
      const a = one.store, b = two.store;
      expect(a.usedRows).toBe(b.usedRows);
      for (const col of ['contrast', 'weight', 'gradAlpha', 'gradTau', 'intensity'] as const) {
        for (let r = 0; r < a.usedRows; r++) if (!Object.is(a[col][r], b[col][r])) throw new Error(`${col} differs at row ${r}: ${a[col][r]} vs ${b[col][r]}`);
      }
    };
    // A batch large enough for the threads (200 trees at dim 64), then changes of every kind.
    const batch = generateForest({ trees: 200, dim: 64, seed: 31 });
    for (const live of [one, two]) live.addForest(batch);
    await one.rescore();
    await two.rescore();
    same();
    // The first large re-score starts the workers, and the calling thread does not wait for a
    // worker still starting up; re-score everything (new α) until they have taken part.
    for (let round = 0; round < 400 && scorerOf(two).workerChunks === 0; round++) {
      for (const live of [one, two]) live.setParams({ alpha: 1 + (round % 7) / 10 });
      await one.rescore();
      await two.rescore();
      same();
    }
    expect(scorerOf(two).workerChunks).toBeGreaterThan(0);
    expect(scorerOf(one).workerChunks).toBe(0);
    const rng1 = new Rng(5), rng2 = new Rng(5);
    const ops1 = randomOps(one, rng1, 60), ops2 = randomOps(two, rng2, 60);
    for (let op = ops1.next(), op2 = ops2.next(); !op.done && !op2.done; op = ops1.next(), op2 = ops2.next()) {
      op.value.apply();
      op2.value.apply();
      if (op.value.check) {
        await one.plan(op.value.check);
        await two.plan(op2.value.check!);
        same();
        expect(two.planJson()).toEqual(one.planJson());
      }
    }
    // New α and τ re-score every group: on the threads again. The calling thread and the
    // workers take chunks from one queue, so on a busy machine the calling thread can take them
    // all in one re-score; re-score (new α each time) until a worker has taken part.
    const before = scorerOf(two).workerChunks;
    for (let round = 0; round < 400 && scorerOf(two).workerChunks === before; round++) {
      for (const live of [one, two]) live.setParams({ alpha: 0.37 + round / 1000, tau: 0.61 });
      await one.rescore();
      await two.rescore();
      same();
    }
    expect(scorerOf(two).workerChunks).toBeGreaterThan(before);
    one.destroy();
    two.destroy();
  });

  it('refuses a thread count that is not an integer >= 1, whatever the backend', async () => {
    for (const backend of ['cpu', 'auto', 'gpu'] as const) {
      await expect(createLiveForest({ dim: 2, backend, threads: 0 })).rejects.toThrow('threads must be an integer >= 1');
      await expect(createLiveForest({ dim: 2, backend, threads: 1.5 })).rejects.toThrow('threads must be an integer >= 1');
    }
  });

  it('refuses changes while a rescore is in flight, and runs overlapping plans one after the other', async () => {
    const live = await createLiveForest({ dim: 64, backend: 'cpu', threads: 2 });
    live.addForest(generateForest({ trees: 200, dim: 64, seed: 32 }));
    const first = live.plan({ budget: 5 });
    // The re-score of 200 new trees is on the worker threads (or awaiting them): no change may slip in.
    expect(() => live.addNodes('t3', [{ parent: 0, embedding: new Array(64).fill(0.25) }])).toThrow('while a rescore or plan is in flight');
    expect(() => live.update({ tree: 't3', node: 1, reward: 1, visits: 2 })).toThrow('while a rescore or plan is in flight');
    expect(() => live.setParams({ alpha: 0.5 })).toThrow('while a rescore or plan is in flight');
    const second = live.plan({ budget: 5 });
    await Promise.all([first, second]);
    live.update({ tree: 't3', node: 1, reward: 1, visits: 2 }); // accepted once idle
    await checkLiveAgainstScratch(live, { budget: 5 }, { exact: true });
    live.destroy();
  });
});
