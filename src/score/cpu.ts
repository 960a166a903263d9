import { assertPackedForest, type PackedForest } from '../forest/packed.js';
import { ScorerDestroyedError } from '../util/errors.js';
import { sharedArray } from '../util/shared.js';
import type { RangeTask } from './task.js';
import { checkThreads, CpuWorkerPool, defaultThreads, PARALLEL_MIN_COST, scoringCost } from './threads.js';
import { CONTRAST_EPSILON, resolveParams, splitsContrast, type ScoreParams, type Scorer, type Scores, uncertaintyGateVisits } from './types.js';

/** Per-group working memory, sized to the largest group seen and reused across calls. */
export class CpuScratch {
  invNorm = new Float64Array(0);
  /** For rows whose squares under- or overflow: ê = (x·rowScale)·invNorm, rowScale a power of two. */
  rowScale = new Float64Array(0);
  contrast = new Float64Array(0);
  contrastDot = new Float64Array(0);
  weight = new Float64Array(0);
  ensure(k: number): void {
    if (this.invNorm.length >= k) return;
    const size = Math.max(k, this.invNorm.length * 2);
    this.invNorm = new Float64Array(size);
    this.rowScale = new Float64Array(size);
    this.contrast = new Float64Array(size);
    this.contrastDot = new Float64Array(size);
    this.weight = new Float64Array(size);
  }
}

/**
 * Sums of squares from about 1e-280 up are computed without losing the small components;
 * below (or on overflow) the row is rescaled by a power of two first.
 */
const SAFE_SQUARE_SUM = 1e-280;

/**
 * Sets `invNorm[i]` (and `rowScale[i]`, 1 for ordinary rows) so that ê = (x·rowScale)·invNorm is
 * the unit vector of the row; invNorm 0 marks a zero row.
 */
function rowNorm(embedding: ArrayLike<number>, base: number, dim: number, scratch: CpuScratch, i: number): void {
  let sq = 0;
  for (let d = 0; d < dim; d++) { const x = embedding[base + d]; sq += x * x; }
  if (sq >= SAFE_SQUARE_SUM && sq < Infinity) {
    scratch.invNorm[i] = 1 / Math.sqrt(sq);
    scratch.rowScale[i] = 1;
    return;
  }
  let max = 0;
  for (let d = 0; d < dim; d++) max = Math.max(max, Math.abs(embedding[base + d]));
  if (max === 0) { scratch.invNorm[i] = 0; scratch.rowScale[i] = 1; return; }
  // Two power-of-two factors bring max into [1, 2) even from subnormals (2^1074 overflows alone).
  const p = -Math.floor(Math.log2(max));
  const half = Math.trunc(p / 2);
  const first = 2 ** half, second = 2 ** (p - half);
  let scaledSq = 0;
  for (let d = 0; d < dim; d++) { const y = embedding[base + d] * first * second; scaledSq += y * y; }
  scratch.rowScale[i] = first;
  scratch.invNorm[i] = second / Math.sqrt(scaledSq);
}

function maxGroupSize(forest: PackedForest): number {
  let max = 0;
  for (let g = 0; g < forest.groupCount; g++) max = Math.max(max, forest.groupOffset[g + 1] - forest.groupOffset[g]);
  return max;
}

/**
 * Outputs for a forest: roots (and any row no group touches) keep weight 1 and zeros elsewhere.
 * They live in shared memory on every path, one thread or many: `scoreGroupsCpu` fed both
 * kinds of arrays in one process ran about 30 % slower (V8 compiles it for one kind).
 */
export function allocateScores(forest: PackedForest, params: ScoreParams, array: (length: number) => Float64Array = (n) => sharedArray(Float64Array, n)): Scores {
  const n = forest.nodeCount;
  return {
    contrast: array(n),
    weight: array(n).fill(1),
    gradAlpha: array(n),
    gradTau: array(n),
    intensity: array(forest.groupCount),
    params,
    backend: 'cpu',
  };
}

/**
 * A caller-kept cache of sibling-pair distances for `scoreGroupsCpu`. A pair's distance
 * depends on the two embeddings only, so a caller whose embeddings stay put while rewards,
 * visits and uncertainties change (a live forest) can skip the O(k²·dim) part. Group g's pairs
 * (i < j, in loop order) sit at `values[offset[g] ..]`, k(k−1)/2 of them; `offset[g] < 0`: not
 * cached. With `known[g]` = 1 they are read from there; otherwise they are computed as without
 * a cache, stored there, and `known[g]` becomes 1. The scores are the same bit for bit.
 */
export interface PairDistances {
  values: Float64Array;
  offset: Int32Array;
  known: Uint8Array;
}

const NO_VALUES = new Float64Array(0);

/**
 * Scores groups `[groupStart, groupEnd)` of `forest` into `out` (docs/ALGORITHM.md §2), in float64.
 * The semantic distance uses d = ‖ê_i − ê_j‖²/4, which equals (1 − cos)/2 without the
 * cancellation of 1 − cos for near-duplicate siblings.
 */
