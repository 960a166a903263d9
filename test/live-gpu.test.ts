import fc from 'fast-check';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { GpuContext } from '../src/gpu/context.js';
import { createLiveForest } from '../src/live/create.js';
import type { LiveForest } from '../src/live/forest.js';
import type { GpuLiveBackend } from '../src/live/gpu.js';
import { liveScoresOn, snapshotLive } from '../src/live/snapshot.js';
import { scoreCpu } from '../src/score/cpu.js';
import { generateForest } from '../src/synth/generate.js';
import { Rng } from '../src/util/random.js';
import { gpuDescribe } from './gpu-support.js';
import { checkLiveAgainstScratch, expectScoresClose, randomOps } from './live-ops.js';

gpuDescribe('live forest on the gpu backend', () => {
  let context: GpuContext;
  beforeAll(async () => { context = await GpuContext.create(); });
  afterAll(() => context?.destroy());

  const backendOf = (live: LiveForest) => live.backend as GpuLiveBackend;

  it('after any random sequence of changes, scores are within SPEC tolerance of a from-scratch float64 scoring, and plans equal allocate on them', async () => {
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 0, max: 2 ** 31 - 1 }), fc.constantFrom(0, 1, 3, 8, 33), fc.integer({ min: 1, max: 30 }), fc.boolean(), async (seed, dim, steps, tinyChunks) => {
        // Tiny chunks force several device chunks and chunk growth with a handful of trees.
        const live = await createLiveForest({ dim, backend: 'gpu', gpu: { context, ...(tinyChunks ? { maxChunkBytes: 65536, initialSlots: 8 } : {}) } });
        try {
          const rng = new Rng(seed);
          for (const op of randomOps(live, rng, steps)) {
            await op.apply();
            if (op.check) await checkLiveAgainstScratch(live, op.check, { exact: false });
          }
          await checkLiveAgainstScratch(live, { budget: 1 + rng.int(0, 20) }, { exact: false });
        } finally {
          live.destroy();
        }
      }),
      { numRuns: 60 },
    );
  });

  it('keeps the forest on the device: a small change sends a few bytes and reads back only the dirty groups', async () => {
    const live = await createLiveForest({ dim: 16, backend: 'gpu', gpu: { context } });
    const forest = generateForest({ trees: 64, dim: 16, seed: 4, minNodes: 20, maxNodes: 60 });
    live.addForest(forest);
    await live.plan({ budget: 16 });
    const gpu = backendOf(live);
    const afterLoad = { ...gpu.stats };
    expect(afterLoad.uploadedBytes).toBeGreaterThanOrEqual(forest.nodeCount * 16 * 4);

    live.update({ tree: 't7', node: 3, reward: 0.75, visits: 5 });
    expect(await live.rescore()).toBe(1);
    const k = live.store.childCount[live.store.parentRow[live.store.rowOf('t7', 3)]];
    expect(gpu.stats.uploadedBytes - afterLoad.uploadedBytes).toBe(24); // one feature record
    expect(gpu.stats.readBackBytes - afterLoad.readBackBytes).toBeLessThanOrEqual(16 * k + 4 + 16);

    // Appending nodes re-sends that tree's slab only, not the forest.
    const before = gpu.stats.uploadedBytes;
    live.addNodes('t9', [{ parent: 0, embedding: new Array(16).fill(0.5) }]);
    await live.rescore();
    const slab = live.store.slotCap[live.store.slotOf('t9')];
    expect(gpu.stats.uploadedBytes - before).toBeLessThanOrEqual(slab * (16 * 4 + 24));

    const snap = snapshotLive(live);
    expectScoresClose(liveScoresOn(live, snap), scoreCpu(snap.forest, live.scoreParams), snap.forest.nodeCount);
    live.destroy();
  });

  it('on a lost device: backend gpu fails the call; backend auto finishes on the cpu with a notice', async () => {
    for (const backend of ['gpu', 'auto'] as const) {
      const notices: string[] = [];
      const live = await createLiveForest({ dim: 4, backend, onNotice: (m) => notices.push(m) });
      expect(live.backendKind).toBe('gpu');
      live.addForest(generateForest({ trees: 5, dim: 4, seed: 8 }));
      await live.plan();
      const ctx = backendOf(live).context;
      ctx.loseDevice();
      await ctx.lost;
      live.update({ tree: 't1', node: 2, reward: 0.3, visits: 2 });
      if (backend === 'gpu') {
        await expect(live.plan()).rejects.toThrow(/device was lost/);
      } else {
        await checkLiveAgainstScratch(live, { budget: 9 }, { exact: true });
        expect(live.backendKind).toBe('cpu');
        expect(notices.at(-1)).toMatch(/device was lost.*re-scoring on the cpu/);
      }
      live.destroy();
    }
  });
});
