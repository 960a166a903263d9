// Allocation on the CPU scorer's threads (allocateOnThreads) gives the plan of one thread bit for
// bit, under every rule, with a budget per tree and with a global total: random forests from
// fast-check (every edge case the arbitraries reach) and generated forests of many trees.
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { allocate, type Allocation } from '../src/allocate/allocate.js';
import type { AllocateOptions, Rule } from '../src/allocate/options.js';
import { planToJson } from '../src/allocate/plan.js';
import { allocateOnThreads, treeRanges } from '../src/allocate/threaded.js';
import { packForest, type PackedForest } from '../src/forest/packed.js';
import { CpuScorer } from '../src/score/cpu.js';
import { generateForest } from '../src/synth/generate.js';
import { forestArb } from './arbitraries.js';

const threads = new CpuScorer({ threads: 3, minParallelCost: 0 });
afterAll(() => threads.destroy());

const RULES: readonly Rule[] = ['v1', 'v2', 'v3'];
const ARRAYS = ['treeBudget', 'unallocated', 'mass', 'branches', 'depth', 'priority', 'pruned', 'live'] as const;

/** The same bytes in every array of the allocation, and the same plan JSON. */
function expectIdentical(forest: PackedForest, scores: Parameters<typeof allocate>[1], got: Allocation, want: Allocation): void {
  for (const key of ARRAYS) {
    const a = Buffer.from(got[key].buffer, got[key].byteOffset, got[key].byteLength);
    const b = Buffer.from(want[key].buffer, want[key].byteOffset, want[key].byteLength);
    if (!a.equals(b)) expect.fail(`${key} differs between threads and one thread`);
  }
  expect(got.unallocatedTotal).toBe(want.unallocatedTotal);
  expect(JSON.stringify(planToJson(forest, scores, got, { includeScores: true }))).toBe(JSON.stringify(planToJson(forest, scores, want, { includeScores: true })));
}

async function compare(forest: PackedForest, rule: Rule, options: AllocateOptions): Promise<void> {
  const scores = threads.scoreSync(forest, { rule, alpha: 1, tau: 0.5 });
  let want: Allocation | Error;
  try {
    want = allocate(forest, scores, options);
  } catch (err) {
    want = err as Error;
  }
  if (want instanceof Error) {
    await expect(allocateOnThreads(forest, scores, options, threads, { minRows: 0 })).rejects.toThrow(want.message);
    return;
  }
  const got = await allocateOnThreads(forest, scores, options, threads, { minRows: 0 });
  expectIdentical(forest, scores, got, want);
}

describe('allocation on threads', () => {
  it('random forests: the plan of 3 threads is the plan of one, byte for byte, every rule and budget mode', async () => {
    await fc.assert(
      fc.asyncProperty(
        forestArb({ maxTrees: 9, maxNodes: 16, maxDim: 4 }),
        fc.constantFrom(...RULES),
        fc.oneof(
          fc.integer({ min: 0, max: 40 }).map((budget): AllocateOptions => ({ budget })),
          fc.record({ totalBudget: fc.integer({ min: 20, max: 200 }), minPerTree: fc.integer({ min: 0, max: 2 }) }),
        ),
        async (input, rule, options) => compare(packForest(input), rule, options),
      ),
      { numRuns: 150, seed: 20261202 },
    );
  });

  it('many generated trees (ranges cut across the forest), every rule, both budget modes', async () => {
    for (const seed of [1, 2, 3]) {
      const forest = generateForest({ trees: 300, dim: 8, seed, minNodes: 1, maxNodes: 60, terminalRate: 0.3 });
      for (const rule of RULES) {
        await compare(forest, rule, { budget: 16 });
        await compare(forest, rule, { totalBudget: 4000, minPerTree: 1 });
      }
    }
  });

  it('a non-finite score is named as on one thread', async () => {
    const forest = generateForest({ trees: 40, dim: 4, seed: 9 });
    const scores = threads.scoreSync(forest);
    scores.weight[forest.treeOffset[30] + 1] = NaN;
    expect(() => allocate(forest, scores)).toThrow(/non-finite weight for tree "29"|non-finite weight/);
    const message = (() => { try { allocate(forest, scores); } catch (err) { return (err as Error).message; } return ''; })();
    await expect(allocateOnThreads(forest, scores, {}, threads, { minRows: 0 })).rejects.toThrow(message);
  });

  it('tree ranges cover every tree once, in order, cut at whole trees', () => {
    const forest = generateForest({ trees: 50, dim: 2, seed: 4 });
    for (const chunks of [1, 2, 7, 50, 80]) {
      const bounds = Array.from(treeRanges(forest, chunks));
      expect(bounds[0]).toBe(0);
      expect(bounds.at(-1)).toBe(forest.treeCount);
      for (let c = 1; c < bounds.length; c++) expect(bounds[c]).toBeGreaterThanOrEqual(bounds[c - 1]);
      expect(bounds.length - 1).toBe(Math.min(chunks, forest.treeCount));
    }
  });
});
