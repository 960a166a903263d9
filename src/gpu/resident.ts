import { describeValue, ForestError } from '../forest/errors.js';
import type { PackedForest } from '../forest/packed.js';
import { resolveParams, type ScoreParams, type Scores } from '../score/types.js';
import type { GpuContext } from './context.js';
import { loadPipelines, submitChunk, submitChunks, submitTransferOnly, type ChunkInputs, type ChunkJob, type ChunkOutputs } from './dispatch.js';
import { GpuNonFiniteError, GpuParamRangeError } from './errors.js';
import {
  buildWork, chunkSizes, embBytesPerSlot, embStride, FEAT_BYTES, FEAT_FLOATS, packEmbeddingRange, packFeatureRange, planChunks,
  resolveRoute, writeF32Row, writeGroupFeatures, writeHalfRow, type Chunk, type FeatureColumns, type Route,
} from './layout.js';
import { prepareForest, wholeChunkWork, type PreparedChunk } from './prepared.js';

export interface ResidentOptions {
  /** Store embeddings as f16 (needs `shader-f16`); accumulation stays f32. Default false. */
  f16?: boolean;
  /** Cap on any one chunk buffer, below the device's storage binding limit (tests, memory). */
  maxChunkBytes?: number;
  /** Kernel mapping: 'auto' (staged on GPUs, classic on CPU-emulated adapters; by group size and width), or one forced (measurements, tests). */
  route?: Route;
}

/** Where the time of one GPU call went, in milliseconds (docs/GPU.md "Timings"). */
export interface GpuTimings {
  /** Host time packing inputs into the device layout and queueing their upload. */
  upload: number;
  /** GPU time of the compute passes (timestamp queries), or the wait for results without them. */
  kernels: number;
  /** Where `kernels` came from; 'none' when no kernel ran (the transfer floor). */
  kernelsFrom: 'timestamp-query' | 'wait' | 'none';
  /** From the last submit until the last result was mapped (GPU tail plus transfer back). */
  wait: number;
  /** Host time copying mapped results out and scattering them to node rows. */
  readback: number;
  total: number;
}

/** Scores of a list of groups, as returned by `ResidentForest.rescore`. */
export interface GroupScores {
  /** The groups scored: the requested ids, sorted and without duplicates. */
  readonly groupIds: Int32Array;
  /** `groupIds.length + 1` offsets into the per-child arrays. */
  readonly childOffset: Int32Array;
  /** Global row of each child. */
  readonly rows: Int32Array;
  readonly contrast: Float32Array;
  readonly weight: Float32Array;
  readonly gradAlpha: Float32Array;
  readonly gradTau: Float32Array;
  /** One per listed group. */
  readonly intensity: Float32Array;
  readonly params: Readonly<ScoreParams>;
  readonly timings: GpuTimings;
}

interface ChunkState extends ChunkInputs {
  chunk: Chunk;
}

/**
 * A packed forest kept on the device: node features and embeddings are uploaded once, can be
 * updated row by row in place, and any list of groups can be re-scored with only their
 * outputs read back. The group structure is fixed; a forest that gains nodes needs a new
 * ResidentForest. Several `rescore` calls may be in flight at once (outputs are per call).
 */
export class ResidentForest {
  private destroyed = false;
  /** Chunk of each group. */
  private readonly groupChunk: Int32Array;
  /** Slot of each row (its position in `groupChild`), -1 for roots. */
  private readonly rowSlot: Int32Array;
  /**
   * Host copy of the features on the device (float64): a feature write re-packs the row's
   * whole group relative to its reference value (`writeGroupFeatures`), which needs the
   * group's other rows.
   */
  private readonly cols: { reward: Float64Array; visits: Float64Array; uncertainty: Float64Array };

