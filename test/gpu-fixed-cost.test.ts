import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BindGroupCache } from '../src/gpu/bind-groups.js';
import { GpuContext } from '../src/gpu/context.js';
import { BufferPool } from '../src/gpu/pool.js';
import { GpuScorer } from '../src/gpu/scorer.js';
import { createLiveForest } from '../src/live/create.js';
import { liveScoresOn, snapshotLive } from '../src/live/snapshot.js';
import { scoreCpu } from '../src/score/cpu.js';
import { generateForest } from '../src/synth/generate.js';
import { deviation, gpuDescribe, withinTolerance } from './gpu-support.js';

/** What a GPU call costs besides its kernels: the context's counters, read before and after. */
function counters(ctx: GpuContext) {
  return {
    bindGroups: ctx.bindGroups.created,
    buffers: ctx.pool.snapshot().created,
    submits: ctx.submits,
    workWritten: ctx.workListsWritten,
    workReused: ctx.workListsReused,
  };
}

function delta(ctx: GpuContext, before: ReturnType<typeof counters>) {
  const now = counters(ctx);
  return Object.fromEntries(Object.entries(now).map(([k, v]) => [k, v - before[k as keyof typeof before]]));
}

describe('the bind group cache', () => {
  // A fake device: bind groups are plain objects, buffers plain objects with a size.
  const fakeDevice = () => {
    let made = 0;
    return { device: { createBindGroup: () => ({ made: ++made }) as unknown as GPUBindGroup } as unknown as GPUDevice, made: () => made };
  };
  const buffer = (size = 1024) => ({ size }) as unknown as GPUBuffer;

  it('creates one bind group per set of buffers and hands it back after', () => {
    const { device, made } = fakeDevice();
    const cache = new BindGroupCache(device, {} as GPUBindGroupLayout, 1 << 30, 32);
    const [p, f, e, w, o, i] = Array.from({ length: 6 }, () => buffer());
    const a = cache.get(p, f, e, w, o, i);
    expect(cache.get(p, f, e, w, o, i)).toBe(a);
    expect(cache.get(p, f, e, buffer(), o, i)).not.toBe(a);
    expect(made()).toBe(2);
    expect([cache.created, cache.reused]).toEqual([2, 1]);
  });

  it('forgets every bind group that names a buffer about to be destroyed, and stays within its capacity', () => {
    const { device } = fakeDevice();
    const cache = new BindGroupCache(device, {} as GPUBindGroupLayout, 1 << 30, 32, 4);
    const shared = buffer();
    const sets = Array.from({ length: 3 }, () => Array.from({ length: 5 }, () => buffer()));
    for (const s of sets) cache.get(shared, ...(s as [GPUBuffer, GPUBuffer, GPUBuffer, GPUBuffer, GPUBuffer]));
    expect(cache.size).toBe(3);
    cache.forget(shared);
    expect(cache.size).toBe(0);
    for (let n = 0; n < 10; n++) cache.get(buffer(), buffer(), buffer(), buffer(), buffer(), buffer());
    expect(cache.size).toBe(4);
  });

  it('pool buffers keep one role: a buffer released as a work buffer is never handed out as another', () => {
    const device = { limits: { maxBufferSize: 1 << 30 }, createBuffer: (d: GPUBufferDescriptor) => ({ size: d.size, usage: d.usage, mapState: 'unmapped', destroy() {} }) as unknown as GPUBuffer };
    const pool = new BufferPool(device as unknown as GPUDevice);
    const work = pool.acquire(256, 8, 'work');
    pool.release(work);
    expect(pool.acquire(256, 8, 'emb')).not.toBe(work);
    expect(pool.acquire(256, 8, 'work')).toBe(work);
  });

  it('is told by the buffer pool before the pool destroys a buffer', () => {
    const destroyed: GPUBuffer[] = [];
    const device = { limits: { maxBufferSize: 1 << 30 }, createBuffer: (d: GPUBufferDescriptor) => ({ size: d.size, usage: d.usage, mapState: 'unmapped', destroy() {} }) as unknown as GPUBuffer };
    const pool = new BufferPool(device as unknown as GPUDevice, 0, (b) => destroyed.push(b));
    const a = pool.acquire(4096, 1, 'a');
    const b = pool.acquire(4096, 1, 'b');
    pool.release(a); // kept idle: within the peak in use
    pool.release(b);
    expect(destroyed).toEqual([]);
    pool.trim();
    expect(destroyed.sort()).toEqual([a, b].sort());
    // Over the idle cap on release (the cap is the peak in use: here one buffer).
    const c = pool.acquire(1 << 20, 1, 'c');
    pool.release(c);
    const d = pool.acquire(1 << 20, 1, 'd');
    pool.release(d);
    expect(destroyed).toContain(d);
  });
});

