import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ForestError } from '../src/forest/errors.js';
import type { PackedForest } from '../src/forest/packed.js';
import { GpuContext } from '../src/gpu/context.js';
import { GpuInputRangeError, GpuNonFiniteError, GpuParamRangeError, GpuValidationError } from '../src/gpu/errors.js';
import { packEmbeddingRange, writeF32Row } from '../src/gpu/layout.js';
import { BufferPool, roundSize } from '../src/gpu/pool.js';
import { ResidentForest } from '../src/gpu/resident.js';
import { GpuScorer } from '../src/gpu/scorer.js';
import { scoreCpu } from '../src/score/cpu.js';
import { createScorer } from '../src/backend/select.js';
import type { Scorer, Scores } from '../src/score/types.js';
import { generateForest } from '../src/synth/generate.js';
import { OptionError } from '../src/util/errors.js';
import { Rng } from '../src/util/random.js';
import { deviation, forestOf, gpuDescribe, withinTolerance } from './gpu-support.js';

/** One tree: a root with `k` children; rewards, uncertainties and embedding rows per child. */
function siblings(rewards: number[], rows: number[][], uncertainties: number[] = rewards.map(() => 0)): PackedForest {
  const dim = rows[0].length;
  const e = new Float64Array((rows.length + 1) * dim);
  e.fill(1, 0, dim);
  rows.forEach((r, i) => e.set(r, (i + 1) * dim));
  return forestOf(dim, [[-1, ...rows.map(() => 0)]], (row) => (row === 0 ? { visits: 1 } : { reward: rewards[row - 1], uncertainty: uncertainties[row - 1], visits: 3 }), e);
}