  private constructor(
    private readonly ctx: GpuContext,
    readonly forest: PackedForest,
    readonly f16: boolean,
    private readonly route: Route,
    private readonly states: ChunkState[],
    readonly uploadMs: number,
    private readonly maxChunkBytes: number,
  ) {
    this.groupChunk = new Int32Array(forest.groupCount);
    for (const s of states) this.groupChunk.fill(s.chunk.index, s.chunk.groupStart, s.chunk.groupEnd);
    this.rowSlot = new Int32Array(forest.nodeCount).fill(-1);
    for (let slot = 0; slot < forest.groupChild.length; slot++) this.rowSlot[forest.groupChild[slot]] = slot;
    this.cols = { reward: Float64Array.from(forest.reward), visits: Float64Array.from(forest.visits), uncertainty: Float64Array.from(forest.uncertainty) };
  }

  /** Uploads `forest` to the device. */
  static async create(ctx: GpuContext, forest: PackedForest, options: ResidentOptions = {}): Promise<ResidentForest> {
    const f16 = checkF16(ctx, options.f16);
    const t0 = performance.now();
    const route = resolveRoute(options.route ?? 'auto', ctx.cpuEmulated);
    const chunks = prepareForest(forest, f16, Math.min(ctx.maxBinding, options.maxChunkBytes ?? Infinity), route);
    const states: ChunkState[] = [];
    try {
      for (const chunk of chunks) {
        const { state, checked } = uploadChunk(ctx, forest.dim, chunk, f16);
        if (state) states.push(state);
        await checked;
      }
    } catch (err) {
      if (!ctx.isLost) for (const s of states) releaseInputs(ctx, s);
      throw err;
    }
    return new ResidentForest(ctx, forest, f16, route, states, performance.now() - t0, Math.min(ctx.maxBinding, options.maxChunkBytes ?? Infinity));
  }

  get chunkCount(): number {
    return this.states.length;
  }

  /** The groups whose scores depend on these rows (each row's own sibling group). */
  groupsOfRows(rows: ArrayLike<number>): Int32Array {
    const set = new Set<number>();
    for (let i = 0; i < rows.length; i++) {
      const g = this.forest.parentGroup[checkRow(this.forest, rows[i])];
      if (g >= 0) set.add(g);
    }
    return Int32Array.from([...set].sort((a, b) => a - b));
  }

  /**
   * Overwrites reward, visits and uncertainty of `rows` on the device with the values at the
   * same rows of `source` (e.g. the updated PackedForest). Roots are ignored: no group reads
   * them. Each touched group is re-packed relative to its reference value (one write per
   * group); nothing is written when a value is invalid or a group leaves the f32 range
   * (`GpuInputRangeError`).
   */
  writeNodeFeatures(rows: ArrayLike<number>, source: Pick<PackedForest, 'reward' | 'visits' | 'uncertainty'>): void {
    this.checkAlive();
    const f = this.forest;
    const changed: number[] = [];
    for (let i = 0; i < rows.length; i++) {
      const row = checkRow(f, rows[i]);
      if (this.rowSlot[row] < 0) continue;
      const r = source.reward[row], n = source.visits[row], u = source.uncertainty[row];
      const where = (field: string) => this.location(row, field);
      if (!Number.isFinite(r)) throw new ForestError(where('reward'), `must be a finite number, got ${describeValue(r)}`);
      if (!Number.isInteger(n) || n < 0) throw new ForestError(where('visits'), `must be an integer >= 0, got ${describeValue(n)}`);
      if (!Number.isFinite(u) || u < 0) throw new ForestError(where('uncertainty'), `must be a finite number >= 0, got ${describeValue(u)}`);
      changed.push(row);
    }
    const groups = this.groupsOfRows(changed);
    // Stage the new values over the mirror, pack every touched group (which may throw), and
    // only then commit: a failed write leaves device and mirror as they were.
    const c = this.cols;
    const old = changed.map((row) => [c.reward[row], c.visits[row], c.uncertainty[row]] as const);
    for (const row of changed) {
      c.reward[row] = source.reward[row];
      c.visits[row] = source.visits[row];
      c.uncertainty[row] = source.uncertainty[row];
    }
    const packed: Float32Array[] = [];
    try {
      for (const g of groups) {
        const k = f.groupOffset[g + 1] - f.groupOffset[g];
        const out = new Float32Array(k * FEAT_FLOATS);
        writeGroupFeatures(f, g, c as FeatureColumns, out, 0);
        packed.push(out);
      }
    } catch (err) {
      changed.forEach((row, i) => ([c.reward[row], c.visits[row], c.uncertainty[row]] = old[i]));
      throw err;
    }
    groups.forEach((g, i) => {
      const s = this.states[this.groupChunk[g]];
      this.ctx.device.queue.writeBuffer(s.feat, (f.groupOffset[g] - s.chunk.slotStart) * FEAT_BYTES, packed[i]);
    });
  }

