import type { PackedForest } from '../src/forest/packed.js';
import { GpuContext } from '../src/gpu/context.js';
import type { GpuTimings as ScorerTimings } from '../src/gpu/resident.js';
import { GpuScorer } from '../src/gpu/scorer.js';
import type { ScoreParams, Scores } from '../src/score/types.js';
import { isEmulated, type AdapterInfo } from './machine.js';
import type { GpuBreakdown } from './results.js';
import { summarise } from './stats.js';

/** One GPU call's breakdown as the scorer reports it (`lastTimings`), in milliseconds. */
export interface GpuTimings {
  /** Host packing into the device layout plus queueing the uploads. */
  uploadMs: number;
  /** GPU time of the compute passes from timestamp queries; undefined where the adapter has none. */
  kernelsMs?: number;
  /** From the last submit until the last result was mapped. */
  waitMs: number;
  /** Host copy-out and scatter of the mapped results. */
  readbackMs: number;
  totalMs: number;
}

/** The GPU paths the benchmark times: f32 and (where the adapter has shader-f16) f16 scorers on one device. */
export interface GpuBench {
  /** The device the scorers share (for benchmarks that drive it directly). */
  context: GpuContext;
  maxBinding: number;
  hasF16: boolean;
  score(forest: PackedForest, params: ScoreParams, f16: boolean): Promise<{ scores: Scores; timings: GpuTimings }>;
  transferFloor(forest: PackedForest, f16: boolean): Promise<GpuTimings>;
  destroy(): void;
}

function convert(t: ScorerTimings): GpuTimings {
  return { uploadMs: t.upload, kernelsMs: t.kernelsFrom === 'timestamp-query' ? t.kernels : undefined, waitMs: t.wait, readbackMs: t.readback, totalMs: t.total };
}

/** Opens the WebGPU device, describes the adapter, and builds the scorers; no adapter is not an error. */
export async function openGpuBench(): Promise<{ bench: GpuBench | undefined; adapter: AdapterInfo }> {
  // One adapter request per process: a second request on the same Dawn instance crashed the
  // process on lavapipe, so the adapter is described from the device GpuContext opened.
  let ctx: GpuContext;
  try {
    ctx = await GpuContext.create();
  } catch (err) {
    return { bench: undefined, adapter: { available: false, reason: (err as Error).message.split('\n')[0] as string } };
  }
  const i: Partial<GPUAdapterInfo> = (ctx.device as GPUDevice & { adapterInfo?: GPUAdapterInfo }).adapterInfo ?? {};
  const adapter: AdapterInfo = {
    available: true,
    name: ctx.adapterName,
    vendor: i.vendor,
    architecture: i.architecture,
    device: i.device,
    description: i.description,
    emulated: isEmulated(i) || /llvmpipe|lavapipe|swiftshader/i.test(ctx.adapterName),
    features: [...ctx.device.features].sort(),
    maxStorageBufferBindingSize: ctx.maxBinding,
    timestampQuery: ctx.hasTimestamps,
    shaderF16: ctx.hasF16,
  };
  const f32 = await GpuScorer.create({ context: ctx });
  const f16 = ctx.hasF16 ? await GpuScorer.create({ context: ctx, f16: true }) : undefined;
  const pick = (half: boolean): GpuScorer => {
    if (!half) return f32;
    if (!f16) throw new Error(`${ctx.adapterName} has no shader-f16`);
    return f16;
  };
  const bench: GpuBench = {
    context: ctx,
    maxBinding: ctx.maxBinding,
    hasF16: ctx.hasF16,
    async score(forest, params, half) {
      const s = pick(half);
      const scores = await s.score(forest, params);
      if (!s.lastTimings) throw new Error('the GPU scorer reported no timings');
      return { scores, timings: convert(s.lastTimings) };
    },
    async transferFloor(forest, half) {
      return convert(await pick(half).measureTransferFloor(forest));
    },
    destroy() {
      f16?.destroy();
      f32.destroy();
      ctx.destroy();
    },
  };
  return { bench, adapter };
}

/** The per-call breakdowns of timed GPU calls, summarised (undefined when none was kept). */
export function breakdown(timings: GpuTimings[]): GpuBreakdown | undefined {
  if (timings.length === 0) return undefined;
  const kernels = timings.map((t) => t.kernelsMs).filter((v): v is number => v !== undefined);
  return {
    upload: summarise(timings.map((t) => t.uploadMs), 'gpu-wall'),
    kernels: kernels.length === timings.length ? summarise(kernels, 'gpu-timestamps') : undefined,
    wait: summarise(timings.map((t) => t.waitMs), 'gpu-wall'),
    readback: summarise(timings.map((t) => t.readbackMs), 'gpu-wall'),
    total: summarise(timings.map((t) => t.totalMs), 'gpu-wall'),
  };
}
