import type { PackedForest } from '../forest/packed.js';
import { CpuScratch, scoreGroupsCpu } from '../score/cpu.js';
import type { ScoreParams, Scores } from '../score/types.js';
import type { LiveStore } from './store.js';

/**
 * Re-scores sibling groups of a live store (named by parent row) with the float64 reference
 * `scoreGroupsCpu` itself, so live scores are bit-identical to a from-scratch scoring.
 * The reference reads a group as `groupChild[groupOffset[g] .. groupOffset[g+1])`; here each
 * group is presented as group 0 of a one-group window onto the store's child list, and its
 * per-row outputs land directly in the store's score columns.
 */
export class LiveCpuScorer {
  private readonly scratch = new CpuScratch();
  private readonly span = new Int32Array(2);
  private readonly one = new Float64Array(1);

  score(store: LiveStore, params: ScoreParams, parents: ArrayLike<number>, count: number): void {
    // Only the fields scoreGroupsCpu reads for groups [0, 1): the window is not a whole forest.
    const window = {
      dim: store.dim, embedding: store.embedding, reward: store.reward, visits: store.visits,
      uncertainty: store.uncertainty, groupOffset: this.span, groupChild: store.child,
    } as unknown as PackedForest;
    const out: Scores = {
      contrast: store.contrast, weight: store.weight, gradAlpha: store.gradAlpha, gradTau: store.gradTau,
      intensity: this.one, params, backend: 'cpu',
    };
    const { childStart, childCount, intensity } = store;
    for (let q = 0; q < count; q++) {
      const p = parents[q];
      this.span[0] = childStart[p];
      this.span[1] = childStart[p] + childCount[p];
      scoreGroupsCpu(window, params, out, 0, 1, this.scratch);
      intensity[p] = this.one[0];
    }
  }
}
