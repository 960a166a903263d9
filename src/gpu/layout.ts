import { ForestError, type ForestErrorLocation } from '../forest/errors.js';
import type { PackedForest } from '../forest/packed.js';
import { CONTRAST_EPSILON } from '../score/types.js';
import { GpuInputRangeError } from './errors.js';
import { toHalfBits } from './half.js';

/**
 * Device-side layout (docs/GPU.md "Device layout"). Children are stored in *slot* order —
 * the order of `forest.groupChild` — so each sibling group's rows are contiguous and a chunk
 * of consecutive groups is a contiguous slot range. Roots have no slot: nothing reads them.
 */
export const FEAT_FLOATS = 8;
export const FEAT_BYTES = FEAT_FLOATS * 4;
export const OUT_BYTES = 16;
export const WORK_BYTES = 16;
/** One dispatch's params block (common.wgsl `Params`), at its own 256-byte slot of the uniform buffer. */
export const PARAMS_BYTES = 32;

/** Consecutive groups `[groupStart, groupEnd)` whose buffers each fit one storage binding. */
export interface Chunk {
  readonly index: number;
  readonly groupStart: number;
  readonly groupEnd: number;
  readonly slotStart: number;
  readonly slotEnd: number;
}

export interface ChunkSizes {
  feat: number;
  emb: number;
  out: number;
  work: number;
  outI: number;
}

/** Scalars per embedding row on the device: f16 rows are padded to an even count (4-byte aligned). */
export function embStride(dim: number, f16: boolean): number {
  return f16 ? align2(dim) : dim;
}

export function embBytesPerSlot(dim: number, f16: boolean): number {
  return embStride(dim, f16) * (f16 ? 2 : 4);
}

export function chunkSizes(dim: number, f16: boolean, slots: number, groups: number): ChunkSizes {
  return {
    feat: slots * FEAT_BYTES,
    emb: align4(slots * embBytesPerSlot(dim, f16)),
    out: slots * OUT_BYTES,
    work: groups * WORK_BYTES,
    outI: align4(groups * 4),
  };
}

/**
 * Splits the groups into chunks at group boundaries so that no buffer of a chunk exceeds
 * `maxBytes` (the device's `maxStorageBufferBindingSize`, or less to bound memory).
 */
export function planChunks(forest: PackedForest, f16: boolean, maxBytes: number, route: Route = 'auto'): Chunk[] {
  const { groupOffset, groupCount, dim } = forest;
  const perSlot = Math.max(embBytesPerSlot(dim, f16), FEAT_BYTES, OUT_BYTES);
  const chunks: Chunk[] = [];
  let start = 0;
  while (start < groupCount) {
    let end = start;
    // The out buffer also holds the partial sums of tiled groups (and their tiles the work list).
    let partials = 0, tileBytes = 0;
    while (end < groupCount) {
      const slots = groupOffset[end + 1] - groupOffset[start];
      const groups = end + 1 - start;
      const k = groupOffset[end + 1] - groupOffset[end];
      const p = partialSlotsOf(k, route, dim);
      const tb = p > 0 ? Math.ceil(k / TILE_ROWS) * columnStrips(k) * 2 * WORK_BYTES : 0;
      if (slots * perSlot + 4 > maxBytes || (slots + partials + p) * OUT_BYTES > maxBytes || groups * WORK_BYTES + tileBytes + tb > maxBytes) break;
      partials += p;
      tileBytes += tb;
      end++;
    }
    if (end === start) {
      const k = groupOffset[start + 1] - groupOffset[start];
      const parentRow = forest.groupParent[start];
      const tree = forest.nodeTree[parentRow];
      throw new ForestError(
        { tree, treeId: forest.treeIds[tree], node: parentRow - forest.treeOffset[tree], field: 'embedding' },
        `the ${k} children of this node need ${k * perSlot} bytes, more than one GPU storage binding holds (${maxBytes}); use the cpu backend or smaller embeddings`,
      );
    }
    chunks.push({ index: chunks.length, groupStart: start, groupEnd: end, slotStart: groupOffset[start], slotEnd: groupOffset[end] });
    start = end;
  }
  return chunks;
}

