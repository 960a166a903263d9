import { CpuScorer } from './cpu.js';
import type { Scorer } from './types.js';

export type Backend = 'cpu' | 'gpu' | 'auto';

export interface CreateScorerOptions {
  backend?: Backend;
  /** Called with a human-readable line when `auto` falls back or picks a backend. */
  onNotice?: (message: string) => void;
}

/** Picks a scoring backend. The WebGPU backend arrives with src/gpu; until then `auto` means cpu. */
export async function createScorer(options: CreateScorerOptions = {}): Promise<Scorer> {
  const backend = options.backend ?? 'auto';
  if (backend === 'gpu') throw new Error('the gpu backend is not available in this build');
  return new CpuScorer();
}
