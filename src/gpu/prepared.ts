import type { PackedForest } from '../forest/packed.js';
import { buildWork, packEmbeddingRange, packFeatureRange, planChunks, type Chunk, type Route, type WorkLists } from './layout.js';

/** One chunk of a forest in the device layout, ready to upload as it is. */
export interface PreparedChunk {
  readonly chunk: Chunk;
  /** Slot-major feature records (`packFeatureRange`). */
  readonly features: Float32Array;
  /** Slot-major embedding rows, f32 or f16 bits (`packEmbeddingRange`), in an ordinary ArrayBuffer. */
  readonly embedding: Float32Array | Uint16Array;
  /** Work lists that score every group of the chunk, per kernel route, built on first use. */
  readonly work: Partial<Record<Route, { lists: WorkLists; outSlots: number }>>;
}

/**
 * The device layout of each forest, built once per PackedForest (and embedding precision and
 * chunk cap) and kept with it: repeated GPU calls on a forest (the benchmark, re-scoring
 * with new α/τ) then only upload. A PackedForest is not changed after packing, so the cache
 * stays valid; it goes with the forest (WeakMap). Costs one device-ready copy of the forest's
 * inputs in host memory for the forest's lifetime (W1: about 175 MiB). (It must be an
 * ordinary ArrayBuffer in any case: Dawn's `writeBuffer`
 * crashes on SharedArrayBuffer views, and packed forests live in shared memory.)
 */
const layouts = new WeakMap<PackedForest, Map<string, PreparedChunk[]>>();

/**
 * `forest` in the device layout, split into chunks of at most `maxBytes` per buffer. Throws
 * (`GpuInputRangeError`, `ForestError`) as `planChunks` / `packFeatureRange` do, and caches
 * nothing then.
 */
export function prepareForest(forest: PackedForest, f16: boolean, maxBytes: number, route: Route = 'auto'): PreparedChunk[] {
  let byKey = layouts.get(forest);
  // The route decides how much output room a chunk's tiles need, so it is part of the key.
  const key = `${f16 ? 'f16' : 'f32'}:${maxBytes}:${route}`;
  const cached = byKey?.get(key);
  if (cached) return cached;
  const chunks = planChunks(forest, f16, maxBytes, route).map((chunk): PreparedChunk => ({
    chunk,
    features: packFeatureRange(forest, chunk.slotStart, chunk.slotEnd),
    embedding: packEmbeddingRange(forest, chunk.slotStart, chunk.slotEnd, f16),
    work: {},
  }));
  if (!byKey) layouts.set(forest, (byKey = new Map()));
  byKey.set(key, chunks);
  return chunks;
}

/** The work lists that score every group of `p`'s chunk with `route`, built once per chunk and route. */
export function wholeChunkWork(forest: PackedForest, p: PreparedChunk, route: Route): { lists: WorkLists; outSlots: number } {
  let w = p.work[route];
  if (!w) {
    const { groupStart, groupEnd } = p.chunk;
    const groups = new Int32Array(groupEnd - groupStart);
    for (let i = 0; i < groups.length; i++) groups[i] = groupStart + i;
    w = buildWork(forest, p.chunk, groups, route);
    (p.work as Record<Route, typeof w>)[route] = w;
  }
  return w;
}