/**
 * Largest |reward − ref| or |uncertainty − ref| (ref: the group's reference value) the f32
 * kernels accept: pairwise differences then stay far from the f32 range (Δ ≤ 4e30). Groups
 * whose values all lie within it use ref = 0 (their values are stored exactly); a group with a
 * value beyond it uses its midpoint, and only if every value's difference to it is exact in
 * float64 and within the limit. Otherwise the gpu backend throws `GpuInputRangeError` and
 * `auto` scores on the CPU.
 */
export const GPU_FEATURE_LIMIT = 1e30;

/** Node feature columns read by the feature packing (a PackedForest, or a mirror of it). */
export type FeatureColumns = Pick<PackedForest, 'reward' | 'visits' | 'uncertainty'>;

/**
 * Node features of the chunk-aligned slots `[s0, s1)` (whole groups): reward and uncertainty
 * as exact f32 triples (see writeGroupFeatures), the visited flag and the v2 share.
 */
export function packFeatureRange(forest: PackedForest, s0: number, s1: number, cols: FeatureColumns = forest): Float32Array {
  const out = new Float32Array((s1 - s0) * FEAT_FLOATS);
  if (s1 <= s0) return out;
  const { groupOffset, parentGroup, groupChild } = forest;
  for (let g = parentGroup[groupChild[s0]]; g < forest.groupCount && groupOffset[g] < s1; g++) {
    writeGroupFeatures(forest, g, cols, out, (groupOffset[g] - s0) * FEAT_FLOATS);
  }
  return out;
}

/**
 * Writes the k features of group `g` at `out[at…]`: rewards and uncertainties as f32
 * triples (hi + mid + lo holds 72 bits, so every float64 value of magnitude in [2^-78, 1e30]
 * is stored exactly and a pair's difference is computed on the device to a few f32 ulps of
 * the difference itself, whatever the group's spread). Groups with a value beyond
 * `GPU_FEATURE_LIMIT` are stored relative to their midpoint, when that is exact (siblings at
 * 1e35 and 1e35 + 2^70 keep their difference). Rewards of unvisited children never enter Δr,
 * so they neither set the reference nor count against the range (they are stored as the
 * reference). Throws `GpuInputRangeError` when a group cannot be stored exactly.
 */
export function writeGroupFeatures(forest: PackedForest, g: number, cols: FeatureColumns, out: Float32Array, at: number): void {
  packGroupFeatures(forest.groupChild, forest.groupOffset[g], forest.groupOffset[g + 1], cols, out, at, (field) => {
    const parentRow = forest.groupParent[g];
    const tree = forest.nodeTree[parentRow];
    return { tree, treeId: forest.treeIds[tree], node: parentRow - forest.treeOffset[tree], field };
  });
}

/**
 * The records of one sibling group whose children are `rows[s0..s1)`, relative to the group's
 * reference, written from `out[at]` on; `parentAt(field)` locates the group for the range error.
 * The one implementation behind `writeGroupFeatures` and the live forest's GPU uploads.
 */
export function packGroupFeatures(
  rows: ArrayLike<number>,
  s0: number,
  s1: number,
  cols: FeatureColumns,
  out: Float32Array,
  at: number,
  parentAt: (field: 'reward' | 'uncertainty') => ForestErrorLocation,
): void {
  const { reward, uncertainty, visits } = cols;
  let rMin = Infinity, rMax = -Infinity, uMin = Infinity, uMax = -Infinity;
  for (let s = s0; s < s1; s++) {
    const row = rows[s];
    const u = uncertainty[row];
    if (u < uMin) uMin = u;
    if (u > uMax) uMax = u;
    if (visits[row] > 0) {
      const r = reward[row];
      if (r < rMin) rMin = r;
      if (r > rMax) rMax = r;
    }
  }
  // Values within the limit are stored as they are (exactly); beyond it, relative to the midpoint.
  const rShift = rMin < -GPU_FEATURE_LIMIT || rMax > GPU_FEATURE_LIMIT;
  const uShift = uMax > GPU_FEATURE_LIMIT;
  const rRef = rShift ? rMin / 2 + rMax / 2 : 0;
  const uRef = uShift ? uMin / 2 + uMax / 2 : 0;
  if (rShift) checkRelative(rows, s0, s1, reward, visits, rRef, rMin, rMax, parentAt, 'reward');
  if (uShift) checkRelative(rows, s0, s1, uncertainty, undefined, uRef, uMin, uMax, parentAt, 'uncertainty');
  const shareScale = shareScaleOf(uMax);
  for (let s = s0, o = at; s < s1; s++, o += FEAT_FLOATS) {
    const row = rows[s];
    writeFeature(out, o, visits[row] > 0 ? reward[row] : rRef, uncertainty[row], visits[row], rRef, uRef, shareScale);
  }
  writeRewardClasses(rows, s0, s1, reward, visits, out, at);
}