describe('GPU edge-case helpers (no adapter needed)', () => {
  it('writeF32Row scales rows outside [2^-63, 2^65) into [1, 2) and copies the rest', () => {
    const out = new Float32Array(3);
    for (const m of [1e-300, 1e-160, 1e-40, 1e39, 1e300, 2 ** -1070, 1.7e308]) {
      expect(writeF32Row(out, 0, [m, -m / 2, 0], 0, 3)).toBe(true);
      const max = Math.max(...Array.from(out, Math.abs));
      expect(max).toBeGreaterThanOrEqual(1);
      expect(max).toBeLessThan(2);
      expect(out[1] / out[0]).toBeCloseTo(-0.5, 6);
    }
    expect(writeF32Row(out, 0, [0.25, -3, 1e-20], 0, 3)).toBe(false);
    expect(Array.from(out)).toEqual([0.25, -3, Math.fround(1e-20)]);
    expect(writeF32Row(out, 0, [0, 0, 0], 0, 3)).toBe(false);
    expect(Array.from(out)).toEqual([0, 0, 0]);
    expect(writeF32Row(out, 0, [2 ** -63, 0, 0], 0, 3)).toBe(false);
    expect(writeF32Row(out, 0, [2 ** -63 * 0.99, 0, 0], 0, 3)).toBe(true);
    expect(writeF32Row(out, 0, [-(2 ** 65) * 0.99, 0, 0], 0, 3)).toBe(false);
    expect(writeF32Row(out, 0, [0, -(2 ** 65), 0], 0, 3)).toBe(true);
  });

  it('packEmbeddingRange keeps normal rows as they are and scales only the extreme ones', () => {
    const mags = [1e-300, 1e-40, 2 ** -63, 1e-10, 1, 1e10, 2 ** 65, 1e39, 1e300, 0];
    const dim = 5;
    const e = new Float64Array((mags.length + 1) * dim);
    const rng = new Rng(1);
    for (let i = 0; i <= mags.length; i++) for (let d = 0; d < dim; d++) e[i * dim + d] = rng.normal() * (i === 0 ? 1 : mags[i - 1]);
    const forest = forestOf(dim, [[-1, ...mags.map(() => 0)]], () => ({ visits: 1 }), e);
    const out = packEmbeddingRange(forest, 0, mags.length, false) as Float32Array;
    mags.forEach((m, i) => {
      const row = Array.from(out.subarray(i * dim, (i + 1) * dim));
      const src = Array.from(e.subarray((forest.groupChild[i]) * dim, (forest.groupChild[i] + 1) * dim));
      const max = Math.max(...row.map(Math.abs));
      const srcMax = Math.max(...src.map(Math.abs));
      if (m === 0) expect(max).toBe(0);
      else if (srcMax >= 2 ** -63 && srcMax < 2 ** 65) expect(row).toEqual(src.map(Math.fround));
      else {
        expect(max).toBeGreaterThanOrEqual(1);
        expect(max).toBeLessThan(2);
        row.forEach((x, d) => expect(x * srcMax / max).toBeCloseTo(src[d], -Math.log10(Math.abs(src[d]) * 1e-6 + Number.MIN_VALUE)));
      }
    });
  });

  it('the pool rounds large sizes to an eighth of the next power of two', () => {
    const max = 2 ** 40;
    expect(roundSize(100, max)).toBe(256);
    expect(roundSize(3000, max)).toBe(4096);
    expect(roundSize(2 ** 30 + 1, max)).toBe(2 ** 30 + 2 ** 28); // was 2^31
    expect(roundSize(600 * 2 ** 20, max)).toBe(640 * 2 ** 20); // was 1 GiB
    expect(roundSize(3e9, 2 ** 31 + 2 ** 29)).toBe(Math.ceil(3e9 / 256) * 256);
  });

  it('the pool keeps up to the peak in-use bytes idle, so big repeated workloads stop recreating buffers', () => {
    let created = 0, destroyed = 0;
    const device = {
      limits: { maxBufferSize: 2 ** 40 },
      createBuffer: ({ size, usage }: GPUBufferDescriptor) => {
        created++;
        return { size, usage, mapState: 'unmapped', destroy: () => destroyed++, unmap: () => {} } as unknown as GPUBuffer;
      },
    } as unknown as GPUDevice;
    const pool = new BufferPool(device);
    // One call's worth of buffers at 16 384 trees, dim 4096-ish: well over the old 512 MiB cap.
    const sizes = [300, 200, 120, 80, 40].map((m) => m * 2 ** 20);
    for (let call = 0; call < 10; call++) {
      const held = sizes.map((s) => pool.acquire(s, 1, 'x'));
      for (const b of held) pool.release(b);
    }
    expect(created).toBe(sizes.length);
    expect(destroyed).toBe(0);
    const s = pool.snapshot();
    expect(s.inUseBytes).toBe(0);
    expect(s.idleBytes).toBe(s.peakInUseBytes);
    pool.trim();
    expect(destroyed).toBe(sizes.length);
  });
});

