import type { ScoreParams } from '../score/types.js';
import { LiveCpuScorer, type LiveCpuOptions } from './score-cpu.js';
import type { LiveStore } from './store.js';

/**
 * Where a live forest's dirty groups get scored. A backend reads the store's columns (and, on
 * the GPU, keeps its own device copy in step with them) and writes the scores of the listed
 * groups into the store's score columns.
 */
export interface LiveBackend {
  readonly kind: 'cpu' | 'gpu';
  /** Called once, when the live forest is built around its store. */
  attach(store: LiveStore): void;
  /** Scores `count` groups, named by parent row in `parents[0 .. count)`. */
  score(store: LiveStore, params: ScoreParams, parents: Int32Array, count: number): Promise<void>;
  destroy(): void;
}

/** The float64 reference: large re-scores split across worker threads (bit-identical), small ones on the calling thread. */
export class CpuLiveBackend implements LiveBackend {
  readonly kind = 'cpu' as const;
  readonly scorer: LiveCpuScorer;
  constructor(options: LiveCpuOptions = {}) {
    this.scorer = new LiveCpuScorer(options);
  }
  attach(store: LiveStore): void {
    store.setSlabBoundary(0);
  }
  score(store: LiveStore, params: ScoreParams, parents: Int32Array, count: number): Promise<void> {
    return this.scorer.score(store, params, parents, count);
  }
  destroy(): void {
    this.scorer.destroy();
  }
}