/** Reward → class of the group being packed (reused: nothing allocated per group). */
const rewardClass = new Map<number, number>();

/**
 * The visited field of each record becomes the child's *reward class*: 0 when unvisited, else
 * 1 + the group position of the first visited sibling with the same float64 reward, negated when
 * the child has fewer than 2 visits. Every rule's kernel reads `!= 0` as "visited"; the
 * uncertainty gates read "equal |class|" as "equal rewards" — exact, where comparing the f32
 * triples is not for rewards below 2^-78 — and v5's reads a positive class as "visited twice".
 */
function writeRewardClasses(rows: ArrayLike<number>, s0: number, s1: number, reward: ArrayLike<number>, visits: ArrayLike<number>, out: Float32Array, at: number): void {
  if (s1 - s0 < 2) return;
  if (s1 - s0 > MAX_REWARD_CLASS) throw new RangeError(`a sibling group of ${s1 - s0} children is beyond the gpu feature layout's ${MAX_REWARD_CLASS}`);
  rewardClass.clear();
  for (let s = s0, o = at; s < s1; s++, o += FEAT_FLOATS) {
    const row = rows[s];
    if (!(visits[row] > 0)) continue;
    const r = reward[row];
    let c = rewardClass.get(r);
    if (c === undefined) { c = 1 + (s - s0); rewardClass.set(r, c); }
    out[o + 3] = visits[row] >= 2 ? c : -c;
  }
}

/** Classes are f32 integers: exact up to 2^24. */
const MAX_REWARD_CLASS = 1 << 24;

/**
 * The power of two that brings the group's largest `u + ε` into [1, 2) (v2's contrast shares
 * are ratios of `u + ε`, so any common scale leaves them exact). Within the range limits above
 * (all values ≤ 1e30, or within 1e30 of the midpoint) the smallest `u + ε` of the group
 * (ε = 1e−6) then stays a normal f32 (≥ 1e−6 / 2e30 > 2^-126).
 */
export function shareScaleOf(uMax: number): number {
  // 2^-e is exact even when subnormal in float64 (e up to 1023).
  return 2 ** -Math.floor(Math.log2(uMax + CONTRAST_EPSILON));
}

/** Whether `a − b` is exact in float64 (TwoSum's error term is 0). */
function exactDifference(a: number, b: number): boolean {
  const s = a - b;
  const bb = s - a;
  return a - (s - bb) + (-b - bb) === 0;
}

function checkRelative(
  rows: ArrayLike<number>, s0: number, s1: number, values: ArrayLike<number>, visits: ArrayLike<number> | undefined,
  ref: number, min: number, max: number, parentAt: (field: 'reward' | 'uncertainty') => ForestErrorLocation, field: 'reward' | 'uncertainty',
): void {
  let exact = max - ref <= GPU_FEATURE_LIMIT && ref - min <= GPU_FEATURE_LIMIT;
  for (let s = s0; s < s1 && exact; s++) {
    const row = rows[s];
    if (visits === undefined || visits[row] > 0) exact = exactDifference(values[row], ref);
  }
  if (exact) return;
  const what = field === 'reward' ? 'rewards of its visited children' : 'uncertainties of its children';
  throw new GpuInputRangeError(
    parentAt(field),
    `the ${what} span [${min}, ${max}]: beyond ±${GPU_FEATURE_LIMIT} the gpu backend's float32 kernels hold a group's values only ` +
      `as exact differences to the group's midpoint, at most ${GPU_FEATURE_LIMIT} either side of it; use the cpu backend (backend auto does)`,
  );
}