gpuDescribe('GPU edge cases: range, precision, safety net', () => {
  let ctx: GpuContext;
  let gpu: GpuScorer;
  let auto: Scorer;
  const notices: string[] = [];
  beforeAll(async () => {
    ctx = await GpuContext.create();
    gpu = await GpuScorer.create({ context: ctx });
    auto = await createScorer({ backend: 'auto', context: ctx, onNotice: (line) => notices.push(line) });
  });
  afterAll(() => {
    auto?.destroy();
    gpu?.destroy();
    ctx?.destroy();
  });

  const close = (forest: PackedForest, got: Scores, want: Scores = scoreCpu(forest, got.params)) => {
    const d = deviation(forest, got, want);
    expect(withinTolerance(d), d.worst).toBe(true);
  };

  it('keeps sub-unit reward differences at large offsets (reference value per group)', async () => {
    const e = [[1, 0], [1, 0], [1, 0]];
    for (const forest of [
      siblings([1e15 + 0.5, 1e15, 1e15], e),
      siblings([-3e20, -3e20 + 65536, -3e20], e),
      siblings([0.1, 0.2, 0.3], e, [1e12 + 0.25, 1e12, 1e12 + 0.5]),
    ]) {
      const got = await gpu.score(forest);
      close(forest, got);
    }
    // The reviewer's case: the CPU gives C = [0.5, 0.25, 0.25] (the GPU gave [0, 0, 0]).
    const orth = siblings([1e15 + 0.5, 1e15, 1e15], [[1, 0], [0, 1], [-1, 0]]);
    const got = await gpu.score(orth);
    close(orth, got);
    expect(got.contrast[1]).toBeGreaterThan(0.1);
  });

  it('rejects groups outside the f32 range under gpu, naming tree, parent node and field; auto uses the CPU', async () => {
    const e = [[1, 0], [0, 1]];
    const cases: [PackedForest, string][] = [
      [siblings([1e39, 0], e), 'reward'],
      [siblings([3e38, -3e38], e), 'reward'],
      [siblings([0, 0], e, [0, 5e30]), 'uncertainty'],
    ];
    for (const [forest, field] of cases) {
      const err = await gpu.score(forest).catch((x: unknown) => x);
      expect(err).toBeInstanceOf(GpuInputRangeError);
      expect(err).toBeInstanceOf(ForestError);
      expect((err as ForestError).location).toMatchObject({ treeId: 't0', node: 0, field });
      expect((err as Error).message).toMatch(/^tree "t0" \(#0\), node 0, field "\w+": /);
      notices.length = 0;
      const got = await auto.score(forest);
      expect(got.backend).toBe('cpu');
      expect(Array.from(got.contrast)).toEqual(Array.from(scoreCpu(forest).contrast));
      expect(notices.join('\n')).toMatch(/cpu backend/);
    }
    // Huge rewards of unvisited children never enter Δr, so they do not count against the range.
    const unvisited = forestOf(2, [[-1, 0, 0, 0]], (row) => ({ reward: row === 1 ? 1e300 : row, visits: row === 1 ? 0 : 2 }), Float64Array.of(1, 0, 1, 0, 0, 1, 1, 1));
    close(unvisited, await gpu.score(unvisited));
  });

  it('scales tiny and huge embedding rows instead of flushing or overflowing f32', async () => {
    const shape = [[1, 0.2, 0], [1, 0.2, 0.01], [0, 1, 0]];
    for (const m of [1e-40, 1e-160, 1e-300, 1e39, 1e300, 1]) {
      const forest = siblings([0.25, 0.5, 0.75], shape.map((r) => r.map((x) => x * m)));
      const got = await gpu.score(forest);
      close(forest, got);
    }
    // Mixed magnitudes within one group.
    const forest = siblings([0.25, 0.5, 0.75, 1], [[1e-300, 2e-300], [1e300, 2e300], [3e-40, -1e-40], [1, 0]]);
    close(forest, await gpu.score(forest));
  });

  it('rejects alpha or tau outside the f32 range under gpu (RangeError); auto uses the CPU', async () => {
    const forest = generateForest({ trees: 5, dim: 8, seed: 3 });
    for (const params of [{ alpha: 1e39 }, { tau: 1e-40 }, { tau: 1e39 }]) {
      const err = await gpu.score(forest, params).catch((x: unknown) => x);
      expect(err).toBeInstanceOf(GpuParamRangeError);
      expect(err).toBeInstanceOf(RangeError);
      expect(err).toBeInstanceOf(OptionError); // the CLI exits 2, as for a bad flag
      expect((err as Error).message).toMatch(/(alpha|tau) = .* cpu backend/);
      notices.length = 0;
      const got = await auto.score(forest, params);
      expect(got.backend).toBe('cpu');
      expect(notices.join('\n')).toMatch(/cpu backend/);
    }
    // Tiny α is below ε's reach and stays on the GPU; so does the smallest normal-f32 τ (finite,
    // though gradients at such τ amplify f32 rounding beyond the SPEC tolerance).
    close(forest, await gpu.score(forest, { alpha: 1e-45, tau: 0.5 }));
    const sharp = await gpu.score(forest, { alpha: 1, tau: 2e-38 });
    for (const a of [sharp.contrast, sharp.weight, sharp.gradAlpha, sharp.gradTau, sharp.intensity]) expect(a.every(Number.isFinite)).toBe(true);
  });

  it('never returns non-finite scores: gpu throws, auto redoes the call on the CPU', async () => {
    const forest = generateForest({ trees: 8, dim: 4, seed: 4 });
    // Corrupt the node features on their way to the device (a stand-in for a driver fault).
    const queue = ctx.device.queue;
    const original = queue.writeBuffer;
    queue.writeBuffer = function (this: GPUQueue, buffer: GPUBuffer, offset: number, data: ArrayBufferView | ArrayBuffer | SharedArrayBuffer, ...rest: number[]) {
      if (buffer.usage === (GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST) && data instanceof Float32Array) data = new Float32Array(data.length).fill(NaN);
      return original.call(this, buffer, offset, data as ArrayBuffer, ...rest);
    } as typeof queue.writeBuffer;
    try {
      const err = await gpu.score(forest).catch((x: unknown) => x);
      expect(err).toBeInstanceOf(GpuNonFiniteError);
      expect(err).toBeInstanceOf(GpuValidationError); // the CLI exits 1
      expect((err as Error).message).toMatch(/non-finite .* tree "/);
      notices.length = 0;
      const got = await auto.score(forest);
      expect(got.backend).toBe('cpu');
      expect(Array.from(got.weight)).toEqual(Array.from(scoreCpu(forest).weight));
      expect(notices.join('\n')).toMatch(/non-finite/);
      const resident = await ResidentForest.create(ctx, forest);
      try {
        await expect(resident.rescore([0, 1])).rejects.toThrow(GpuNonFiniteError);
        await expect(resident.scoreAll()).rejects.toThrow(GpuNonFiniteError);
      } finally {
        resident.destroy();
      }
    } finally {
      queue.writeBuffer = original;
    }
    expect(ctx.pool.snapshot().inUseBytes).toBe(0);
    close(forest, await gpu.score(forest));
  });

  it('re-packs a resident group relative to its new reference after feature and embedding writes', async () => {
    const e = Float64Array.from({ length: 5 * 3 }, (_, i) => ((i * 7) % 5) - 2);
    const forest = forestOf(3, [[-1, 0, 0, 0, 0]], (row) => ({ reward: row * 0.1, visits: 2, uncertainty: 0.1 }), e);
    const resident = await ResidentForest.create(ctx, forest);
    try {
      const reward = Float64Array.from(forest.reward), uncertainty = Float64Array.from(forest.uncertainty);
      reward.set([1e15 + 0.5, 1e15, 1e15, 1e15 + 0.25], 1);
      const updated = { ...forest, reward, uncertainty };
      resident.writeNodeFeatures([1, 2, 3, 4], updated);
      const emb = Float64Array.from(forest.embedding);
      for (let d = 0; d < 3; d++) { emb[3 + d] *= 1e-300; emb[6 + d] *= 1e-40; emb[9 + d] *= 1e39; }
      resident.writeEmbeddings([1, 2, 3], emb);
      const want = scoreCpu({ ...updated, embedding: emb }, { alpha: 1, tau: 0.5 });
      const got = await resident.scoreAll();
      close(forest, got, want);
      // A write that would leave the f32 range is refused, and nothing is changed.
      const bad = Float64Array.from(reward);
      bad[2] = -1e39;
      expect(() => resident.writeNodeFeatures([2], { ...forest, reward: bad, uncertainty })).toThrow(GpuInputRangeError);
      close(forest, await resident.scoreAll(), want);
    } finally {
      resident.destroy();
    }
  });

  it('reuses one timestamp query set across calls', async () => {
    const forest = generateForest({ trees: 10, dim: 4, seed: 6 });
    await gpu.score(forest);
    const before = ctx.querySetsCreated;
    for (let i = 0; i < 20; i++) await gpu.score(forest);
    expect(ctx.querySetsCreated).toBe(before);
    if (ctx.hasTimestamps) expect(before).toBeGreaterThanOrEqual(1);
    await Promise.all([gpu.score(forest), gpu.score(forest), gpu.score(forest)]);
    expect(ctx.querySetsCreated).toBeLessThanOrEqual(before + 2);
  });

  it('says the transfer floor ran no kernels', async () => {
    const floor = await gpu.measureTransferFloor(generateForest({ trees: 10, dim: 4, seed: 6 }));
    expect(floor.kernels).toBe(0);
    expect(floor.kernelsFrom).toBe('none');
  });
});

export { Rng };
