import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createLiveForest } from '../src/live/create.js';
import type { LiveForest } from '../src/live/forest.js';
import { LiveSession } from '../src/live/protocol.js';
import { generateForest } from '../src/synth/generate.js';
import { Rng } from '../src/util/random.js';

/** (tree, node) → rollouts, from placements or from a plan's allocations. */
function countsOf(list: readonly { tree: string; node: number }[]): Map<string, number> {
  const out = new Map<string, number>();
  for (const p of list) out.set(`${p.tree}/${p.node}`, (out.get(`${p.tree}/${p.node}`) ?? 0) + 1);
  return out;
}

function planCounts(live: LiveForest): Map<string, number> {
  const out = new Map<string, number>();
  for (const t of live.planJson().trees) for (const a of t.allocations) out.set(`${t.id}/${a.node}`, a.branches);
  return out;
}

async function forestOf(seed: number, trees: number): Promise<LiveForest> {
  const live = await createLiveForest({ dim: 3, backend: 'cpu' });
  live.addForest(generateForest({ trees, dim: 3, seed, minNodes: 2, maxNodes: 30 }));
  return live;
}

describe('continuous placement', () => {
  it('placing a round one rollout at a time, with nothing finished between, gives exactly the round plan', async () => {
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 1, max: 1e6 }), fc.integer({ min: 1, max: 12 }), fc.integer({ min: 0, max: 40 }), async (seed, trees, extra) => {
        const concurrency = trees + extra;
        const one = await forestOf(seed, trees), all = await forestOf(seed, trees);
        try {
          const singles = [];
          for (let i = 0; i < concurrency; i++) {
            const r = await one.place(1, { totalBudget: concurrency });
            expect(r.placements).toHaveLength(1);
            singles.push(...r.placements);
          }
          const round = await all.place(concurrency, { totalBudget: concurrency });
          expect(countsOf(singles)).toEqual(countsOf(round.placements));
          expect(countsOf(round.placements)).toEqual(planCounts(all));
          expect(one.inFlight).toBe(concurrency);
        } finally {
          one.destroy();
          all.destroy();
        }
      }),
      { numRuns: 60 },
    );
  });

  it('a freed slot goes where the plan of the concurrency, with the evidence now, wants more rollouts than are running', async () => {
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 1, max: 1e6 }), async (seed) => {
        const rng = new Rng(seed);
        const live = await forestOf(seed, 1 + rng.int(0, 6));
        try {
          const C = live.treeCount + rng.int(0, 20);
          const first = (await live.place(C, { totalBudget: C })).placements;
          // Some rollouts end; their trees' evidence changes (a finished rollout through the start node).
          const ended = first.filter(() => rng.next() < 0.4);
          for (const p of ended) live.finishRollout(p.tree, { leaf: p.node }, rng.next() < 0.5 ? 1 : 0);
          const running = countsOf(first.filter((p) => !ended.includes(p)));
          const { placements } = await live.place(ended.length, { totalBudget: C }, ended.map((p) => p.ticket));
          // The round plan with the evidence now, minus what runs, is where the new ones go:
          // each placement was at a node of largest deficit at its time.
          const plan = planCounts(live);
          const now = new Map(running);
          for (const p of placements) {
            const key = `${p.tree}/${p.node}`;
            const deficit = (k: string) => (plan.get(k) ?? 0) - (now.get(k) ?? 0);
            const best = Math.max(...[...plan.keys()].map(deficit));
            expect(deficit(key)).toBe(best);
            now.set(key, (now.get(key) ?? 0) + 1);
          }
          expect(live.inFlight).toBe(C);
        } finally {
          live.destroy();
        }
      }),
      { numRuns: 60 },
    );
  });

  it('ties go to the larger unrounded deficit, then the earlier tree, then the smaller node', async () => {
    const live = await createLiveForest({ dim: 0, backend: 'cpu' });
    try {
      live.addTree({ id: 'a', nodes: [{ parent: -1 }] });
      live.addTree({ id: 'b', nodes: [{ parent: -1 }] });
      const { placements } = await live.place(2, { totalBudget: 2, minPerTree: 0 });
      expect(placements.map((p) => p.tree)).toEqual(['a', 'b']);
      expect(placements.map((p) => p.ticket)).toEqual([1, 2]);
    } finally {
      live.destroy();
    }
  });

  it('tickets: a release is checked whole before anything changes, and removed trees take theirs along', async () => {
    const live = await forestOf(7, 4);
    try {
      const { placements } = await live.place(8, { totalBudget: 8 });
      await expect(live.place(1, { totalBudget: 8 }, [placements[0].ticket, 999])).rejects.toThrow(/release\[1\]: no running rollout has ticket 999/);
      await expect(live.place(1, { totalBudget: 8 }, [placements[0].ticket, placements[0].ticket])).rejects.toThrow(/listed twice/);
      await expect(live.place(1, { totalBudget: 8.5 }, [placements[0].ticket])).rejects.toThrow(/totalBudget/);
      expect(live.inFlight).toBe(8);
      const inT0 = placements.filter((p) => p.tree === 't0').length;
      live.removeTree('t0');
      expect(live.inFlight).toBe(8 - inT0);
    } finally {
      live.destroy();
    }
  });

  it('serve protocol: place, release by ticket, refusals change nothing', async () => {
    const session = new LiveSession({ backend: 'cpu' });
    try {
      const send = async (req: unknown) => JSON.parse((await session.handleLine(JSON.stringify(req)))!);
      expect((await send({ id: 0, op: 'place', totalBudget: 4 })).result).toEqual({ placements: [], inFlight: 0, replanned: [] });
      expect((await send({ id: 1, op: 'add-tree', trees: [{ id: 'q', nodes: [{ parent: -1, embedding: [0, 0] }, { parent: 0, reward: 1, visits: 1, embedding: [1, 0] }, { parent: 0, reward: 0, visits: 1, embedding: [1, 0.1] }] }] })).ok).toBe(true);
      const r = await send({ id: 2, op: 'place', totalBudget: 4, count: 4 });
      expect(r.ok).toBe(true);
      expect(r.result.placements).toHaveLength(4);
      expect(r.result.inFlight).toBe(4);
      const bad = await send({ id: 3, op: 'place', totalBudget: 4, release: [r.result.placements[0].ticket, 77] });
      expect(bad.ok).toBe(false);
      expect(bad.error.code).toBe('invalid_options');
      const again = await send({ id: 4, op: 'place', totalBudget: 4, count: 1, release: [r.result.placements[0].ticket] });
      expect(again.result.inFlight).toBe(4);
      expect((await send({ id: 5, op: 'place' })).error.message).toMatch(/totalBudget/);
    } finally {
      session.destroy();
    }
  });
});