/**
 * One feature record: `reward − rewardRef` and `uncertainty − uncertaintyRef` (float64) as f32
 * triples `hi, mid, lo` (hi = f32(x), mid = f32(x − hi), lo = f32(x − hi − mid): exact for
 * every float64 of magnitude in [2^-78, 2^100]), the visited flag, and
 * `(uncertainty + ε)·shareScale` (the weight of this child in v2's split of a pair's contrast;
 * `shareScale` is the group's `shareScaleOf`). Layout: `r_hi, r_mid, r_lo, visited, u_hi,
 * u_mid, u_lo, share`. Callers pass the group's references (see writeGroupFeatures;
 * src/live/gpu.ts uses the same packer); they default to 0 (and the scale to 1).
 */
export function writeFeature(
  out: Float32Array, at: number, reward: number, uncertainty: number, visits: number, rewardRef = 0, uncertaintyRef = 0, shareScale = 1,
): void {
  writeTriple(out, at, reward - rewardRef);
  out[at + 3] = visits > 0 ? 1 : 0;
  writeTriple(out, at + 4, uncertainty - uncertaintyRef);
  out[at + 7] = (uncertainty + CONTRAST_EPSILON) * shareScale;
}

/** x as three f32 at out[at…at+2]; the two residuals are exact in float64. */
function writeTriple(out: Float32Array, at: number, x: number): void {
  const hi = Math.fround(x);
  const rest = x - hi;
  const mid = Math.fround(rest);
  out[at] = hi;
  out[at + 1] = mid;
  out[at + 2] = rest - mid;
}

/** Embedding rows of slots `[s0, s1)`, slot-major; f16 as raw bits in a Uint16Array. */
export function packEmbeddingRange(forest: PackedForest, s0: number, s1: number, f16: boolean, scratch?: (bytes: number) => ArrayBuffer): Float32Array | Uint16Array {
  const { dim, groupChild, embedding } = forest;
  const alloc = scratch ?? ((bytes: number) => new ArrayBuffer(bytes));
  if (!f16) {
    const n = Math.max(1, (s1 - s0) * dim);
    const out = new Float32Array(alloc(n * 4), 0, n);
    // Copy runs of consecutive rows at once (children are often adjacent rows); a subarray per
    // row costs an allocation each and made this the slowest part of an upload.
    for (let s = s0; s < s1; ) {
      const r0 = groupChild[s];
      let e = s + 1;
      while (e < s1 && groupChild[e] === r0 + (e - s)) e++;
      out.set(embedding.subarray(r0 * dim, (r0 + e - s) * dim), (s - s0) * dim);
      s = e;
    }
    // Rows whose magnitude leaves the safe f32 range are redone from the source, scaled.
    if (dim > 0) {
      const bits = new Int32Array(out.buffer, out.byteOffset, n);
      for (let s = s0; s < s1; s++) {
        const at = (s - s0) * dim;
        if (!f32RowInRange(bits, at, dim)) writeF32Row(out, at, embedding, groupChild[s] * dim, dim);
      }
    }
    return out;
  }
  const stride = embStride(dim, true);
  const n = Math.max(2, (s1 - s0) * stride);
  const out = new Uint16Array(alloc(n * 2), 0, n);
  for (let s = s0; s < s1; s++) writeHalfRow(out, (s - s0) * stride, embedding, groupChild[s] * dim, dim);
  return out;
}

/**
 * Rows whose max-abs lies in [2^-63, 2^65) go to the device as they are: the kernels' row
 * scale handles them exactly (its max-abs path covers sums of squares outside [1e-30, 1e30]).
 * Rows outside it are scaled by `writeF32Row`.
 */
export const ROW_SAFE_MIN = 2 ** -63;
export const ROW_SAFE_MAX = 2 ** 65;

/**
 * Whether the f32 row at `bits[at…at+dim)` (raw bits) has its max-abs in [2^-63, 2^65), with
 * two ORs per value and no compare: the exponent field has bit 6 or 7 set somewhere iff some
 * |x| ≥ 2^-63, and |bits| + 2^29 wraps negative iff |x| ≥ 2^65 (or is ∞/NaN).
 */
function f32RowInRange(bits: Int32Array, at: number, dim: number): boolean {
  let any = 0, over = 0;
  for (let d = at, end = at + dim; d < end; d++) {
    const a = bits[d] & 0x7fffffff;
    any |= a;
    over |= (a + 0x20000000) | 0;
  }
  return (any & 0x60000000) !== 0 && over >= 0;
}

