import { GpuContext } from '../gpu/context.js';
import { checkThreads } from '../score/threads.js';
import { chooseAutoBackend, type Backend } from '../backend/select.js';
import { checkMaxGroupSize } from '../forest/limits.js';
import { GpuUnavailableError } from '../gpu/errors.js';
import type { ScoreParams } from '../score/types.js';
import { CpuLiveBackend, type LiveBackend } from './backend.js';
import { LiveForest } from './forest.js';
import { GpuLiveBackend, type GpuLiveOptions } from './gpu.js';

export interface CreateLiveForestOptions {
  /** Embedding dimension of every node (docs/ALGORITHM.md §1). */
  dim: number;
  /** `cpu` (float64 reference), `gpu` (WebGPU, forest resident on the device), or `auto`. Default `auto`. */
  backend?: Backend;
  params?: Partial<ScoreParams>;
  /** GPU backend settings (shared context, chunk cap). */
  gpu?: GpuLiveOptions;
  /** The most children one node may have; add-tree / add-nodes beyond it are refused. Default: no cap. */
  maxGroupSize?: number;
  /** Called with a short line saying which backend `auto` picked, or why it fell back; `detail` explains it at length (`createScorer`'s `onNotice`). */
  onNotice?: (message: string, detail?: string) => void;
  /** Accept (and ignore) fields trees and nodes do not have; default false (an unknown field is an error naming it). */
  allowUnknownFields?: boolean;
  /**
   * Threads the CPU backend may use for a large re-score (a batch of new trees, every group
   * after new α, τ or rule), the calling one included; the scores are the same for any number.
   * Default: available parallelism.
   */
  threads?: number;
}

/**
 * Builds an empty live forest on the chosen backend. Under `auto`, the GPU hands the forest to
 * the CPU (every group re-scored there, `onNotice` says why) when the device is lost or when
 * the f32 kernels cannot score it faithfully (`isCpuFallbackError`).
 */
export async function createLiveForest(options: CreateLiveForestOptions): Promise<LiveForest> {
  // Checked here, not where a CPU backend is built: under auto that may be much later, after a GPU error.
  if (options.threads !== undefined) checkThreads(options.threads);
  const backend = await createLiveBackend(options);
  const auto = (options.backend ?? 'auto') === 'auto';
  const cpu = cpuOptions(options);
  const recovery = auto ? { fallback: () => new CpuLiveBackend(cpu), ...(options.onNotice ? { onNotice: options.onNotice } : {}) } : {};
  try {
    const live = new LiveForest(options.dim, backend, options.params, { ...recovery, allowUnknownFields: options.allowUnknownFields === true });
    if (options.maxGroupSize !== undefined) live.store.maxGroupSize = checkMaxGroupSize(options.maxGroupSize);
    return live;
  } catch (err) {
    backend.destroy();
    throw err;
  }
}

async function createLiveBackend(options: CreateLiveForestOptions): Promise<LiveBackend> {
  const which = options.backend ?? 'auto';
  const cpu = cpuOptions(options);
  // Under auto the GPU backend hands the forest to a CPU backend of these threads after an error.
  const recovery = { ...(options.onNotice ? { onNotice: options.onNotice } : {}), ...(cpu.threads !== undefined ? { cpuThreads: cpu.threads } : {}) };
  if (which === 'cpu') return new CpuLiveBackend(cpu);
  if (which === 'gpu') return GpuLiveBackend.create(options.gpu);
  if (options.gpu?.context === undefined) {
    const choice = await chooseAutoBackend();
    if (choice.backend === 'cpu') {
      options.onNotice?.(`live forest: ${choice.why}; re-scoring on the cpu`, choice.detail);
      return new CpuLiveBackend(cpu);
    }
    let context: GpuContext;
    try {
      context = await GpuContext.create({ adapter: choice.adapter });
    } catch (err) {
      options.onNotice?.(`live forest: the GPU could not be set up (${(err as Error).message}); re-scoring on the cpu`);
      return new CpuLiveBackend(cpu);
    }
    // Under auto the backend itself hands the forest to the CPU after an error the f32 kernels
    // cannot avoid (out-of-range values or α/τ, a non-finite output); a lost device is the forest's.
    const gpu = GpuLiveBackend.adopt(context, options.gpu ?? {}, recovery);
    options.onNotice?.(`live forest: re-scoring on the gpu (${context.adapterName})`);
    return gpu;
  }
  const gpu = await GpuLiveBackend.create(options.gpu, recovery);
  options.onNotice?.(`live forest: re-scoring on the gpu (${gpu.context.adapterName})`);
  return gpu;
}

/** The CPU backend's options from the forest's. */
function cpuOptions(options: CreateLiveForestOptions): { threads?: number } {
  return options.threads === undefined ? {} : { threads: options.threads };
}