export function scoreGroupsCpu(
  forest: PackedForest,
  params: ScoreParams,
  out: Scores,
  groupStart = 0,
  groupEnd = forest.groupCount,
  scratch: CpuScratch = new CpuScratch(),
  pairs?: PairDistances,
): void {
  const { dim, embedding, reward, visits, uncertainty, groupOffset, groupChild } = forest;
  const { alpha, tau } = params;
  const split = splitsContrast(params), gateVisits = uncertaintyGateVisits(params);
  const contrastOut = out.contrast, weightOut = out.weight, gaOut = out.gradAlpha, gbOut = out.gradTau;
  const pairValues = pairs === undefined ? NO_VALUES : pairs.values;
  for (let g = groupStart; g < groupEnd; g++) {
    const first = groupOffset[g];
    const k = groupOffset[g + 1] - first;
    if (k === 1) {
      const row = groupChild[first];
      contrastOut[row] = 0; weightOut[row] = 1; gaOut[row] = 0; gbOut[row] = 0;
      out.intensity[g] = 0;
      continue;
    }
    scratch.ensure(k);
    let at = pairs === undefined ? -1 : pairs.offset[g];
    const cached = at >= 0 && pairs!.known[g] === 1, fill = at >= 0 && !cached;
    const { invNorm, rowScale, contrast: C, contrastDot: Cd, weight: w } = scratch;
    for (let i = 0; i < k; i++) {
      if (!cached) rowNorm(embedding, groupChild[first + i] * dim, dim, scratch, i);
      C[i] = 0; Cd[i] = 0;
    }
    for (let i = 0; i < k; i++) {
      const ri = groupChild[first + i];
      const bi = ri * dim, ni = invNorm[i];
      for (let j = i + 1; j < k; j++) {
        const rj = groupChild[first + j];
        let dist: number;
        if (cached) {
          dist = pairValues[at++];
        } else if (ni === 0 || invNorm[j] === 0) {
          dist = 0.5; // similarity 0 when either norm is 0 (covers dim = 0)
        } else {
          const bj = rj * dim, nj = invNorm[j];
          let sq = 0;
          if (rowScale[i] === 1 && rowScale[j] === 1) {
            for (let d = 0; d < dim; d++) { const diff = embedding[bi + d] * ni - embedding[bj + d] * nj; sq += diff * diff; }
          } else {
            const si = rowScale[i], sj = rowScale[j];
            for (let d = 0; d < dim; d++) { const diff = embedding[bi + d] * si * ni - embedding[bj + d] * sj * nj; sq += diff * diff; }
          }
          dist = Math.min(1, Math.max(0, sq / 4));
        }
        if (fill) pairValues[at++] = dist;
        const visited = visits[ri] > 0 && visits[rj] > 0;
        const dr = visited ? Math.abs(reward[ri] - reward[rj]) : 0;
        // v4, v5: two siblings with equal rewards and enough visits each agree; their uncertainty
        // gap is not contest (v4 asks for one visit each, v5 for two; v1-v3 never close it).
        const counted = !(visited && reward[ri] === reward[rj] && visits[ri] >= gateVisits && visits[rj] >= gateVisits);
        const delta = dr + (counted ? Math.abs(uncertainty[ri] - uncertainty[rj]) : 0);
        const den = delta + alpha * dist + CONTRAST_EPSILON;
        let c = delta / den;
        let dc = (-alpha * delta * dist) / (den * den);
        if (!Number.isFinite(dc)) {
          // Δ or α·Δ·d overflowed (rewards near ±1.8e308, α near 1e300): the same c and ∂c/∂log α
          // from quarter-scale differences, which cannot overflow. Exact scaling by 4 keeps c as is.
          const q = (visited ? Math.abs(reward[ri] / 4 - reward[rj] / 4) : 0) + (counted ? Math.abs(uncertainty[ri] / 4 - uncertainty[rj] / 4) : 0);
          const denQ = q + (alpha * dist + CONTRAST_EPSILON) / 4;
          c = q / denQ;
          dc = (-(alpha * dist) * c) / denQ / 4;
        }
        if (split) {
          // v2: σ_ij = 2(u_i + ε)/(u_i + u_j + 2ε), written so that huge uncertainties cannot overflow.
          const ui = uncertainty[ri] + CONTRAST_EPSILON, uj = uncertainty[rj] + CONTRAST_EPSILON;
          const si = 2 / (1 + uj / ui), sj = 2 - si;
          C[i] += si * c; C[j] += sj * c; Cd[i] += si * dc; Cd[j] += sj * dc;
        } else {
          C[i] += c; C[j] += c; Cd[i] += dc; Cd[j] += dc;
        }
      }
    }
    let cMax = -Infinity, cSum = 0;
    for (let i = 0; i < k; i++) { C[i] /= k - 1; Cd[i] /= k - 1; cMax = Math.max(cMax, C[i]); cSum += C[i]; }
    let z = 0;
    for (let i = 0; i < k; i++) { w[i] = Math.exp((C[i] - cMax) / tau); z += w[i]; }
    let wC = 0, wCd = 0;
    for (let i = 0; i < k; i++) { w[i] /= z; wC += w[i] * C[i]; wCd += w[i] * Cd[i]; }
    for (let i = 0; i < k; i++) {
      const row = groupChild[first + i];
      contrastOut[row] = C[i];
      weightOut[row] = w[i];
      gaOut[row] = (Cd[i] - wCd) / tau;
      gbOut[row] = -(C[i] - wC) / tau;
    }
    out.intensity[g] = cSum / k;
    if (fill) pairs!.known[g] = 1;
  }
}