/**
 * One embedding row narrowed to f32 at `out[at…]`, from `src[from…from+dim)` (float64 or
 * f32). A row whose max-abs lies outside [2^-63, 2^65) — e.g. 1e-40 (f32 subnormal, flushed
 * by GPUs), 1e-300 (0 in f32) or 1e39 (∞ in f32) — is first scaled by the power of two that
 * brings its max-abs into [1, 2): exact apart from the final rounding, and harmless to cosine
 * similarity. Other rows are copied as they are. A zero row stays zero. Returns whether the
 * row was scaled. (src/live/gpu.ts narrows its uploads through it as well.)
 */
export function writeF32Row(out: Float32Array, at: number, src: ArrayLike<number>, from: number, dim: number): boolean {
  let m = 0;
  for (let d = 0; d < dim; d++) {
    const a = Math.abs(src[from + d]);
    if (a > m) m = a;
  }
  if (m === 0 || (m >= ROW_SAFE_MIN && m < ROW_SAFE_MAX)) {
    for (let d = 0; d < dim; d++) out[at + d] = src[from + d];
    return false;
  }
  const e = Math.floor(Math.log2(m));
  // 2^-e can itself overflow/underflow float64 (|e| > 1022): scale in two steps.
  const h = Math.trunc(-e / 2);
  const a = 2 ** h, b = 2 ** (-e - h);
  for (let d = 0; d < dim; d++) out[at + d] = src[from + d] * a * b;
  return true;
}

/**
 * One row as f16. The row is first scaled by a power of two that brings its max-abs into
 * [1, 2) — exact in f32 and harmless to cosine similarity — so no row overflows f16 and
 * tiny rows do not flush to zero.
 */
export function writeHalfRow(out: Uint16Array, at: number, src: ArrayLike<number>, from: number, dim: number): void {
  let m = 0;
  for (let d = 0; d < dim; d++) m = Math.max(m, Math.abs(src[from + d]));
  if (m === 0) {
    for (let d = 0; d < dim; d++) out[at + d] = 0;
    return;
  }
  // 2^-e can itself leave the float64 range (rows near 1e±308): scale in two steps.
  const e = Math.floor(Math.log2(m));
  const h = Math.trunc(-e / 2);
  const a = 2 ** h, b = 2 ** (-e - h);
  for (let d = 0; d < dim; d++) out[at + d] = toHalfBits(src[from + d] * a * b);
}

/** Work entries for whole groups, in chunk-local slots (docs/GPU.md "Kernels"). */
export interface WorkLists {
  /** (first slot, k, first output slot, output index) per group, for the one-invocation-per-group kernel. */
  thread: Uint32Array;
  /** The same entries for the one-workgroup-per-group kernel. */
  workgroup: Uint32Array;
  /** 8 u32 per pair tile of a tiled group: (first slot, k, row tile, column strip), (partial base, first column, end column, 0). */
  tiles: Uint32Array;
  /** 8 u32 per tiled group: its entry as above, then (partial base, column strips, 0, 0). */
  reduce: Uint32Array;
  /** vec4 slots of partial sums the tiles write after the output slots (out holds outSlots + partialSlots). */
  partialSlots: number;
  /** Several small groups per workgroup: one vec4 per bin (first entry, groups, 0, 0), then the entries (as `thread`). */
  staged: Uint32Array;
  /** Bins at the start of `staged` (its workgroups). */
  bins: number;
}

/**
 * 'staged': small groups staged (several per workgroup, coalesced reads), the rest as
 * 'classic'; 'classic': the mapping before staging (thread, workgroup or tiled by size), faster
 * on CPU-emulated adapters; 'auto': 'staged' on GPUs, 'classic' on CPU-emulated adapters
 * (`resolveRoute`); or one kernel for every group.
 */
export type Route = 'auto' | 'staged' | 'classic' | 'thread' | 'workgroup' | 'tiled';

/** The route a context uses for `route`: 'auto' is 'classic' on a CPU-emulated adapter, else 'staged'. */
export function resolveRoute(route: Route, cpuEmulated: boolean): Route {
  return route === 'auto' ? (cpuEmulated ? 'classic' : 'staged') : route;
}
export type Kernel = 'staged' | 'thread' | 'workgroup' | 'tiled';