  /**
   * Overwrites the embeddings of `rows` on the device from `source` (row-major, `nodeCount × dim`).
   * Rows are narrowed with `writeF32Row` (f32) or `writeHalfRow` (f16), so magnitudes outside
   * the f32 range are scaled rather than flushed or overflowed.
   */
  writeEmbeddings(rows: ArrayLike<number>, source: Float32Array | Float64Array): void {
    this.checkAlive();
    const f = this.forest;
    const dim = f.dim;
    if (dim === 0) return;
    if (source.length !== f.nodeCount * dim) throw new ForestError({ field: 'embedding' }, `matrix has ${source.length} values, expected ${f.nodeCount} × ${dim}`);
    const half = this.f16 ? new Uint16Array(embStride(dim, true)) : undefined;
    const single = this.f16 ? undefined : new Float32Array(dim);
    for (let i = 0; i < rows.length; i++) {
      const row = checkRow(f, rows[i]);
      const slot = this.rowSlot[row];
      if (slot < 0) continue;
      for (let d = 0; d < dim; d++) {
        const x = source[row * dim + d];
        if (!Number.isFinite(x)) throw new ForestError(this.location(row, `embedding[${d}]`), `must be a finite number, got ${describeValue(x)}`);
      }
      const s = this.states[this.groupChunk[f.parentGroup[row]]];
      const offset = (slot - s.chunk.slotStart) * embBytesPerSlot(dim, this.f16);
      if (half) {
        writeHalfRow(half, 0, source, row * dim, dim);
        this.ctx.device.queue.writeBuffer(s.emb, offset, half);
      } else {
        writeF32Row(single!, 0, source, row * dim, dim);
        this.ctx.device.queue.writeBuffer(s.emb, offset, single!);
      }
    }
  }

