import { assertPackedForest, type PackedForest } from '../forest/packed.js';
import { ScorerDestroyedError } from '../util/errors.js';
import { GpuContext } from '../gpu/context.js';
import { GpuDeviceLostError, GpuUnavailableError, isCpuFallbackError } from '../gpu/errors.js';
import type { GpuTimings } from '../gpu/resident.js';
import { GpuScorer } from '../gpu/scorer.js';
import { CpuScorer } from './cpu.js';
import type { ScoreParams, Scorer, Scores } from './types.js';

export type Backend = 'cpu' | 'gpu' | 'auto';

export interface CreateScorerOptions {
  backend?: Backend;
  /** f16 embeddings on the GPU (needs `shader-f16`; `auto` falls back to f32 with a notice). */
  f16?: boolean;
  /**
   * Called with a human-readable line: which backend `auto` picked and why, and the warning
   * when a lost device makes it finish on the CPU. Without it, only warnings are printed
   * (console.warn).
   */
  onNotice?: (message: string) => void;
  /** Share a `GpuContext` (device, pipelines, buffer pool); it is not destroyed with the scorer. */
  context?: GpuContext;
  /** The `navigator.gpu` to use instead of Dawn's (browsers, tests). */
  gpu?: GPU;
}

/** A scorer that reports its per-call GPU timings (the gpu backend, and `auto` while on the GPU). */
export interface TimedScorer extends Scorer {
  readonly lastTimings: GpuTimings | undefined;
}

/**
 * Picks a scoring backend. `gpu` fails with `GpuUnavailableError` when there is no adapter;
 * `auto` uses the GPU when an adapter exists, says which backend it used through `onNotice`,
 * and finishes on the CPU (with a warning) if the device is lost. `auto` also scores one call
 * on the CPU, with a warning, when its inputs leave the f32 kernels' range
 * (`GpuInputRangeError`, `GpuParamRangeError`) or the GPU returned a non-finite value
 * (`GpuNonFiniteError`); `gpu` throws those.
 */
export async function createScorer(options: CreateScorerOptions = {}): Promise<Scorer> {
  const backend = options.backend ?? 'auto';
  if (backend === 'cpu') return new CpuScorer();
  if (backend === 'gpu') return GpuScorer.create({ f16: options.f16, context: options.context, gpu: options.gpu });
  if (backend !== 'auto') throw new RangeError(`backend must be 'cpu', 'gpu' or 'auto', got ${String(backend)}`);

  const notice = options.onNotice ?? (() => {});
  let context = options.context;
  const owned = !context;
  try {
    context ??= await GpuContext.create({ gpu: options.gpu });
  } catch (err) {
    const why = err instanceof GpuUnavailableError ? 'no WebGPU adapter found' : `the GPU could not be set up (${(err as Error).message})`;
    notice(`backend auto: ${why}; scoring on the cpu backend`);
    return new CpuScorer();
  }
  let f16 = options.f16 ?? false;
  if (f16 && !context.hasF16) {
    notice(`backend auto: ${context.adapterName} has no shader-f16; using f32 embeddings`);
    f16 = false;
  }
  const gpu = await GpuScorer.create({ context, f16 });
  notice(`backend auto: scoring on the gpu backend (${context.adapterName}${f16 ? ', f16 embeddings' : ''})`);
  return new AutoScorer(gpu, options.onNotice, owned ? context : undefined);
}

/** `auto` after an adapter was found: the GPU until its device is lost, then the CPU. */
class AutoScorer implements TimedScorer {
  private gpu: GpuScorer | undefined;
  private readonly cpu = new CpuScorer();
  private destroyed = false;

  constructor(gpu: GpuScorer, private readonly onNotice: ((message: string) => void) | undefined, private readonly ownedContext?: GpuContext) {
    this.gpu = gpu;
  }

  get backend(): 'cpu' | 'gpu' {
    return this.gpu ? 'gpu' : 'cpu';
  }

  get lastTimings(): GpuTimings | undefined {
    return this.gpu?.lastTimings;
  }

  async score(forest: PackedForest, params?: Partial<ScoreParams>): Promise<Scores> {
    if (this.destroyed) throw new ScorerDestroyedError('auto');
    assertPackedForest(forest);
    const gpu = this.gpu;
    if (gpu) {
      try {
        return await gpu.score(forest, params);
      } catch (err) {
        if (isCpuFallbackError(err)) {
          // Inputs the f32 kernels cannot score, or a non-finite result: this call only.
          (this.onNotice ?? console.warn)(`backend auto: ${err.message}; scoring this call on the cpu backend`);
          return this.cpu.score(forest, params);
        }
        if (!(err instanceof GpuDeviceLostError)) throw err;
        if (this.gpu === gpu) {
          const line = `backend auto: ${err.message}; finishing on the cpu backend`;
          (this.onNotice ?? console.warn)(line);
          this.release();
        }
      }
    }
    return this.cpu.score(forest, params);
  }

  destroy(): void {
    this.destroyed = true;
    this.release();
    this.cpu.destroy();
  }

  private release(): void {
    this.gpu?.destroy();
    this.ownedContext?.destroy();
    this.gpu = undefined;
  }
}

export interface ScoreOptions extends CreateScorerOptions {
  params?: Partial<ScoreParams>;
}

/** One-shot convenience: creates a scorer for `backend` (default `auto`), scores, frees it. */
export async function score(forest: PackedForest, options: ScoreOptions = {}): Promise<Scores> {
  const scorer = await createScorer(options);
  try {
    return await scorer.score(forest, options.params);
  } finally {
    scorer.destroy();
  }
}