/** Lanes of score_staged.wgsl: the most children of one bin (one lane each). */
export const STAGE_LANES = 64;

/** Embedding floats one bin stages in workgroup memory (rows at the odd stride dim | 1): score_staged.wgsl's STAGE_FLOATS. */
export const STAGE_FLOATS = 2304;

/** Pair distances one bin keeps in workgroup memory: score_staged.wgsl's STAGE_PAIRS. */
export const STAGE_PAIRS = 1024;

/** Whether a group of k children fits one bin of the staged kernel. */
export function fitsStaged(k: number, dim: number): boolean {
  return k <= STAGE_LANES && k * (dim | 1) <= STAGE_FLOATS && (k * (k - 1)) / 2 <= STAGE_PAIRS;
}

/**
 * Groups up to this many children go to the one-invocation-per-group kernel (see
 * docs/GPU.md for the measurement); larger ones get a whole workgroup.
 */
export const THREAD_KERNEL_MAX_K = 256;

/**
 * …and only while one invocation's work, ~k²·dim, stays small: a single lane grinding
 * through a 256-child group at dim 4096 would take long enough on a discrete GPU to risk the
 * driver's watchdog, where a workgroup splits it 64 ways.
 */
export const THREAD_KERNEL_MAX_WORK = 2 ** 24;

/**
 * Groups above this many children are tiled: their pairs are spread over many workgroups
 * (score_tiles.wgsl, then score_reduce.wgsl), so no one workgroup runs through k² pairs.
 */
export const TILED_MIN_K = 1024;

/** Rows of one pair tile: the workgroup size of score_tiles.wgsl (fixed, the host cuts the tiles). */
export const TILE_ROWS = 64;

/** At most this many column strips per tiled group: partial sums cost 16 B per child per strip. */
export const MAX_COLUMN_STRIPS = 16;

export function kernelFor(k: number, route: Route, dim = 1): Kernel {
  if (route === 'thread' || route === 'workgroup') return route;
  if (route === 'tiled') return k >= 2 ? 'tiled' : 'workgroup';
  if ((route === 'auto' || route === 'staged') && fitsStaged(k, dim)) return 'staged';
  if (k <= THREAD_KERNEL_MAX_K && k * k * Math.max(1, dim) <= THREAD_KERNEL_MAX_WORK) return 'thread';
  return k > TILED_MIN_K ? 'tiled' : 'workgroup';
}

export function routeToThread(k: number, route: Route, dim = 1): boolean {
  return kernelFor(k, route, dim) === 'thread';
}

/** Column strips of a tiled group of k children. */
export function columnStrips(k: number): number {
  return Math.min(Math.ceil(k / TILE_ROWS), MAX_COLUMN_STRIPS);
}

/** Partial-sum slots a group of k children needs in `out` (0 unless it is tiled). */
export function partialSlotsOf(k: number, route: Route, dim: number): number {
  return kernelFor(k, route, dim) === 'tiled' ? k * columnStrips(k) : 0;
}

/**
 * Builds work lists for `count` groups; group i has `sizeOf(i)` children from chunk-local slot
 * `firstSlotOf(i)` on. Outputs are compacted: the i-th group writes `k` output slots starting
 * at `outStart[i]` (where the previous one ended) and its intensity at index i; tiled groups'
 * partial sums follow all output slots. Deterministic: the lists depend on the inputs only.
 */
