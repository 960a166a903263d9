import { packColumns, type PackedForest } from '../forest/packed.js';
import type { Scores } from '../score/types.js';
import type { LiveForest } from './forest.js';

/** A from-scratch packed copy of a live forest, with the live row behind each packed row. */
export interface LiveSnapshot {
  forest: PackedForest;
  /** `liveRow[i]` is the live store row of packed row i. */
  liveRow: Int32Array;
}

/** Packs the live forest's current content, trees in tree order (what a fresh `score` would see). */
export function snapshotLive(live: LiveForest): LiveSnapshot {
  const s = live.store;
  const order = s.treeOrder;
  const treeOffset = new Int32Array(order.length + 1);
  for (let t = 0; t < order.length; t++) treeOffset[t + 1] = treeOffset[t] + s.slotSize[order[t]];
  const n = treeOffset[order.length], dim = s.dim;
  const parent = new Int32Array(n), reward = new Float64Array(n), visits = new Float64Array(n), uncertainty = new Float64Array(n);
  const terminal = new Uint8Array(n), embedding = new Float64Array(n * dim), liveRow = new Int32Array(n);
  for (let t = 0; t < order.length; t++) {
    const start = s.slotStart[order[t]];
    for (let v = 0, i = treeOffset[t]; i < treeOffset[t + 1]; v++, i++) {
      const r = start + v;
      liveRow[i] = r;
      parent[i] = s.parentRow[r] < 0 ? -1 : s.parentRow[r] - start;
      reward[i] = s.reward[r]; visits[i] = s.visits[r]; uncertainty[i] = s.uncertainty[r]; terminal[i] = s.terminal[r];
    }
    embedding.set(s.embedding.subarray(start * dim, (start + s.slotSize[order[t]]) * dim), treeOffset[t] * dim);
  }
  const treeIds = order.map((slot) => s.slotId[slot]);
  return { forest: packColumns({ dim, treeIds, treeOffset, parent, reward, visits, uncertainty, terminal, embedding }), liveRow };
}

/** The live forest's current scores laid out on a snapshot's rows and groups. */
export function liveScoresOn(live: LiveForest, snap: LiveSnapshot): Scores {
  const s = live.store;
  const { forest, liveRow } = snap;
  const n = forest.nodeCount;
  const pick = (col: Float64Array) => { const out = new Float64Array(n); for (let i = 0; i < n; i++) out[i] = col[liveRow[i]]; return out; };
  const intensity = new Float64Array(forest.groupCount);
  for (let g = 0; g < forest.groupCount; g++) intensity[g] = s.intensity[liveRow[forest.groupParent[g]]];
  return {
    contrast: pick(s.contrast), weight: pick(s.weight), gradAlpha: pick(s.gradAlpha), gradTau: pick(s.gradTau),
    intensity, params: live.scoreParams, backend: live.backendKind,
  };
}
