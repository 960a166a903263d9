import type { PackedForest } from '../forest/packed.js';
import { CpuScratch, scoreGroupsCpu, type PairDistances } from '../score/cpu.js';
import type { ScoreParams, Scores } from '../score/types.js';
import { MAX_CACHED_GROUP, type LiveStore } from './store.js';

/**
 * Re-scores sibling groups of a live store (named by parent row) with the float64 reference
 * `scoreGroupsCpu` itself, so live scores are bit-identical to a from-scratch scoring.
 *
 * The listed groups are gathered into one window: the reference reads group q as
 * `groupChild[groupOffset[q] .. groupOffset[q+1])`, so the window's `groupChild` holds the
 * groups' child rows back to back, and one call scores them all; per-row outputs land directly
 * in the store's score columns (rows are store rows), intensities are scattered to the parents.
 *
 * Pair distances depend on embeddings only and a live forest changes rewards, visits and
 * uncertainties far more often than it adds nodes, so each group's distances are kept in the
 * store (`pairValues`, by parent row) and handed to the reference as its `PairDistances`
 * cache: a re-scored group reads no embedding at all, and its scores are the same bit for bit.
 */
export class LiveCpuScorer {
  private readonly scratch = new CpuScratch();
  private groupOffset = new Int32Array(1);
  private groupChild = new Int32Array(0);
  private intensity = new Float64Array(0);
  private readonly pairs: PairDistances = { values: new Float64Array(0), offset: new Int32Array(0), known: new Uint8Array(0) };

  score(store: LiveStore, params: ScoreParams, parents: ArrayLike<number>, count: number): void {
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
      uncertainty: store.uncertainty, groupOffset, groupChild,
    } as unknown as PackedForest;
    const out: Scores = {
      contrast: store.contrast, weight: store.weight, gradAlpha: store.gradAlpha, gradTau: store.gradTau,
      intensity: this.intensity, params, backend: 'cpu',
    };
    scoreGroupsCpu(window, params, out, 0, count, this.scratch, pairs);

    const intensity = store.intensity, groupIntensity = this.intensity;
    for (let q = 0; q < count; q++) {
      const p = parents[q];
      intensity[p] = groupIntensity[q];
      if (offset[q] >= 0) pairKnown[p] = known[q];
    }
  }

  private ensure(groups: number, rows: number): void {
    if (this.groupOffset.length < groups + 1) {
      const n = Math.max(groups + 1, this.groupOffset.length * 2);
      this.groupOffset = new Int32Array(n);
      this.intensity = new Float64Array(n);
      this.pairs.offset = new Int32Array(n);
      this.pairs.known = new Uint8Array(n);
    }
    if (this.groupChild.length < rows) this.groupChild = new Int32Array(Math.max(rows, this.groupChild.length * 2));
  }
}
