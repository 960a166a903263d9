import type { PackedForest } from '../forest/packed.js';
import { CONTRAST_EPSILON, resolveParams, type ScoreParams, type Scorer, type Scores } from './types.js';

/** Per-group working memory, sized to the largest group seen and reused across calls. */
export class CpuScratch {
  invNorm = new Float64Array(0);
  contrast = new Float64Array(0);
  contrastDot = new Float64Array(0);
  weight = new Float64Array(0);
  ensure(k: number): void {
    if (this.invNorm.length >= k) return;
    const size = Math.max(k, this.invNorm.length * 2);
    this.invNorm = new Float64Array(size);
    this.contrast = new Float64Array(size);
    this.contrastDot = new Float64Array(size);
    this.weight = new Float64Array(size);
  }
}

function maxGroupSize(forest: PackedForest): number {
  let max = 0;
  for (let g = 0; g < forest.groupCount; g++) max = Math.max(max, forest.groupOffset[g + 1] - forest.groupOffset[g]);
  return max;
}

/** Outputs for a forest: roots (and any row no group touches) keep weight 1 and zeros elsewhere. */
export function allocateScores(forest: PackedForest, params: ScoreParams): Scores {
  const n = forest.nodeCount;
  return {
    contrast: new Float64Array(n),
    weight: new Float64Array(n).fill(1),
    gradAlpha: new Float64Array(n),
    gradTau: new Float64Array(n),
    intensity: new Float64Array(forest.groupCount),
    params,
    backend: 'cpu',
  };
}

/**
 * Scores groups `[groupStart, groupEnd)` of `forest` into `out` (SPEC §2), in float64.
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
): void {
  const { dim, embedding, reward, visits, uncertainty, groupOffset, groupChild } = forest;
  const { alpha, tau } = params;
  const contrastOut = out.contrast, weightOut = out.weight, gaOut = out.gradAlpha, gbOut = out.gradTau;
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
    const { invNorm, contrast: C, contrastDot: Cd, weight: w } = scratch;
    for (let i = 0; i < k; i++) {
      const base = groupChild[first + i] * dim;
      let sq = 0;
      for (let d = 0; d < dim; d++) { const x = embedding[base + d]; sq += x * x; }
      invNorm[i] = sq > 0 ? 1 / Math.sqrt(sq) : 0;
      C[i] = 0; Cd[i] = 0;
    }
    for (let i = 0; i < k; i++) {
      const ri = groupChild[first + i];
      const bi = ri * dim, ni = invNorm[i];
      for (let j = i + 1; j < k; j++) {
        const rj = groupChild[first + j];
        let dist: number;
        if (ni === 0 || invNorm[j] === 0) {
          dist = 0.5; // similarity 0 when either norm is 0 (covers dim = 0)
        } else {
          const bj = rj * dim, nj = invNorm[j];
          let sq = 0;
          for (let d = 0; d < dim; d++) { const diff = embedding[bi + d] * ni - embedding[bj + d] * nj; sq += diff * diff; }
          dist = Math.min(1, Math.max(0, sq / 4));
        }
        const dr = visits[ri] > 0 && visits[rj] > 0 ? Math.abs(reward[ri] - reward[rj]) : 0;
        const delta = dr + Math.abs(uncertainty[ri] - uncertainty[rj]);
        const den = delta + alpha * dist + CONTRAST_EPSILON;
        const c = delta / den;
        const dc = (-alpha * delta * dist) / (den * den);
        C[i] += c; C[j] += c; Cd[i] += dc; Cd[j] += dc;
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
  }
}

/** The float64 reference scorer (also the CPU fallback). */
export class CpuScorer implements Scorer {
  readonly backend = 'cpu' as const;
  private readonly scratch = new CpuScratch();

  async score(forest: PackedForest, params?: Partial<ScoreParams>): Promise<Scores> {
    return this.scoreSync(forest, params);
  }

  scoreSync(forest: PackedForest, params?: Partial<ScoreParams>): Scores {
    const resolved = resolveParams(params);
    const out = allocateScores(forest, resolved);
    this.scratch.ensure(maxGroupSize(forest));
    scoreGroupsCpu(forest, resolved, out, 0, forest.groupCount, this.scratch);
    return out;
  }

  destroy(): void {}
}

/** Scores a whole forest on the CPU in float64. */
export function scoreCpu(forest: PackedForest, params?: Partial<ScoreParams>): Scores {
  return new CpuScorer().scoreSync(forest, params);
}
