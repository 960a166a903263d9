import type { PackedForest } from '../forest/packed.js';
import { CpuScratch, scoreGroupsCpu, type PairDistances } from '../score/cpu.js';
import { checkThreads, CpuWorkerPool, defaultThreads, PARALLEL_MIN_COST, scoringCost } from '../score/threads.js';
import { isShared, sharedArray } from '../util/shared.js';
import type { ScoreParams, Scores } from '../score/types.js';
import { MAX_CACHED_GROUP, type LiveStore } from './store.js';

export interface LiveCpuOptions {
  /** Threads a large re-score may use (the calling one included); default: available parallelism. */
  threads?: number;
  /** Estimated work (`scoringCost` units) from which the threads are used; default `PARALLEL_MIN_COST`. */
  minParallelCost?: number;
}

/**
 * Re-scores sibling groups of a live store (named by parent row) with the float64 reference
 * `scoreGroupsCpu` itself, so live scores are bit-identical to a from-scratch scoring.
 *
 * The listed groups are gathered into one window: the reference reads group q as
 * `groupChild[groupOffset[q] .. groupOffset[q+1])`, so the window's `groupChild` holds the
 * groups' child rows back to back, and one call scores them all; per-row outputs land directly
 * in the store's score columns (rows are store rows; staged first when worker threads score),
 * intensities are scattered to the parents.
 *
 * Pair distances depend on embeddings only and a live forest changes rewards, visits and
 * uncertainties far more often than it adds nodes, so each group's distances are kept in the
 * store (`pairValues`, by parent row) and handed to the reference as its `PairDistances`
 * cache: a re-scored group reads no embedding at all, and its scores are the same bit for bit.
 */
export class LiveCpuScorer {
  private readonly scratch = new CpuScratch();
  // The window's arrays are in shared memory, like the store's columns: worker threads read
  // and write them in place.
  private groupOffset = sharedArray(Int32Array, 1);
  private groupChild = sharedArray(Int32Array, 0);
  private intensity = sharedArray(Float64Array, 0);
  private readonly pairs: PairDistances = { values: new Float64Array(0), offset: sharedArray(Int32Array, 0), known: sharedArray(Uint8Array, 0) };
  readonly threads: number;
  private readonly minParallelCost: number;
  private pool: CpuWorkerPool | undefined;
  private staged: { contrast: Float64Array; weight: Float64Array; gradAlpha: Float64Array; gradTau: Float64Array } | undefined;

  constructor(options: LiveCpuOptions = {}) {
    this.threads = checkThreads(options.threads ?? defaultThreads());
    this.minParallelCost = options.minParallelCost ?? PARALLEL_MIN_COST;
  }

  /** Chunks of groups the worker threads scored (0 while every re-score stayed on the calling thread). */
  get workerChunks(): number {
    return this.pool?.chunksOnWorkers ?? 0;
  }

