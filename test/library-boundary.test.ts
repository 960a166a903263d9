import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { allocate } from '../src/allocate/allocate.js';
import { assertFinitePlan, NonFiniteOutputError, planToJson } from '../src/allocate/plan.js';
import { ForestError } from '../src/forest/errors.js';
import { assertPackedForest, packForest, type PackedForest } from '../src/forest/packed.js';
import { GpuContext } from '../src/gpu/context.js';
import { scoreCpu } from '../src/score/cpu.js';
import { createScorer, score } from '../src/backend/select.js';
import type { Scorer } from '../src/score/types.js';
import { generateForest } from '../src/synth/generate.js';
import { ScorerDestroyedError } from '../src/util/errors.js';
import { gpuDescribe } from './gpu-support.js';

const forest = generateForest({ trees: 5, dim: 4, seed: 3 });

/** Forgeries a caller might pass for a PackedForest, each refused before any work. */
const forgeries: Array<[string, () => unknown, RegExp]> = [
  ['an empty object', () => ({}), /not a PackedForest.*field "?dim|"dim"/],
  ['null', () => null, /not a PackedForest/],
  ['a groupCount of 1e9', () => ({ ...forest, groupCount: 1e9 }), /groupParent|groupCount|entries/],
  ['a nodeCount past its arrays', () => ({ ...forest, nodeCount: forest.nodeCount + 1 }), /entries, expected/],
  ['a decreasing group offset', () => { const o = forest.groupOffset.slice(); o[1] = o[2] + 1; return { ...forest, groupOffset: o }; }, /groupOffset/],
  ['a child row out of range', () => { const c = forest.groupChild.slice(); c[0] = 1e9; return { ...forest, groupChild: c }; }, /groupChild/],
  ['plain arrays for typed columns', () => ({ ...forest, reward: Array.from(forest.reward) }), /reward.*Float64Array/],
];

describe('a PackedForest is checked at the API boundary', () => {
  for (const [name, make, message] of forgeries) {
    // A forged groupCount of 1e9 used to loop for minutes: the check is structural, so the test timeout would catch a regression.
    it(`refuses ${name} in scoreCpu, score(), allocate and planToJson`, async () => {
      const bad = make() as PackedForest;
      expect(() => assertPackedForest(bad)).toThrow(ForestError);
      expect(() => assertPackedForest(bad)).toThrow(message);
      expect(() => scoreCpu(bad)).toThrow(ForestError);
      await expect(score(bad, { backend: 'cpu' })).rejects.toThrow(ForestError);
      const scores = scoreCpu(forest);
      expect(() => allocate(bad, scores)).toThrow(ForestError);
      expect(() => planToJson(bad, scores, allocate(forest, scores))).toThrow(ForestError);
    });
  }
  it('accepts a packed forest and a structurally sound copy of one', () => {
    expect(() => assertPackedForest(forest)).not.toThrow();
    expect(() => assertPackedForest({ ...forest, reward: forest.reward.map((r) => r / 2) })).not.toThrow();
    const copy = { ...forest, reward: forest.reward.map((r) => r / 2) };
    expect(Array.from(scoreCpu(copy).weight)).toEqual(Array.from(scoreCpu(packForest({ dim: 4, trees: treesOf(copy) })).weight));
  });
});

function treesOf(f: PackedForest) {
  return f.treeIds.map((id, t) => ({
    id,
    nodes: Array.from({ length: f.treeOffset[t + 1] - f.treeOffset[t] }, (_, v) => {
      const row = f.treeOffset[t] + v;
      return { parent: v === 0 ? -1 : f.parentRow[row] - f.treeOffset[t], reward: f.reward[row], visits: f.visits[row], uncertainty: f.uncertainty[row], terminal: f.terminal[row] === 1, embedding: Array.from(f.embedding.subarray(row * f.dim, (row + 1) * f.dim)) };
    }),
  }));
}

describe('the final guard on plans', () => {
  it('throws a named error instead of writing a non-finite number', () => {
    const s = scoreCpu(forest);
    const plan = planToJson(forest, s, allocate(forest, s), { includeScores: true });
    expect(() => assertFinitePlan(plan)).not.toThrow();
    plan.trees[1].scores![0].gradAlpha = NaN;
    expect(() => assertFinitePlan(plan)).toThrow(NonFiniteOutputError);
    expect(() => assertFinitePlan({ ...plan, params: { alpha: Infinity, tau: 1 }, trees: [] })).toThrow(/Infinity as alpha/);
  });
});

async function expectDestroyedRefuses(scorer: Scorer): Promise<void> {
  expect((await scorer.score(forest)).weight.length).toBe(forest.nodeCount);
  scorer.destroy();
  scorer.destroy(); // idempotent
  await expect(scorer.score(forest)).rejects.toThrow(ScorerDestroyedError);
}

describe('every scorer refuses to score after destroy()', () => {
  it('cpu', async () => expectDestroyedRefuses(await createScorer({ backend: 'cpu' })));
  it('auto without an adapter (cpu inside)', async () => expectDestroyedRefuses(await createScorer({ backend: 'auto', gpu: { requestAdapter: async () => null } as unknown as GPU })));
});

gpuDescribe('every scorer refuses to score after destroy() (gpu adapter)', () => {
  let context: GpuContext;
  beforeAll(async () => { context = await GpuContext.create(); });
  afterAll(() => context?.destroy());
  it('gpu', async () => expectDestroyedRefuses(await createScorer({ backend: 'gpu', context })));
  it('auto on the gpu', async () => expectDestroyedRefuses(await createScorer({ backend: 'auto', context })));
  it('gpu and auto refuse a forged forest before touching the device', async () => {
    for (const backend of ['gpu', 'auto'] as const) {
      const scorer = await createScorer({ backend, context });
      try {
        await expect(scorer.score({ ...forest, groupCount: 1e9 } as PackedForest)).rejects.toThrow(ForestError);
        await expect(scorer.score({} as PackedForest)).rejects.toThrow(ForestError);
      } finally {
        scorer.destroy();
      }
    }
  });
});

describe('live plans never print a budget they do not have', () => {
  it('planJson of a tree added after the last plan() says to plan first', async () => {
    const { createLiveForest } = await import('../src/live/create.js');
    const live = await createLiveForest({ dim: 0, backend: 'cpu' });
    live.addTree({ id: 'a', nodes: [{}, { parent: 0 }] });
    await live.plan();
    live.addTree({ id: 'b', nodes: [{}] });
    expect(() => live.planJson()).toThrow(/tree "b" joined after the last plan\(\): call plan\(\) first/);
    await live.plan();
    expect(live.planJson().trees.map((t) => t.budget)).toEqual([16, 16]);
    live.destroy();
  });
});
