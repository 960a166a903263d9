import { assertPackedForest, type PackedForest } from '../forest/packed.js';
import { resolveParams, type ScoreParams, type Scorer, type Scores } from '../score/types.js';
import { ScorerDestroyedError } from '../util/errors.js';
import { GpuContext, type GpuContextOptions } from './context.js';
import type { Route } from './layout.js';
import { ResidentForest, scoreStreaming, transferFloor, type GpuTimings, type ResidentOptions } from './resident.js';

export interface GpuScorerOptions extends GpuContextOptions {
  /** Embeddings in f16 on the device (needs `shader-f16`). Default false. */
  f16?: boolean;
  /** Share a context (device, pipelines, pool) between scorers; it is then not destroyed with the scorer. */
  context?: GpuContext;
  /** Cap on one chunk buffer below the storage binding limit (tests and memory caps). */
  maxChunkBytes?: number;
  route?: Route;
}

/**
 * The scoring of docs/ALGORITHM.md §2 on WebGPU. One scorer owns (or borrows) a `GpuContext`; calls may
 * overlap. Scores are float32 (`backend: 'gpu'`), within the tolerances of docs/ALGORITHM.md §6 of
 * the float64 reference.
 */
export class GpuScorer implements Scorer {
  readonly backend = 'gpu' as const;
  /** Timings of the most recent completed `score` call. */
  lastTimings: GpuTimings | undefined;
  private destroyed = false;

  private constructor(readonly context: GpuContext, private readonly owned: boolean, private readonly options: GpuScorerOptions) {}

  static async create(options: GpuScorerOptions = {}): Promise<GpuScorer> {
    const context = options.context ?? (await GpuContext.create(options));
    if (options.f16 && !context.hasF16) {
      if (!options.context) context.destroy();
      throw new Error(`f16 embeddings need the WebGPU feature "shader-f16", which ${context.adapterName} does not offer`);
    }
    return new GpuScorer(context, !options.context, options);
  }

  get f16(): boolean {
    return this.options.f16 ?? false;
  }

  async score(forest: PackedForest, params?: Partial<ScoreParams>): Promise<Scores> {
    this.checkOpen();
    assertPackedForest(forest);
    const result = await scoreStreaming(this.context, forest, resolveParams(params), this.residentOptions());
    const { timings, ...scores } = result;
    this.lastTimings = timings;
    return scores;
  }

  /** Uploads `forest` for incremental re-scoring (see `ResidentForest`). */
  resident(forest: PackedForest): Promise<ResidentForest> {
    this.checkOpen();
    return ResidentForest.create(this.context, forest, this.residentOptions());
  }

  /** Time to upload `forest`'s packed inputs and read back output-sized buffers, without compute. */
  measureTransferFloor(forest: PackedForest): Promise<GpuTimings> {
    this.checkOpen();
    return transferFloor(this.context, forest, this.residentOptions());
  }

  destroy(): void {
    if (this.destroyed) return;
    this.destroyed = true;
    if (this.owned) this.context.destroy();
  }

  private residentOptions(): ResidentOptions {
    return { f16: this.options.f16, maxChunkBytes: this.options.maxChunkBytes, route: this.options.route };
  }

  private checkOpen(): void {
    if (this.destroyed) throw new ScorerDestroyedError('gpu');
  }
}