gpuDescribe('fixed cost of GPU calls', () => {
  let ctx: GpuContext;
  beforeAll(async () => { ctx = await GpuContext.create(); });
  afterAll(() => ctx?.destroy());

  it('a repeated one-shot call on a forest creates no buffers or bind groups and re-sends no work lists, chunked or not', async () => {
    const forest = generateForest({ trees: 80, dim: 16, seed: 11 });
    for (const maxChunkBytes of [undefined, 8192]) {
      const scorer = await GpuScorer.create({ context: ctx, maxChunkBytes });
      await scorer.score(forest, { alpha: 1, tau: 0.5 });
      const before = counters(ctx);
      // New α, τ and rule: only the params change, and the scores follow them.
      const params = { alpha: 0.4, tau: 0.9, rule: 'v1' as const };
      const again = await scorer.score(forest, params);
      const chunks = ctx.submits - before.submits; // one-shot scoring streams chunk by chunk
      if (maxChunkBytes) expect(chunks).toBeGreaterThan(1);
      else expect(chunks).toBe(1);
      expect(delta(ctx, before)).toEqual({ bindGroups: 0, buffers: 0, submits: chunks, workWritten: 0, workReused: chunks });
      expect(withinTolerance(deviation(forest, again, scoreCpu(forest, params)))).toBe(true);
      scorer.destroy();
    }
  });

  it('another forest of another shape gets its own buffers and work lists, and the first forest keeps scoring right', async () => {
    const scorer = await GpuScorer.create({ context: ctx });
    const a = generateForest({ trees: 30, dim: 8, seed: 1 });
    const b = generateForest({ trees: 200, dim: 8, seed: 2 });
    await scorer.score(a);
    const before = counters(ctx);
    const sb = await scorer.score(b);
    expect(delta(ctx, before).workWritten).toBe(1);
    const sa = await scorer.score(a);
    expect(withinTolerance(deviation(a, sa, scoreCpu(a)))).toBe(true);
    expect(withinTolerance(deviation(b, sb, scoreCpu(b)))).toBe(true);
    scorer.destroy();
  });

  it('forests of many sizes scored in turn, twice: a buffer that held one role never serves another with stale contents', async () => {
    // Pooled buffers of one size class are shared across forests; with sizes this varied, one
    // forest's work buffer lands in another's feature or embedding buffer class sooner or later.
    // Tiny forests on purpose: at the pool's 256-byte minimum, a work list of one forest and
    // the embeddings of another share a size class (2 trees at dim 8, 1 tree at dim 2).
    const scorer = await GpuScorer.create({ context: ctx });
    const forests = [
      generateForest({ trees: 2, dim: 8, seed: 7 }), generateForest({ trees: 1, dim: 2, seed: 7 }),
      ...Array.from({ length: 8 }, (_, i) => generateForest({ trees: 1 + 3 * i, dim: 2 + (i % 3) * 2, seed: 40 + i })),
    ];
    for (let round = 0; round < 3; round++) {
      for (const f of forests) {
        const got = await scorer.score(f, { alpha: 0.8 });
        expect(withinTolerance(deviation(f, got, scoreCpu(f, { alpha: 0.8 })))).toBe(true);
      }
    }
    scorer.destroy();
  });

  it('calls in flight at once on one forest use separate buffers and both score right', async () => {
    const scorer = await GpuScorer.create({ context: ctx });
    const forest = generateForest({ trees: 60, dim: 12, seed: 7 });
    await scorer.score(forest);
    const [x, y] = await Promise.all([scorer.score(forest, { alpha: 0.3 }), scorer.score(forest, { alpha: 2 })]);
    expect(withinTolerance(deviation(forest, x, scoreCpu(forest, { alpha: 0.3 })))).toBe(true);
    expect(withinTolerance(deviation(forest, y, scoreCpu(forest, { alpha: 2 })))).toBe(true);
    // Afterwards the pool holds both sets, and a single call reuses one without writing its work lists.
    const before = counters(ctx);
    await scorer.score(forest, { alpha: 0.7 });
    expect(delta(ctx, before)).toMatchObject({ bindGroups: 0, buffers: 0, workWritten: 0 });
    scorer.destroy();
  });

  it('a resident forest re-scores groups of several chunks in one submission, and a repeat of the same shape creates nothing', async () => {
    const scorer = await GpuScorer.create({ context: ctx, maxChunkBytes: 8192 });
    const forest = generateForest({ trees: 80, dim: 16, seed: 12 });
    const resident = await scorer.resident(forest);
    expect(resident.chunkCount).toBeGreaterThan(2);
    const groups = Array.from({ length: forest.groupCount }, (_, g) => g).filter((g) => g % 7 === 0);
    await resident.rescore(groups);
    const before = counters(ctx);
    const got = await resident.rescore(groups, { alpha: 0.6 });
    expect(delta(ctx, before)).toMatchObject({ bindGroups: 0, buffers: 0, submits: 1 });
    const ref = scoreCpu(forest, { alpha: 0.6 });
    for (let i = 0; i < got.rows.length; i++) expect(Math.abs(got.weight[i] - ref.weight[got.rows[i]])).toBeLessThan(1e-4);
    const all = counters(ctx);
    const full = await resident.scoreAll({ alpha: 0.6 });
    expect(ctx.submits - all.submits).toBe(1);
    expect(withinTolerance(deviation(forest, full, ref))).toBe(true);
    resident.destroy();
    scorer.destroy();
  });

  it('a live forest re-scores dirty groups of several chunks in one submission; a grown chunk gets a new bind group and scores right', async () => {
    const live = await createLiveForest({ dim: 8, backend: 'gpu', gpu: { context: ctx, maxChunkBytes: 65536, initialSlots: 8 } });
    const gpu = (live as unknown as { backendNow: { stats: { chunks: number; grownBytes: number; dispatches: number } } }).backendNow;
    // Two small trees: the first chunk starts small and has a bind group once scored.
    live.addForest(generateForest({ trees: 2, dim: 8, seed: 13, minNodes: 5, maxNodes: 8 }));
    await live.rescore();
    // More trees make that chunk grow (its buffers are replaced: the cache must not hand out the
    // bind group of the destroyed ones) and fill more chunks.
    const more = generateForest({ trees: 60, dim: 8, seed: 14, maxNodes: 40 });
    live.addForest({ ...more, treeIds: more.treeIds.map((id) => `more-${id}`) } as typeof more);
    await live.rescore();
    expect(gpu.stats.grownBytes).toBeGreaterThan(0);
    expect(gpu.stats.chunks).toBeGreaterThan(2);
    for (const tree of ['t0', 'more-t30', 'more-t59']) live.update({ tree, node: 1, reward: 0.25, visits: 3 });
    const before = counters(ctx), dispatched = gpu.stats.dispatches;
    expect(await live.rescore()).toBe(3);
    expect(gpu.stats.dispatches - dispatched).toBe(3); // one chunk's dispatches each
    expect(ctx.submits - before.submits).toBe(1);
    const snap = snapshotLive(live);
    expect(withinTolerance(deviation(snap.forest, liveScoresOn(live, snap), scoreCpu(snap.forest, live.scoreParams)))).toBe(true);
    live.destroy();
  });
});