export function planWork(count: number, firstSlotOf: (i: number) => number, sizeOf: (i: number) => number, route: Route, dim: number): { lists: WorkLists; outSlots: number; outStart: Int32Array } {
  let nThread = 0, nWg = 0, nTiled = 0, nTiles = 0, nStaged = 0, bins = 0, outSlots = 0;
  let packer = new BinPacker(dim);
  for (let i = 0; i < count; i++) {
    const k = sizeOf(i);
    outSlots += k;
    const kernel = kernelFor(k, route, dim);
    if (kernel === 'thread') nThread++;
    else if (kernel === 'workgroup') nWg++;
    else if (kernel === 'staged') {
      // Bins take consecutive staged groups while children and staged floats fit.
      nStaged++;
      if (packer.add(k)) bins++;
    } else { nTiled++; nTiles += Math.ceil(k / TILE_ROWS) * columnStrips(k); }
  }
  const thread = new Uint32Array(nThread * 4), workgroup = new Uint32Array(nWg * 4);
  const tiles = new Uint32Array(nTiles * 8), reduce = new Uint32Array(nTiled * 8);
  const staged = new Uint32Array((bins + nStaged) * 4);
  const outStart = new Int32Array(count);
  let o = 0, t = 0, w = 0, r = 0, at = 0, partial = outSlots;
  let bin = -1, sAt = bins;
  packer = new BinPacker(dim);
  for (let i = 0; i < count; i++) {
    const first = firstSlotOf(i);
    const k = sizeOf(i);
    outStart[i] = o;
    const kernel = kernelFor(k, route, dim);
    if (kernel === 'tiled') {
      const strips = columnStrips(k), width = Math.ceil(k / strips);
      reduce.set([first, k, o, i, partial, strips, 0, 0], r);
      r += 8;
      for (let ti = 0; ti * TILE_ROWS < k; ti++) {
        for (let tj = 0; tj < strips; tj++) {
          tiles.set([first, k, ti, tj, partial, tj * width, Math.min(k, (tj + 1) * width), 0], at);
          at += 8;
        }
      }
      partial += k * strips;
    } else if (kernel === 'staged') {
      if (packer.add(k)) staged[4 * ++bin] = sAt;
      staged[4 * bin + 1]++;
      staged.set([first, k, o, i], 4 * sAt++);
    } else {
      const list = kernel === 'thread' ? thread : workgroup;
      const e = kernel === 'thread' ? t++ * 4 : w++ * 4;
      list[e] = first;
      list[e + 1] = k;
      list[e + 2] = o;
      list[e + 3] = i;
    }
    o += k;
  }
  return { lists: { thread: sortByK(thread), workgroup, tiles, reduce, partialSlots: partial - outSlots, staged, bins }, outSlots, outStart };
}

/** Packs consecutive staged groups into bins while children, staged floats and pairs fit. */
class BinPacker {
  private k = STAGE_LANES;
  private floats = 0;
  private pairs = 0;
  constructor(private readonly dim: number) {}
  /** Adds a group of k children; true when it opens a new bin. */
  add(k: number): boolean {
    const floats = k * (this.dim | 1), pairs = (k * (k - 1)) / 2;
    const opens = this.k + k > STAGE_LANES || this.floats + floats > STAGE_FLOATS || this.pairs + pairs > STAGE_PAIRS;
    if (opens) { this.k = 0; this.floats = 0; this.pairs = 0; }
    this.k += k;
    this.floats += floats;
    this.pairs += pairs;
    return opens;
  }
}

/** Work lists for `groups` (global ids, all inside `chunk`); see planWork. */
export function buildWork(forest: PackedForest, chunk: Chunk, groups: ArrayLike<number>, route: Route): { lists: WorkLists; outSlots: number } {
  const { groupOffset } = forest;
  return planWork(groups.length, (i) => groupOffset[groups[i]] - chunk.slotStart, (i) => groupOffset[groups[i] + 1] - groupOffset[groups[i]], route, forest.dim);
}

/**
 * Orders one-invocation-per-group entries by k (stable counting sort), so neighbouring lanes
 * run loops of the same length instead of waiting on the longest one. Outputs do not move:
 * every entry carries its own output positions.
 */
function sortByK(list: Uint32Array): Uint32Array {
  const n = list.length / 4;
  if (n < 2) return list;
  let maxK = 0;
  for (let i = 0; i < n; i++) maxK = Math.max(maxK, list[4 * i + 1]);
  const start = new Int32Array(maxK + 2);
  for (let i = 0; i < n; i++) start[list[4 * i + 1] + 1]++;
  for (let k = 1; k <= maxK + 1; k++) start[k] += start[k - 1];
  const out = new Uint32Array(list.length);
  for (let i = 0; i < n; i++) {
    const at = 4 * start[list[4 * i + 1]]++;
    out.set(list.subarray(4 * i, 4 * i + 4), at);
  }
  return out;
}

function align4(n: number): number {
  return Math.max(4, Math.ceil(n / 4) * 4);
}

function align2(n: number): number {
  return Math.ceil(n / 2) * 2;
}