  /** Scores `groupIds` with the device-resident data and reads back only their outputs. */
  async rescore(groupIds: ArrayLike<number>, params?: Partial<ScoreParams>): Promise<GroupScores> {
    this.checkAlive();
    const t0 = performance.now();
    const resolved = checkGpuParams(resolveParams(params));
    const f = this.forest;
    const ids = Int32Array.from(new Set(Array.from(groupIds, (g) => checkGroup(f, g)))).sort();
    const pipes = await loadPipelines(this.ctx, this.f16);
    const tUpload = performance.now();
    const runs: { from: number; to: number }[] = [];
    const jobs: ChunkJob[] = [];
    for (let from = 0; from < ids.length; ) {
      const c = this.groupChunk[ids[from]];
      let to = from;
      while (to < ids.length && this.groupChunk[ids[to]] === c) to++;
      const state = this.states[c];
      const { lists, outSlots } = buildWork(f, state.chunk, ids.subarray(from, to), this.route);
      runs.push({ from, to });
      jobs.push({ inputs: state, lists, outSlots, affinity: state });
      from = to;
    }
    // Every chunk's dispatches in one submission.
    const pending = submitChunks(this.ctx, pipes, f.dim, jobs, resolved);
    const submittedAt = performance.now();
    const outputs = await Promise.all(pending);

    const childOffset = new Int32Array(ids.length + 1);
    for (let i = 0; i < ids.length; i++) childOffset[i + 1] = childOffset[i] + f.groupOffset[ids[i] + 1] - f.groupOffset[ids[i]];
    const n = childOffset[ids.length];
    const rows = new Int32Array(n), contrast = new Float32Array(n), weight = new Float32Array(n);
    const gradAlpha = new Float32Array(n), gradTau = new Float32Array(n), intensity = new Float32Array(ids.length);
    runs.forEach((run, r) => {
      const { out, outI } = outputs[r];
      let o = 0;
      for (let i = run.from; i < run.to; i++) {
        const g = ids[i];
        intensity[i] = outI[i - run.from];
        for (let s = f.groupOffset[g], at = childOffset[i]; s < f.groupOffset[g + 1]; s++, at++, o++) {
          rows[at] = f.groupChild[s];
          contrast[at] = out[4 * o];
          weight[at] = out[4 * o + 1];
          gradAlpha[at] = out[4 * o + 2];
          gradTau[at] = out[4 * o + 3];
        }
      }
    });
    checkFinite(f, rows, [contrast, weight, gradAlpha, gradTau]);
    checkFiniteIntensity(f, ids, intensity);
    const timings = finishTimings(t0, tUpload - t0, submittedAt, outputs);
    return { groupIds: ids, childOffset, rows, contrast, weight, gradAlpha, gradTau, intensity, params: resolved, timings };
  }

  /** Scores every group; the result has the full `Scores` shape. */
  async scoreAll(params?: Partial<ScoreParams>): Promise<Scores & { timings: GpuTimings }> {
    this.checkAlive();
    const t0 = performance.now();
    const resolved = checkGpuParams(resolveParams(params));
    const pipes = await loadPipelines(this.ctx, this.f16);
    const prepared = prepareForest(this.forest, this.f16, this.maxChunkBytes, this.route);
    const jobs = this.states.map((s): ChunkJob => ({ inputs: s, ...wholeChunkWork(this.forest, prepared[s.chunk.index], this.route), affinity: s }));
    const pending = submitChunks(this.ctx, pipes, this.forest.dim, jobs, resolved);
    const submittedAt = performance.now();
    const outputs = await Promise.all(pending);
    const scores = emptyScores(this.forest, resolved);
    let finite = true;
    this.states.forEach((s, i) => (finite = scatterChunk(this.forest, s.chunk, outputs[i], scores) && finite));
    if (!finite) checkScoresFinite(this.forest, scores);
    return { ...scores, timings: finishTimings(t0, submittedAt - t0, submittedAt, outputs) };
  }

  /** Returns the device buffers to the context's pool. Idempotent. */
  destroy(): void {
    if (this.destroyed) return;
    this.destroyed = true;
    if (!this.ctx.isLost) for (const s of this.states) releaseInputs(this.ctx, s);
  }

  private location(row: number, field: string) {
    const f = this.forest;
    const tree = f.nodeTree[row];
    return { tree, treeId: f.treeIds[tree], node: row - f.treeOffset[tree], field };
  }

  private checkAlive(): void {
    if (this.destroyed) throw new Error('this ResidentForest was destroyed');
    this.ctx.checkAlive();
  }
}

/**
 * One-shot scoring of a whole forest: chunk by chunk, each chunk's upload is queued while the
 * previous chunk computes, and its readback is mapped as soon as it is done. Input buffers go
 * back to the pool at the end.
 */
