import type { PackedForest } from '../../src/forest/packed.js';
import type { ScoreParams, Scores } from '../../src/score/types.js';

/**
 * The two ablations of TRACE v3's scores, given to `allocate` in place of `scoreCpu`'s: the rule
 * (fresh share at the root, contested forks emitting κ·ψ·I, keep and pass, success seen) stays,
 * only what the scores say changes. Both have uniform weights w = 1/k in every group (nothing
 * is pruned, ψ = 1 everywhere) and zero gradients (α, τ cannot learn from them).
 *
 * - `'nocontrast'`: C = 0 for every child, so every intensity I = 0. No fork is ever contested,
 *   so v3 places every rollout at the root: independent chains, by construction.
 * - `'outcome'`: I_p = the share of the group's child pairs that finished rollouts tell apart,
 *   Σ over pairs i < j with n_i > 0 and n_j > 0 of min(1, |r_i − r_j|), divided by all
 *   k(k−1)/2 pairs — outcome disagreement alone, without the similarity weighting of the
 *   contrast response and without contrast weights. C_i is child i's mean over its pairs, so
 *   I_p = mean C as for real scores (C is not read by `allocate`).
 */
export type AblatedScores = 'nocontrast' | 'outcome';

/**
 * Scores of `forest` under an ablation. Arrays as `Scores`: per-row contrast, weight, gradAlpha,
 * gradTau (length nodeCount; roots C = 0, w = 1), per-group intensity (length groupCount).
 */
export function ablatedScores(forest: PackedForest, kind: AblatedScores, params: ScoreParams): Scores {
  const { nodeCount, groupCount, groupOffset, groupChild, reward, visits } = forest;
  const contrast = new Float64Array(nodeCount), weight = new Float64Array(nodeCount).fill(1);
  const intensity = new Float64Array(groupCount);
  for (let g = 0; g < groupCount; g++) {
    const from = groupOffset[g], to = groupOffset[g + 1], k = to - from;
    for (let s = from; s < to; s++) weight[groupChild[s]] = 1 / k;
    if (kind === 'nocontrast' || k < 2) continue;
    let sum = 0;
    for (let a = from; a < to; a++) {
      const i = groupChild[a];
      for (let b = a + 1; b < to; b++) {
        const j = groupChild[b];
        if (visits[i] === 0 || visits[j] === 0) continue;
        const d = Math.min(1, Math.abs(reward[i] - reward[j]));
        contrast[i] += d / (k - 1);
        contrast[j] += d / (k - 1);
        sum += d;
      }
    }
    intensity[g] = sum / ((k * (k - 1)) / 2);
  }
  const zeros = new Float64Array(nodeCount);
  return { contrast, weight, gradAlpha: zeros, gradTau: zeros, intensity, params: { ...params }, backend: 'cpu' };
}
