import { assertPackedForest, type PackedForest } from '../forest/packed.js';
import { adapterIdentity, adapterName, cpuEmulationReason, requestGpuAdapter } from '../gpu/adapter.js';
import { ScorerDestroyedError } from '../util/errors.js';
import { GpuContext } from '../gpu/context.js';
import { gpuDeviceFiles } from '../gpu/devices.js';
import { GpuDeviceLostError, GpuUnavailableError, isCpuFallbackError } from '../gpu/errors.js';
import type { GpuTimings } from '../gpu/resident.js';
import { GpuScorer } from '../gpu/scorer.js';
import { CpuScorer } from '../score/cpu.js';
import type { ScoreParams, Scorer, Scores } from '../score/types.js';

export type Backend = 'cpu' | 'gpu' | 'auto';

export interface CreateScorerOptions {
  backend?: Backend;
  /** f16 embeddings on the GPU (needs `shader-f16`; `auto` falls back to f32 with a notice). */
  f16?: boolean;
  /**
   * Called with one short human-readable line: which backend `auto` picked and why, and the
   * warning when a lost device makes it finish on the CPU. `detail`, when there is one, explains
   * the line at length (why no GPU was used); the CLI prints it under `--verbose`. Without
   * `onNotice`, only warnings are printed (console.warn).
   */
  onNotice?: (message: string, detail?: string) => void;
  /** Share a `GpuContext` (device, pipelines, buffer pool); it is not destroyed with the scorer. */
  context?: GpuContext;
  /** The `navigator.gpu` to use instead of Dawn's (browsers, tests). */
  gpu?: GPU;
  /** Threads of the CPU backend (and of `auto` when it scores on the CPU); see `CpuScorerOptions`. Default: available parallelism. */
  threads?: number;
}

/** A scorer that reports its per-call GPU timings (the gpu backend, and `auto` while on the GPU). */
export interface TimedScorer extends Scorer {
  readonly lastTimings: GpuTimings | undefined;
}

/**
 * Picks a scoring backend. `gpu` fails with `GpuUnavailableError` when there is no adapter;
 * `auto` uses the GPU when a real (not CPU-emulated) adapter exists, or the `context` given,
 * says once which backend it chose and why through `onNotice`,
 * and finishes on the CPU (with a warning) if the device is lost. `auto` also scores one call
 * on the CPU, with a warning, when its inputs leave the f32 kernels' range
 * (`GpuInputRangeError`, `GpuParamRangeError`) or the GPU returned a non-finite value
 * (`GpuNonFiniteError`); `gpu` throws those.
 */
export async function createScorer(options: CreateScorerOptions = {}): Promise<Scorer> {
  const backend = options.backend ?? 'auto';
  const cpu = () => new CpuScorer({ threads: options.threads });
  if (backend === 'cpu') return cpu();
  if (backend === 'gpu') return GpuScorer.create({ f16: options.f16, context: options.context, gpu: options.gpu });
  if (backend !== 'auto') throw new RangeError(`backend must be 'cpu', 'gpu' or 'auto', got ${String(backend)}`);

  const notice = options.onNotice ?? (() => {});
  let context = options.context;
  const owned = !context;
  if (!context) {
    const choice = await chooseAutoBackend(options.gpu);
    if (choice.backend === 'cpu') {
      const scorer = cpu();
      notice(`backend auto: ${choice.why}; scoring on the cpu backend (${scorer.threads} thread${scorer.threads === 1 ? '' : 's'})`, choice.detail);
      return scorer;
    }
    try {
      context = await GpuContext.create({ adapter: choice.adapter });
    } catch (err) {
      notice(`backend auto: the GPU could not be set up (${(err as Error).message}); scoring on the cpu backend`);
      return cpu();
    }
  }
  let f16 = options.f16 ?? false;
  if (f16 && !context.hasF16) {
    notice(`backend auto: ${context.adapterName} has no shader-f16; using f32 embeddings`);
    f16 = false;
  }
  const gpu = await GpuScorer.create({ context, f16 });
  notice(`backend auto: scoring on the gpu backend (${context.adapterName}${owned ? ', a hardware adapter' : ', the context given'}${f16 ? ', f16 embeddings' : ''})`);
  return new AutoScorer(gpu, cpu(), options.onNotice, owned ? context : undefined);
}

/**
 * What `auto` picks: a real GPU's adapter, or the CPU and why — `why` in a few words (the
 * one-line notice every start prints), `detail` at length where there is more to say.
 */
export type AutoChoice = { backend: 'gpu'; adapter: GPUAdapter; name: string } | { backend: 'cpu'; why: string; detail?: string };

/**
 * `auto`'s choice: the GPU when the adapter WebGPU offers is a real one; the CPU when there is
 * none or when it is CPU-emulated (llvmpipe/lavapipe, SwiftShader, WARP — slower than the CPU
 * backend on the same cores), decided without asking WebGPU on Linux when `dev` (default
 * `/dev`) holds no GPU device file. Used by `createScorer` and `createLiveForest`.
 */
export async function chooseAutoBackend(gpu?: GPU, dev = '/dev'): Promise<AutoChoice> {
  const noDevice = gpu === undefined ? noGpuDeviceReason(dev) : undefined;
  if (noDevice !== undefined) return { backend: 'cpu', why: 'no GPU device', detail: noDevice };
  let adapter: GPUAdapter;
  try {
    adapter = await requestGpuAdapter(gpu);
  } catch (err) {
    if (err instanceof GpuUnavailableError) return { backend: 'cpu', why: 'no WebGPU adapter found' };
    return { backend: 'cpu', why: 'no WebGPU adapter could be requested', detail: `requesting one failed: ${(err as Error).message}` };
  }
  const identity = adapterIdentity(adapter);
  const name = adapterName(identity);
  const emulated = cpuEmulationReason(identity);
  if (emulated !== undefined) {
    return { backend: 'cpu', why: `adapter "${name}" is CPU-emulated`, detail: `${emulated}, so it is slower than the cpu backend on the same cores; --backend gpu uses it anyway` };
  }
  return { backend: 'gpu', adapter, name };
}

/**
 * Why Dawn need not be asked at all: on Linux with no GPU device file, the only adapter it could
 * offer is CPU-emulated. Skipping it keeps a CPU run quiet (Dawn's adapter probe on lavapipe
 * prints `Warning: maxDynamic…BuffersPerPipelineLayout artificially reduced …` on stderr) and
 * saves loading dawn.node. A `navigator.gpu` of the host (browsers, Deno) is always asked.
 */
function noGpuDeviceReason(dev: string): string | undefined {
  if (process.platform !== 'linux' || (globalThis as { navigator?: { gpu?: unknown } }).navigator?.gpu) return undefined;
  const files = gpuDeviceFiles(dev);
  if (files === undefined || files.length > 0) return undefined;
  return `${dev} has no GPU device file (dri/renderD*, nvidia*, dxg, mali*), so WebGPU could offer only a CPU-emulated adapter, slower than the cpu backend; --backend gpu uses one anyway`;
}

/** `auto` after an adapter was found: the GPU until its device is lost, then the CPU. */
class AutoScorer implements TimedScorer {
  private gpu: GpuScorer | undefined;
  private destroyed = false;

  constructor(gpu: GpuScorer, private readonly cpu: CpuScorer, private readonly onNotice: ((message: string) => void) | undefined, private readonly ownedContext?: GpuContext) {
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