export async function scoreStreaming(
  ctx: GpuContext, forest: PackedForest, params: ScoreParams, options: ResidentOptions = {},
): Promise<Scores & { timings: GpuTimings }> {
  checkGpuParams(params);
  const f16 = checkF16(ctx, options.f16);
  const t0 = performance.now();
  const route = resolveRoute(options.route ?? 'auto', ctx.cpuEmulated);
  const pipes = await loadPipelines(ctx, f16);
  return streamChunks(ctx, forest, f16, options, (prepared, state) => submitWholeChunk(ctx, pipes, forest, prepared, state, params, route), (chunks, outputs, upload, submittedAt) => {
    const scores = emptyScores(forest, params);
    let finite = true;
    chunks.forEach((c, i) => (finite = scatterChunk(forest, c, outputs[i], scores) && finite));
    if (!finite) checkScoresFinite(forest, scores);
    return { ...scores, timings: finishTimings(t0, upload, submittedAt, outputs) };
  });
}

/** Uploads the packed inputs and reads back output-sized buffers, with no compute (docs/GPU.md). */
export async function transferFloor(ctx: GpuContext, forest: PackedForest, options: ResidentOptions = {}): Promise<GpuTimings> {
  const f16 = checkF16(ctx, options.f16);
  const t0 = performance.now();
  return streamChunks(ctx, forest, f16, options, (_prepared, state) => {
    const { chunk } = state;
    const sizes = chunkSizes(forest.dim, f16, chunk.slotEnd - chunk.slotStart, chunk.groupEnd - chunk.groupStart);
    return submitTransferOnly(ctx, sizes.out + sizes.outI);
  }, (_chunks, _outputs, upload, submittedAt) => {
    const done = performance.now();
    // No kernel ran, so nothing measured one: kernels is 0 by construction.
    return { upload, kernels: 0, kernelsFrom: 'none', wait: done - submittedAt, readback: 0, total: done - t0 };
  });
}

/**
 * The chunk loop shared by one-shot scoring and the transfer floor: uploads chunk by chunk,
 * submitting each chunk's work (`submit`) as soon as its upload is queued, then waits for the
 * upload checks and every result and hands them to `finish`. Input buffers go back to the
 * pool whatever happens.
 */
async function streamChunks<T, R>(
  ctx: GpuContext, forest: PackedForest, f16: boolean, options: ResidentOptions,
  submit: (prepared: PreparedChunk, state: ChunkState) => Promise<T>,
  finish: (chunks: Chunk[], outputs: T[], upload: number, submittedAt: number) => R,
): Promise<R> {
  // The device layout is built on the first call on this forest and reused after (prepared.ts).
  const u0 = performance.now();
  const prepared = prepareForest(forest, f16, Math.min(ctx.maxBinding, options.maxChunkBytes ?? Infinity), resolveRoute(options.route ?? 'auto', ctx.cpuEmulated));
  const chunks = prepared.map((p) => p.chunk);
  const states: ChunkState[] = [];
  const pending: Promise<T>[] = [];
  const checks: Promise<unknown>[] = [];
  let upload = performance.now() - u0;
  try {
    for (const p of prepared) {
      const u1 = performance.now();
      const { state, checked } = uploadChunk(ctx, forest.dim, p, f16);
      checks.push(checked);
      if (!state) await checked;
      states.push(state!);
      upload += performance.now() - u1;
      pending.push(submit(p, state!));
    }
    const submittedAt = performance.now();
    await Promise.all(checks);
    const outputs = await Promise.all(pending);
    return finish(chunks, outputs, upload, submittedAt);
  } finally {
    await Promise.allSettled([...pending, ...checks]);
    if (!ctx.isLost) for (const s of states) releaseInputs(ctx, s);
  }
}

function submitWholeChunk(ctx: GpuContext, pipes: Awaited<ReturnType<typeof loadPipelines>>, forest: PackedForest, p: PreparedChunk, s: ChunkState, params: ScoreParams, route: Route): Promise<ChunkOutputs> {
  // The prepared chunk stands for this chunk across one-shot calls: the same buffers, bind group and uploaded work lists.
  return submitChunk(ctx, pipes, forest.dim, { inputs: s, ...wholeChunkWork(forest, p, route), affinity: p }, params);
}

