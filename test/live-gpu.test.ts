import fc from 'fast-check';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { GpuContext } from '../src/gpu/context.js';
import { createLiveForest } from '../src/live/create.js';
import type { NodeInput, TreeInput } from '../src/forest/input.js';
import { GpuInputRangeError, GpuParamRangeError } from '../src/gpu/errors.js';
import { FEAT_BYTES } from '../src/gpu/layout.js';
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

  it('rule v2: after random changes (and a switch of rule), scores are within SPEC tolerance of the float64 v2 scoring', async () => {
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 0, max: 2 ** 31 - 1 }), fc.constantFrom(0, 1, 3, 8), fc.integer({ min: 1, max: 20 }), fc.boolean(), async (seed, dim, steps, tinyChunks) => {
        const live = await createLiveForest({ dim, backend: 'gpu', params: { rule: 'v2' }, gpu: { context, ...(tinyChunks ? { maxChunkBytes: 65536, initialSlots: 8 } : {}) } });
        try {
          const rng = new Rng(seed);
          for (const op of randomOps(live, rng, steps)) {
            await op.apply();
            expect(live.scoreParams.rule).toBe('v2');
            if (op.check) await checkLiveAgainstScratch(live, op.check, { exact: false });
          }
          await checkLiveAgainstScratch(live, { budget: 1 + rng.int(0, 20) }, { exact: false });
          // Switching the rule re-scores every group.
          live.setParams({ rule: 'v1' });
          await checkLiveAgainstScratch(live, { budget: 7 }, { exact: false });
          live.setParams({ rule: 'v2' });
          await checkLiveAgainstScratch(live, { budget: 7 }, { exact: false });
        } finally {
          live.destroy();
        }
      }),
      { numRuns: 40 },
    );
  });

  it('rule v5: as visits grow past the gate\'s 2 (finished rollouts, updates), scores stay within SPEC tolerance of the float64 v5 scoring, and across switches to v4 and v3', async () => {
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 0, max: 2 ** 31 - 1 }), fc.constantFrom(0, 1, 3, 8), fc.integer({ min: 1, max: 20 }), fc.boolean(), async (seed, dim, steps, tinyChunks) => {
        const live = await createLiveForest({ dim, backend: 'gpu', params: { rule: 'v5' }, gpu: { context, ...(tinyChunks ? { maxChunkBytes: 65536, initialSlots: 8 } : {}) } });
        try {
          const rng = new Rng(seed);
          for (const op of randomOps(live, rng, steps)) {
            await op.apply();
            expect(live.scoreParams.rule).toBe('v5');
            if (op.check) await checkLiveAgainstScratch(live, op.check, { exact: false });
          }
          // Failed rollouts through random leaves: equal rewards, visits 1 → 2 → 3 (the gate's edge).
          for (let step = 0; step < 6; step++) {
            const ids = live.treeIds();
            if (ids.length === 0) break;
            const id = ids[rng.int(0, ids.length - 1)];
            live.finishRollout(id, { leaf: rng.int(0, live.store.slotSize[live.store.slotOf(id)] - 1) }, 0);
            await checkLiveAgainstScratch(live, { budget: 1 + rng.int(0, 12) }, { exact: false });
          }
          for (const rule of ['v4', 'v3', 'v5'] as const) {
            live.setParams({ rule });
            await checkLiveAgainstScratch(live, { budget: 7 }, { exact: false });
          }
        } finally {
          live.destroy();
        }
      }),
      { numRuns: 30 },
    );
  });

  /**
   * A tree whose rewards sit at `offset` plus small steps (exactly representable: multiples of
   * 1/8 below 2^50) and whose embedding rows are scaled by `scale` (some rows by its inverse too).
   */
  const offsetTree = (rng: Rng, id: string, dim: number, offset: number, scale: number): TreeInput => {
    const n = rng.int(2, 14);
    const nodes: NodeInput[] = [];
    for (let v = 0; v < n; v++) {
      const rowScale = rng.bernoulli(0.25) ? 1 : scale;
      const node: NodeInput = {
        reward: offset + rng.int(0, 8) / 8,
        visits: rng.int(0, 4),
        uncertainty: rng.int(0, 8) / 8,
        embedding: Array.from({ length: dim }, () => rng.normal() * rowScale),
      };
      if (v > 0) node.parent = rng.int(0, v - 1);
      nodes.push(node);
    }
    return { id, nodes };
  };

  it('large reward offsets within a tree and tiny or huge embedding rows score like the float64 reference, through feedback', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 0, max: 2 ** 31 - 1 }),
        fc.constantFrom(1, 3, 8),
        fc.constantFrom(0, 1e15, -3e14, 5e9),
        fc.constantFrom(1, 1e-40, 1e-30, 1e-200, 1e25, 1e36),
        fc.boolean(),
        async (seed, dim, offset, scale, tinyChunks) => {
          const live = await createLiveForest({ dim, backend: 'gpu', gpu: { context, ...(tinyChunks ? { maxChunkBytes: 65536, initialSlots: 8 } : {}) } });
          try {
            const rng = new Rng(seed);
            const trees = rng.int(1, 5);
            for (let t = 0; t < trees; t++) live.addTree(offsetTree(rng, `o${t}`, dim, offset, scale));
            await checkLiveAgainstScratch(live, { budget: 8 }, { exact: false });
            // Feedback moves members (and so the group's reference) within the offset range.
            for (let step = 0; step < 4; step++) {
              const ids = live.treeIds();
              const id = ids[rng.int(0, ids.length - 1)];
              const size = live.store.slotSize[live.store.slotOf(id)];
              if (rng.bernoulli(0.5)) {
                live.update({ tree: id, node: rng.int(0, size - 1), reward: offset + rng.int(0, 16) / 8, visits: rng.int(0, 5), uncertainty: rng.int(0, 8) / 4 });
              } else {
                live.finishRollout(id, { leaf: rng.int(0, size - 1) }, offset + rng.int(0, 1));
              }
              if (rng.bernoulli(0.3)) live.addNodes(id, [{ parent: rng.int(0, size - 1), reward: offset + 0.5, visits: 1, embedding: Array.from({ length: dim }, () => rng.normal() * scale) }]);
              await checkLiveAgainstScratch(live, { budget: 1 + rng.int(0, 12) }, { exact: false });
            }
          } finally {
            live.destroy();
          }
        },
      ),
      { numRuns: 40 },
    );
  });

  it('out of the f32 kernels\' range (a group spanning more than 2e30, tau below f32): backend gpu fails the call; auto finishes on the cpu with a notice', async () => {
    const wide: TreeInput = {
      id: 'wide',
      nodes: [{ embedding: [0, 0] }, { parent: 0, reward: -4e30, visits: 1, embedding: [1, 0] }, { parent: 0, reward: 4e30, visits: 2, embedding: [0, 1] }, { parent: 1, reward: 0.5, visits: 1, embedding: [1, 1] }],
    };
    const calm: TreeInput = { id: 'calm', nodes: [{ embedding: [1, 1] }, { parent: 0, reward: 0.25, visits: 1, embedding: [1, 2] }, { parent: 0, reward: 0.75, visits: 3, embedding: [2, 1] }] };
    for (const backend of ['gpu', 'auto'] as const) {
      const notices: string[] = [];
      const live = await createLiveForest({ dim: 2, backend, gpu: { context }, onNotice: (m) => notices.push(m) });
      live.addTree(calm);
      await checkLiveAgainstScratch(live, { budget: 5 }, { exact: false });
      expect(live.backendKind).toBe('gpu');
      live.addTree(wide);
      if (backend === 'gpu') {
        const err = await live.plan().catch((e: unknown) => e);
        expect(err).toBeInstanceOf(GpuInputRangeError);
        expect((err as Error).message).toMatch(/"wide".*node 0.*reward/s);
        // The call failed as a whole; with the tree gone the device copy scores again.
        live.removeTree('wide');
        await checkLiveAgainstScratch(live, { budget: 5 }, { exact: false });
        live.setParams({ tau: 1e-40 });
        await expect(live.plan()).rejects.toThrow(GpuParamRangeError);
      } else {
        await checkLiveAgainstScratch(live, { budget: 9 }, { exact: true });
        expect(live.backendKind).toBe('cpu');
        expect(notices.at(-1)).toMatch(/float32.*re-scoring on the cpu from now on/);
        live.update({ tree: 'calm', node: 1, reward: 0.5, visits: 2 });
        live.setParams({ tau: 1e-40 });
        await checkLiveAgainstScratch(live, { budget: 9 }, { exact: true });
      }
      live.destroy();
    }
    // Under auto, α/τ outside f32 hand over too.
    const notices: string[] = [];
    const live = await createLiveForest({ dim: 2, backend: 'auto', gpu: { context }, onNotice: (m) => notices.push(m) });
    live.addTree(calm);
    await live.plan();
    live.setParams({ tau: 1e-40 });
    await checkLiveAgainstScratch(live, { budget: 9 }, { exact: true });
    expect(live.backendKind).toBe('cpu');
    expect(notices.at(-1)).toMatch(/tau = 1e-40.*re-scoring on the cpu/);
    live.destroy();
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
    // One group's feature records: its reference value may move with any member's feedback.
    expect(gpu.stats.uploadedBytes - afterLoad.uploadedBytes).toBe(FEAT_BYTES * k);
    expect(gpu.stats.readBackBytes - afterLoad.readBackBytes).toBeLessThanOrEqual(16 * k + 4 + 16);

    // Appending nodes re-sends that tree's slab only, not the forest.
    const before = gpu.stats.uploadedBytes;
    live.addNodes('t9', [{ parent: 0, embedding: new Array(16).fill(0.5) }]);
    await live.rescore();
    const slab = live.store.slotCap[live.store.slotOf('t9')];
    expect(gpu.stats.uploadedBytes - before).toBeLessThanOrEqual(slab * (16 * 4 + FEAT_BYTES));

    const snap = snapshotLive(live);
    expectScoresClose(liveScoresOn(live, snap), scoreCpu(snap.forest, live.scoreParams), snap.forest.nodeCount);
    live.destroy();
  });

  it('on a lost device: backend gpu fails the call; backend auto finishes on the cpu with a notice', async () => {
    for (const backend of ['gpu', 'auto'] as const) {
      const notices: string[] = [];
      // auto never picks a CPU-emulated adapter by itself; handed a context, it uses it. The lost context is this loop's own.
      const own = backend === 'auto' ? await GpuContext.create() : undefined;
      const live = await createLiveForest({ dim: 4, backend, ...(own ? { gpu: { context: own } } : {}), onNotice: (m) => notices.push(m) });
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
      own?.destroy();
    }
  });
});