  /**
   * Scores the listed groups: on the calling thread, or — when there is enough work (a batch
   * of new trees, every group after a change of α, τ or rule) — split across worker threads,
   * each running the same `scoreGroupsCpu` on its share of the window, so the scores and
   * cached distances are the same bit for bit.
   */
  async score(store: LiveStore, params: ScoreParams, parents: ArrayLike<number>, count: number): Promise<void> {
    const { childStart, childCount, child, pairKnown } = store;
    let rows = 0, need = 0;
    for (let q = 0; q < count; q++) {
      const p = parents[q], k = childCount[p];
      rows += k;
      if (k >= 2 && k <= MAX_CACHED_GROUP && !pairKnown[p]) need += (k * (k - 1)) / 2;
    }
    this.ensure(count, rows);
    // Room first: reserving may move the pool, and offsets are taken from the final one.
    if (need > 0) store.reservePairs(need);
    const { groupOffset, groupChild, pairs } = this;
    const offset = pairs.offset, known = pairs.known;
    let at = 0;
    for (let q = 0; q < count; q++) {
      const p = parents[q], k = childCount[p];
      groupOffset[q] = at;
      for (let s = childStart[p], end = s + k; s < end; s++) groupChild[at++] = child[s];
      if (k >= 2 && k <= MAX_CACHED_GROUP) {
        known[q] = pairKnown[p];
        offset[q] = known[q] ? store.pairStart[p] : store.pairSpace(p, (k * (k - 1)) / 2);
      } else {
        known[q] = 0;
        offset[q] = -1;
      }
    }
    groupOffset[count] = at;
    pairs.values = store.pairValues;

    // Only the fields scoreGroupsCpu reads for groups [0, count): the window is not a whole forest.
    const window = {
      dim: store.dim, embedding: store.embedding, reward: store.reward, visits: store.visits,
      uncertainty: store.uncertainty, groupOffset, groupChild, groupCount: count,
    } as unknown as PackedForest;
    const out: Scores = {
      contrast: store.contrast, weight: store.weight, gradAlpha: store.gradAlpha, gradTau: store.gradTau,
      intensity: this.intensity, params, backend: 'cpu',
    };
    const cost = this.threads > 1 && count > 1 ? scoringCost(window) : 0;
    if (cost >= this.minParallelCost && cost > 0 && allShared(window, out, pairs)) {
      // The threads write into scratch columns, copied into the store only once all are done:
      // whatever reads the store while they run (a plan whose re-score just finished) sees
      // whole old or whole new scores, never half of a group.
      const staged = this.stagedOutputs(store.capacity, params);
      this.pool ??= new CpuWorkerPool(this.threads - 1);
      const scratch = this.scratch;
      await this.pool.score(window, params, staged, (g0, g1) => scoreGroupsCpu(window, params, staged, g0, g1, scratch, pairs), cost,
        { values: pairs.values, offset: pairs.offset, known: pairs.known });
      for (let q = 0; q < count; q++) {
        for (let i = groupOffset[q]; i < groupOffset[q + 1]; i++) {
          const row = groupChild[i];
          out.contrast[row] = staged.contrast[row];
          out.weight[row] = staged.weight[row];
          out.gradAlpha[row] = staged.gradAlpha[row];
          out.gradTau[row] = staged.gradTau[row];
        }
      }
    } else {
      scoreGroupsCpu(window, params, out, 0, count, this.scratch, pairs);
    }

    const intensity = store.intensity, groupIntensity = this.intensity;
    for (let q = 0; q < count; q++) {
      const p = parents[q];
      intensity[p] = groupIntensity[q];
      if (offset[q] >= 0) pairKnown[p] = known[q];
    }
  }

  /** Shared per-row output columns for threaded re-scores, as long as the store's. */
  private stagedOutputs(rows: number, params: ScoreParams): Scores {
    let st = this.staged;
    if (st === undefined || st.contrast.length < rows) {
      st = { contrast: sharedArray(Float64Array, rows), weight: sharedArray(Float64Array, rows), gradAlpha: sharedArray(Float64Array, rows), gradTau: sharedArray(Float64Array, rows) };
      this.staged = st;
    }
    return { ...st, intensity: this.intensity, params, backend: 'cpu' };
  }

  /** Terminates the worker threads (started on the first large re-score). */
  destroy(): void {
    this.pool?.destroy();
    this.pool = undefined;
    this.staged = undefined;
  }

  private ensure(groups: number, rows: number): void {
    if (this.groupOffset.length < groups + 1) {
      const n = Math.max(groups + 1, this.groupOffset.length * 2);
      this.groupOffset = sharedArray(Int32Array, n);
      this.intensity = sharedArray(Float64Array, n);
      this.pairs.offset = sharedArray(Int32Array, n);
      this.pairs.known = sharedArray(Uint8Array, n);
    }
    if (this.groupChild.length < rows) this.groupChild = sharedArray(Int32Array, Math.max(rows, this.groupChild.length * 2));
  }
}

/** Whether every array the workers touch is in shared memory (else the call stays on this thread: a copy would lose the writes). */
function allShared(window: PackedForest, out: Scores, pairs: PairDistances): boolean {
  const views = [window.embedding, window.reward, window.visits, window.uncertainty, window.groupOffset, window.groupChild,
    out.contrast, out.weight, out.gradAlpha, out.gradTau, out.intensity, pairs.values, pairs.offset, pairs.known];
  return views.every((v) => isShared(v as ArrayBufferView));
}