/** Allocates one chunk's input buffers and uploads its prepared layout; the promise reports WebGPU errors of the upload. */
function uploadChunk(ctx: GpuContext, dim: number, p: PreparedChunk, f16: boolean): { state: ChunkState | undefined; checked: Promise<unknown> } {
  ctx.checkAlive();
  const { chunk, features, embedding: e } = p;
  let state: ChunkState | undefined;
  const checked = ctx.guard('uploading a chunk', () => {
    const slots = chunk.slotEnd - chunk.slotStart;
    const sizes = chunkSizes(dim, f16, slots, chunk.groupEnd - chunk.groupStart);
    const S = GPUBufferUsage;
    const featBytes = Math.max(FEAT_BYTES, sizes.feat);
    const feat = ctx.pool.acquire(featBytes, S.STORAGE | S.COPY_DST, 'feat', p);
    const emb = ctx.pool.acquire(sizes.emb, S.STORAGE | S.COPY_DST, 'emb', p);
    state = { chunk, f16, feat, emb };
    const q = ctx.device.queue;
    q.writeBuffer(feat, 0, features);
    q.writeBuffer(emb, 0, e.buffer, e.byteOffset, Math.min(e.byteLength, sizes.emb));
  });
  checked.catch(() => {}); // awaited by the caller
  return { state, checked }; // state is undefined only when `checked` rejects
}

function releaseInputs(ctx: GpuContext, s: ChunkState): void {
  ctx.pool.release(s.feat);
  ctx.pool.release(s.emb);
}

function emptyScores(forest: PackedForest, params: ScoreParams): Scores {
  const n = forest.nodeCount;
  return {
    contrast: new Float32Array(n),
    weight: new Float32Array(n).fill(1),
    gradAlpha: new Float32Array(n),
    gradTau: new Float32Array(n),
    intensity: new Float32Array(forest.groupCount),
    params,
    backend: 'gpu',
  };
}

/**
 * Copies one chunk's outputs to node rows. Returns false if any value is non-finite: `x·0`
 * is NaN exactly for NaN and ±∞, so the safety net costs one multiply-add per value here,
 * and `checkScoresFinite` only runs to name the place when something is wrong.
 */
function scatterChunk(forest: PackedForest, chunk: Chunk, o: ChunkOutputs, scores: Scores): boolean {
  const { groupChild } = forest;
  const { out, outI } = o;
  const C = scores.contrast, W = scores.weight, GA = scores.gradAlpha, GB = scores.gradTau;
  let z = 0;
  for (let s = chunk.slotStart, i = 0; s < chunk.slotEnd; s++, i += 4) {
    const row = groupChild[s];
    const c = out[i], w = out[i + 1], ga = out[i + 2], gb = out[i + 3];
    C[row] = c;
    W[row] = w;
    GA[row] = ga;
    GB[row] = gb;
    z += c * 0 + w * 0 + ga * 0 + gb * 0;
  }
  for (let g = 0; g < outI.length; g++) z += outI[g] * 0;
  scores.intensity.set(outI, chunk.groupStart);
  return z === 0;
}

function finishTimings(t0: number, upload: number, submittedAt: number, outputs: ChunkOutputs[]): GpuTimings {
  const now = performance.now();
  const lastMapped = outputs.reduce((m, o) => Math.max(m, o.mappedAt), submittedAt);
  const stamped = outputs.length > 0 && outputs.every((o) => o.kernelMs !== undefined);
  const wait = lastMapped - submittedAt;
  return {
    upload,
    kernels: stamped ? outputs.reduce((s, o) => s + (o.kernelMs ?? 0), 0) : wait,
    kernelsFrom: stamped ? 'timestamp-query' : 'wait',
    wait,
    readback: now - lastMapped,
    total: now - t0,
  };
}