export interface CpuScorerOptions {
  /**
   * Threads `score` may use (the calling one included): groups are split across worker
   * threads over shared memory, each scored by `scoreGroupsCpu`, so the scores are the same
   * bit for bit. Default: `os.availableParallelism()`. Forests below `PARALLEL_MIN_COST` stay
   * on the calling thread; `scoreSync` always does.
   */
  threads?: number;
  /** Estimated work (`scoringCost`) from which `score` uses the threads; default `PARALLEL_MIN_COST` (tests and measurements lower it). */
  minParallelCost?: number;
}

/** The float64 reference scorer (also the CPU fallback). */
export class CpuScorer implements Scorer {
  readonly backend = 'cpu' as const;
  readonly threads: number;
  private readonly minParallelCost: number;
  private readonly scratch = new CpuScratch();
  private pool: CpuWorkerPool | undefined;

  constructor(options: CpuScorerOptions = {}) {
    this.threads = checkThreads(options.threads ?? defaultThreads());
    this.minParallelCost = options.minParallelCost ?? PARALLEL_MIN_COST;
  }

  /** Worker threads running now (0 until a forest large enough was scored with threads > 1, and after `destroy`). */
  get workerThreads(): number {
    return this.pool?.running ?? 0;
  }

  /** Chunks of groups the worker threads scored (the rest were scored on the calling thread); reset by `destroy`. */
  get workerChunks(): number {
    return this.pool?.chunksOnWorkers ?? 0;
  }

  /**
   * Starts the worker threads now instead of on the first call that uses them, so that they
   * boot while the caller does other work (the CLI reads its file meanwhile). No-op on one thread.
   */
  async startThreads(): Promise<void> {
    if (this.destroyed || this.threads === 1) return;
    this.pool ??= new CpuWorkerPool(this.threads - 1);
    await this.pool.start();
  }

  /**
   * Runs `task` over the chunks [bounds[c], bounds[c + 1]) of `data` on this scorer's worker
   * threads and the calling thread (`runHere` runs a chunk here), each chunk once; on one thread,
   * every chunk here. Other layers use it to split their own work by range (`allocateOnThreads`).
   */
  async runOnThreads(task: RangeTask, data: Record<string, unknown>, bounds: Int32Array, runHere: (start: number, end: number) => void): Promise<void> {
    if (this.destroyed) throw new ScorerDestroyedError('cpu');
    if (this.threads === 1) {
      for (let c = 0; c + 1 < bounds.length; c++) runHere(bounds[c], bounds[c + 1]);
      return;
    }
    this.pool ??= new CpuWorkerPool(this.threads - 1);
    await this.pool.run(task, data, bounds, runHere);
  }

  /** How many threads `score` would use on `forest`. */
  threadsFor(forest: PackedForest, cost = scoringCost(forest)): number {
    return this.threads > 1 && cost >= this.minParallelCost && forest.groupCount > 1 ? this.threads : 1;
  }
  private destroyed = false;

  async score(forest: PackedForest, params?: Partial<ScoreParams>): Promise<Scores> {
    if (this.destroyed) throw new ScorerDestroyedError('cpu');
    assertPackedForest(forest);
    const cost = this.threads > 1 ? scoringCost(forest) : 0;
    if (this.threadsFor(forest, cost) === 1) return this.scoreSync(forest, params);
    const resolved = resolveParams(params);
    const out = allocateScores(forest, resolved);
    this.pool ??= new CpuWorkerPool(this.threads - 1);
    const scratch = this.scratch;
    await this.pool.score(forest, resolved, out, (g0, g1) => scoreGroupsCpu(forest, resolved, out, g0, g1, scratch), cost);
    return out;
  }

  scoreSync(forest: PackedForest, params?: Partial<ScoreParams>): Scores {
    if (this.destroyed) throw new ScorerDestroyedError('cpu');
    assertPackedForest(forest);
    const resolved = resolveParams(params);
    const out = allocateScores(forest, resolved);
    this.scratch.ensure(maxGroupSize(forest));
    scoreGroupsCpu(forest, resolved, out, 0, forest.groupCount, this.scratch);
    return out;
  }

  /** Terminates the worker threads; the scorer refuses further calls, like every backend. */
  destroy(): void {
    this.destroyed = true;
    this.pool?.destroy();
    this.pool = undefined;
  }
}

/** Scores a whole forest on the CPU in float64, on the calling thread. */
export function scoreCpu(forest: PackedForest, params?: Partial<ScoreParams>): Scores {
  return new CpuScorer({ threads: 1 }).scoreSync(forest, params);
}
