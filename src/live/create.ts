import type { Backend } from '../score/select.js';
import type { ScoreParams } from '../score/types.js';
import { CpuLiveBackend, type LiveBackend } from './backend.js';
import { LiveForest } from './forest.js';

export interface CreateLiveForestOptions {
  /** Embedding dimension of every node (SPEC §1). */
  dim: number;
  /** `cpu` (float64 reference), `gpu` (WebGPU, resident), or `auto`. Default `auto`. */
  backend?: Backend;
  params?: Partial<ScoreParams>;
  /** Called with a line saying which backend `auto` picked, or why it fell back. */
  onNotice?: (message: string) => void;
}

/** Builds an empty live forest on the chosen backend. */
export async function createLiveForest(options: CreateLiveForestOptions): Promise<LiveForest> {
  const backend = await createLiveBackend(options);
  return new LiveForest(options.dim, backend, options.params);
}

async function createLiveBackend(options: CreateLiveForestOptions): Promise<LiveBackend> {
  const which = options.backend ?? 'auto';
  if (which === 'cpu') return new CpuLiveBackend();
  if (which === 'gpu') throw new Error('the gpu backend for live forests is not available in this build');
  options.onNotice?.('live forest: using the cpu backend');
  return new CpuLiveBackend();
}