function checkF16(ctx: GpuContext, f16: boolean | undefined): boolean {
  if (!f16) return false;
  if (!ctx.hasF16) throw new Error(`f16 embeddings need the WebGPU feature "shader-f16", which ${ctx.adapterName} does not offer`);
  return true;
}

function checkRow(f: PackedForest, row: number): number {
  if (!Number.isInteger(row) || row < 0 || row >= f.nodeCount) throw new RangeError(`row ${row} is not a row of this forest (0 … ${f.nodeCount - 1})`);
  return row;
}

function checkGroup(f: PackedForest, g: number): number {
  if (!Number.isInteger(g) || g < 0 || g >= f.groupCount) throw new RangeError(`group ${g} is not a group of this forest (0 … ${f.groupCount - 1})`);
  return g;
}

/**
 * α and τ as the f32 kernels see them. τ must be a normal f32 (a subnormal flushes to 0 and
 * (c − cmax)/τ becomes 0/0) and neither may overflow f32. α below the f32 range is harmless
 * (α·d ≪ ε either way) and is accepted.
 */
export function checkGpuParams(params: ScoreParams): ScoreParams {
  const { alpha, tau } = params;
  const bad = (name: string, value: number, range: string) =>
    new GpuParamRangeError(`${name} = ${value} is outside what the gpu backend's float32 kernels can use (${range}); use the cpu backend (backend auto does)`);
  if (!Number.isFinite(Math.fround(alpha))) throw bad('alpha', alpha, `alpha <= ${F32_MAX}`);
  if (tau < F32_MIN_NORMAL || !Number.isFinite(Math.fround(tau))) throw bad('tau', tau, `${F32_MIN_NORMAL} <= tau <= ${F32_MAX}`);
  return params;
}

const F32_MAX = 3.4028234663852886e38;
const F32_MIN_NORMAL = 2 ** -126;

/** Index of the first non-finite value of `a`, or -1 (O(n): `x − x` is 0 only for finite x). */
function firstNonFinite(a: ArrayLike<number>): number {
  for (let i = 0; i < a.length; i++) if (a[i] - a[i] !== 0) return i;
  return -1;
}

const FIELDS = ['contrast', 'weight', 'gradAlpha', 'gradTau'] as const;

function describeRow(forest: PackedForest, row: number): string {
  const tree = forest.nodeTree[row];
  return `tree ${JSON.stringify(forest.treeIds[tree])} (#${tree}), node ${row - forest.treeOffset[tree]}`;
}

function checkFinite(forest: PackedForest, rows: Int32Array, arrays: Float32Array[]): void {
  arrays.forEach((a, f) => {
    const i = firstNonFinite(a);
    if (i >= 0) throw new GpuNonFiniteError(`${FIELDS[f]} ${a[i]} at ${describeRow(forest, rows[i])}`);
  });
}

function checkFiniteIntensity(forest: PackedForest, groups: ArrayLike<number>, intensity: Float32Array): void {
  const i = firstNonFinite(intensity);
  if (i >= 0) throw new GpuNonFiniteError(`intensity ${intensity[i]} of the group of ${describeRow(forest, forest.groupParent[groups[i]])}`);
}

/** The safety net after every readback: scores must be finite, or the call fails. */
function checkScoresFinite(forest: PackedForest, scores: Scores): void {
  // Only called once scatterChunk saw a non-finite value; the fallback keeps the error generic.
  FIELDS.forEach((field) => {
    const i = firstNonFinite(scores[field]);
    if (i >= 0) throw new GpuNonFiniteError(`${field} ${scores[field][i]} at ${describeRow(forest, i)}`);
  });
  const g = firstNonFinite(scores.intensity);
  if (g >= 0) throw new GpuNonFiniteError(`intensity ${scores.intensity[g]} of the group of ${describeRow(forest, forest.groupParent[g])}`);
  throw new GpuNonFiniteError('a non-finite output');
}
