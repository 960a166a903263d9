import { GpuContext } from '../gpu/context.js';
import { loadPipelines, submitChunks, type ChunkJob, type Pipelines } from '../gpu/dispatch.js';
import { GpuNonFiniteError, isCpuFallbackError } from '../gpu/errors.js';
import { embBytesPerSlot, FEAT_BYTES, FEAT_FLOATS, MAX_COLUMN_STRIPS, OUT_BYTES, packGroupFeatures, planWork, resolveRoute, writeF32Row } from '../gpu/layout.js';
import { checkGpuParams } from '../gpu/resident.js';
import type { ScoreParams } from '../score/types.js';
import { CpuLiveBackend, type LiveBackend } from './backend.js';
import type { LiveStore } from './store.js';

export interface GpuLiveOptions {
  /** Share a context with other GPU work; it is then not destroyed with the backend. */
  context?: GpuContext;
  /** Cap on one device chunk (default: the adapter's storage binding limit); tests use small ones. */
  maxChunkBytes?: number;
  /** Slots a chunk starts with before it grows (default 4096). */
  initialSlots?: number;
}

/** What the backend moved, for tests and the latency benchmark. */
export interface GpuLiveStats {
  /** Bytes written to the device (features, embeddings) since creation. */
  uploadedBytes: number;
  /** Bytes copied device-to-device when a chunk grew. */
  grownBytes: number;
  /** Bytes read back (scores of the re-scored groups). */
  readBackBytes: number;
  /** Dispatch calls (one per chunk with dirty groups, per rescore). */
  dispatches: number;
  chunks: number;
  /** Slots of device capacity, over all chunks. */
  deviceSlots: number;
}

interface DeviceChunk {
  feat: GPUBuffer;
  emb: GPUBuffer;
  /** Host copy of `feat` (slot-major records), so a write of nearby records can span the slots between them. */
  featHost: Float32Array;
  /** Slots the buffers hold. */
  cap: number;
  /** Stands for this chunk across calls and growth (`BufferPool.acquire`): its dispatch buffers and bind group are reused. */
  key: object;
}

/** Under `backend: 'auto'` (set by `createLiveForest`): hand the forest to the CPU after a fallback error. */
export interface GpuLiveRecovery {
  onNotice?: (message: string) => void;
  /** Threads of the CPU backend the forest is handed to (default: available parallelism). */
  cpuThreads?: number;
}

/**
 * The live forest on the device. The device copy mirrors the store in *slot* order (slot q
 * holds the features and embedding of row `child[q]`), so every sibling group is a
 * contiguous slot range and a dispatch over a list of groups is exactly what the WGSL kernels
 * of `src/gpu` run. Slots are cut into fixed chunks of one storage binding each; the store
 * never lets a tree's slab cross a chunk boundary. Each chunk's buffers start small and
 * double (device-side copy) as trees arrive, so appends land in spare capacity.
 *
 * Before each rescore only what changed is sent: whole slabs for trees that arrived, grew or
 * moved, and the feature records of the groups that got feedback (embeddings never change in
 * place). Features are packed as in `src/gpu` (docs/GPU.md): per group (`packGroupFeatures`:
 * the reference and the v2 share scale are per group), so a feedback update re-sends its whole group; embedding rows outside [2^-63, 2^65) are scaled by a power of two (`writeF32Row`).
 * Only the re-scored groups' outputs are read back, and they must be finite.
 *
 * Errors the f32 kernels cannot avoid (`isCpuFallbackError`: a group's values out of range,
 * α/τ outside f32, a non-finite output) fail the call under `backend: 'gpu'`; under `auto` the
 * backend hands the forest to the CPU for good, with every group re-scored there, as a lost
 * device does (`kind` then reads 'cpu').
 */
export class GpuLiveBackend implements LiveBackend {
  readonly stats: GpuLiveStats = { uploadedBytes: 0, grownBytes: 0, readBackBytes: 0, dispatches: 0, chunks: 0, deviceSlots: 0 };
  private store: LiveStore | undefined;
  private chunkSlots = 0;
  private readonly chunks: DeviceChunk[] = [];
  private pipes: Pipelines | undefined;
  private destroyed = false;
  /** Set once the forest was handed to the CPU (auto only). */
  private cpu: CpuLiveBackend | undefined;
  /** Per parent row, the sync that last re-packed its group (dedupes feedback slots without a Set). */
  private mark = new Uint32Array(0);
  private epoch = 0;

  private constructor(readonly context: GpuContext, private readonly owned: boolean, private readonly options: GpuLiveOptions, private readonly recovery: GpuLiveRecovery | undefined) {}

  /** `recovery`: present under `backend: 'auto'` (see the class comment). */
  static async create(options: GpuLiveOptions = {}, recovery?: GpuLiveRecovery): Promise<GpuLiveBackend> {
    const context = options.context ?? (await GpuContext.create());
    return new GpuLiveBackend(context, options.context === undefined, options, recovery);
  }

  /** A backend that owns `context` (created by the caller for it) and destroys it with itself. */
  static adopt(context: GpuContext, options: GpuLiveOptions = {}, recovery?: GpuLiveRecovery): GpuLiveBackend {
    return new GpuLiveBackend(context, true, options, recovery);
  }

  get kind(): 'cpu' | 'gpu' { return this.cpu === undefined ? 'gpu' : 'cpu'; }

  attach(store: LiveStore): void {
    this.store = store;
    // A dispatch's out buffer holds a chunk's outputs plus the partial sums of tiled groups.
    const perSlot = Math.max(embBytesPerSlot(store.dim, false), FEAT_BYTES, OUT_BYTES * (1 + MAX_COLUMN_STRIPS));
    const maxBytes = Math.min(this.context.maxBinding, this.options.maxChunkBytes ?? Infinity);
    this.chunkSlots = 2 ** Math.floor(Math.log2(Math.max(1, Math.floor(maxBytes / perSlot))));
    store.setSlabBoundary(this.chunkSlots);
    store.trackChanges = true;
  }

  /** Slots per device chunk (a power of two). */
  get slotsPerChunk(): number { return this.chunkSlots; }

  async score(store: LiveStore, params: ScoreParams, parents: Int32Array, count: number): Promise<void> {
    if (this.cpu !== undefined) return this.cpu.score(store, params, parents, count);
    try {
      await this.scoreOnDevice(store, params, parents, count);
    } catch (err) {
      if (this.recovery === undefined || !isCpuFallbackError(err)) throw err;
      await this.handToCpu(store, params, err);
    }
  }

  /**
   * What the live forest does on a lost device, for the errors after which `auto` scores on
   * the CPU: the device copy is dropped and every group is re-scored on the CPU now (their
   * trees then re-plan from scratch), so no score keeps f32 rounding from the device.
   */
  private async handToCpu(store: LiveStore, params: ScoreParams, err: Error): Promise<void> {
    this.releaseDevice();
    const cpu = new CpuLiveBackend(this.recovery?.cpuThreads === undefined ? {} : { threads: this.recovery.cpuThreads });
    this.cpu = cpu;
    store.trackChanges = false;
    store.changedSpans = [];
    store.changedSlots = [];
    cpu.attach(store);
    this.recovery?.onNotice?.(`live forest: ${err.message}; re-scoring on the cpu from now on`);
    store.markAllDirty();
    const all: number[] = [];
    for (const p of store.dirtyGroups) {
      if (!store.dirty[p]) continue;
      store.dirty[p] = 0;
      if (store.rowTree[p] >= 0 && store.childCount[p] > 0) all.push(p);
    }
    store.dirtyGroups = [];
    await cpu.score(store, params, Int32Array.from(all), all.length);
  }

  private async scoreOnDevice(store: LiveStore, params: ScoreParams, parents: Int32Array, count: number): Promise<void> {
    if (this.destroyed) throw new Error('this GPU live backend was destroyed');
    checkGpuParams(params);
    this.pipes ??= await loadPipelines(this.context, false);
    await this.context.guard('syncing the live forest to the device', () => this.sync(store));

    // Work lists per chunk: (first chunk-local slot, k, first output slot, output index).
    const CS = this.chunkSlots;
    const perChunk = new Map<number, number[]>();
    for (let i = 0; i < count; i++) {
      const p = parents[i];
      const c = Math.floor(store.childStart[p] / CS);
      let list = perChunk.get(c);
      if (list === undefined) { list = []; perChunk.set(c, list); }
      list.push(p);
    }
    const runs: { groups: number[]; outStart: Int32Array; outSlots: number }[] = [];
    const jobs: ChunkJob[] = [];
    for (const [c, groups] of perChunk) {
      const { lists, outSlots: o, outStart } = planWork(groups.length, (i) => store.childStart[groups[i]] - c * CS, (i) => store.childCount[groups[i]], resolveRoute('auto', this.context.cpuEmulated), store.dim);
      const chunk = this.chunks[c];
      const inputs = { f16: false, feat: chunk.feat, emb: chunk.emb };
      runs.push({ groups, outStart, outSlots: o });
      jobs.push({ inputs, lists, outSlots: o, affinity: chunk.key });
      this.stats.dispatches++;
    }
    // Every dirty chunk's dispatches in one submission.
    const outputs = await Promise.all(submitChunks(this.context, this.pipes, store.dim, jobs, params));

    // The safety net before anything reaches the store: `x·0` is NaN exactly for NaN and ±∞.
    runs.forEach((run, r) => {
      const { out, outI } = outputs[r];
      this.stats.readBackBytes += out.byteLength + outI.byteLength;
      let z = 0;
      for (let i = 0, n = 4 * run.outSlots; i < n; i++) z += out[i] * 0;
      for (let i = 0; i < run.groups.length; i++) z += outI[i] * 0;
      if (z !== 0) throw new GpuNonFiniteError(describeNonFinite(store, run.groups, run.outStart, out, outI));
    });

    const { child, childStart, childCount, contrast, weight, gradAlpha, gradTau, intensity } = store;
    runs.forEach((run, r) => {
      const { out, outI } = outputs[r];
      run.groups.forEach((p, i) => {
        const first = childStart[p];
        for (let j = 0, at = 4 * run.outStart[i]; j < childCount[p]; j++, at += 4) {
          const row = child[first + j];
          contrast[row] = out[at];
          weight[row] = out[at + 1];
          gradAlpha[row] = out[at + 2];
          gradTau[row] = out[at + 3];
        }
        intensity[p] = outI[i];
      });
    });
  }

  /** Grows chunk buffers to cover every slab, then sends what changed since the last sync. */
  private sync(store: LiveStore): void {
    const CS = this.chunkSlots;
    const used = store.usedRows;
    for (let c = 0; c * CS < used; c++) this.ensureChunk(c, Math.min(CS, used - c * CS), store.dim);

    // Everything is packed into the host copies before anything is written, so a group out of
    // range (GpuInputRangeError) leaves the change lists in place for the next call.
    const spans = store.changedSpans;
    for (let i = 0; i < spans.length; i += 2) this.packSpan(store, spans[i], spans[i + 1]);
    const slots = store.changedSlots;
    // Feedback: re-pack each touched group whole (its reference may have moved). A slot whose
    // row left its group since (tree removed or moved) is skipped: a span covers the move.
    let starts = new Int32Array(0), n = 0;
    if (slots.length > 0) {
      const { child, parentRow, rowTree, childStart, childCount } = store;
      if (this.mark.length < store.capacity) this.mark = new Uint32Array(store.capacity);
      const mark = this.mark, epoch = ++this.epoch;
      starts = new Int32Array(slots.length);
      for (const q of slots) {
        const p = parentRow[child[q]];
        if (p < 0 || mark[p] === epoch || rowTree[p] < 0) continue;
        const s0 = childStart[p];
        if (q < s0 || q >= s0 + childCount[p]) continue;
        mark[p] = epoch;
        this.packGroup(store, p);
        starts[n++] = s0;
      }
    }

    for (let i = 0; i < spans.length; i += 2) this.upload(store, spans[i], spans[i + 1], true);
    if (n > 0) {
      // Nearby groups go up as one write (the host copy holds the slots between them): fewer
      // queue calls for a few re-sent groups.
      const { child, parentRow, childCount } = store;
      const sorted = starts.subarray(0, n).sort();
      const end = (s0: number) => s0 + childCount[parentRow[child[s0]]];
      let a = sorted[0], b = end(a);
      for (let i = 1; i <= n; i++) {
        const q = i < n ? sorted[i] : Infinity;
        if (q - b <= 16 && Math.floor(q / CS) === Math.floor(a / CS)) { b = Math.max(b, end(q)); continue; }
        this.upload(store, a, b, false);
        if (i < n) { a = q; b = end(q); }
      }
    }
    store.changedSpans = [];
    store.changedSlots = [];
  }

  /** Packs the feature records of every group whose parent row lies in the slab `[lo, hi)`. */
  private packSpan(store: LiveStore, lo: number, hi: number): void {
    hi = Math.min(hi, store.usedRows);
    const { rowTree, childCount } = store;
    for (let p = lo; p < hi; p++) if (rowTree[p] >= 0 && childCount[p] > 0) this.packGroup(store, p);
  }

  /**
   * Writes the k feature records of the group of parent row `p` into its chunk's host copy
   * with the packer of `writeGroupFeatures` in src/gpu/layout.ts (exact f32 triples; relative
   * to the group's midpoint only for values beyond `GPU_FEATURE_LIMIT`). Throws
   * `GpuInputRangeError` when a group cannot be stored exactly.
   */
  private packGroup(store: LiveStore, p: number): void {
    const s0 = store.childStart[p], s1 = s0 + store.childCount[p];
    const CS = this.chunkSlots;
    const c = Math.floor(s0 / CS);
    packGroupFeatures(store.child, s0, s1, store, this.chunks[c].featHost, (s0 - c * CS) * FEAT_FLOATS, (field) => {
      const slot = store.rowTree[p];
      return store.at(slot, p - store.slotStart[slot], field);
    });
  }

  /** Writes the slots `[lo, hi)` (one chunk) from the host copy, and with `withEmbeddings` their rows. */
  private upload(store: LiveStore, lo: number, hi: number, withEmbeddings: boolean): void {
    const CS = this.chunkSlots;
    const c = Math.floor(lo / CS);
    hi = Math.min(hi, (c + 1) * CS, store.usedRows);
    if (hi <= lo) return;
    const chunk = this.chunks[c];
    const base = lo - c * CS;
    const queue = this.context.device.queue;
    queue.writeBuffer(chunk.feat, base * FEAT_BYTES, chunk.featHost, base * FEAT_FLOATS, (hi - lo) * FEAT_FLOATS);
    this.stats.uploadedBytes += (hi - lo) * FEAT_BYTES;
    const { child, embedding, dim } = store;
    if (!withEmbeddings || dim === 0) return;
    const emb = new Float32Array((hi - lo) * dim);
    // Rows whose magnitude leaves [2^-63, 2^65) are scaled by a power of two (f32 subnormals
    // flush on GPUs; cosine similarity does not see the scale).
    for (let q = lo; q < hi; q++) writeF32Row(emb, (q - lo) * dim, embedding, child[q] * dim, dim);
    queue.writeBuffer(chunk.emb, base * dim * 4, emb);
    this.stats.uploadedBytes += emb.byteLength;
  }

  /** Makes chunk `c` hold at least `slots` slots, doubling its buffers with a device-side copy. */
  private ensureChunk(c: number, slots: number, dim: number): void {
    const old = this.chunks[c];
    if (old !== undefined && old.cap >= slots) return;
    let cap = Math.max(old?.cap ?? Math.min(this.chunkSlots, this.options.initialSlots ?? 4096), 1);
    while (cap < slots) cap *= 2;
    cap = Math.min(cap, this.chunkSlots);
    const S = GPUBufferUsage;
    const device = this.context.device;
    const feat = device.createBuffer({ label: `live-feat-${c}`, size: cap * FEAT_BYTES, usage: S.STORAGE | S.COPY_DST | S.COPY_SRC });
    const emb = device.createBuffer({ label: `live-emb-${c}`, size: Math.max(4, cap * dim * 4), usage: S.STORAGE | S.COPY_DST | S.COPY_SRC });
    const featHost = new Float32Array(cap * FEAT_FLOATS);
    if (old !== undefined) {
      const enc = device.createCommandEncoder({ label: 'live-grow' });
      enc.copyBufferToBuffer(old.feat, 0, feat, 0, old.feat.size);
      enc.copyBufferToBuffer(old.emb, 0, emb, 0, old.emb.size);
      device.queue.submit([enc.finish()]);
      featHost.set(old.featHost);
      this.stats.grownBytes += old.feat.size + old.emb.size;
      this.context.bindGroups.forget(old.feat);
      this.context.bindGroups.forget(old.emb);
      old.feat.destroy(); // after the copy that reads them completes
      old.emb.destroy();
      this.stats.deviceSlots -= old.cap;
    } else {
      this.stats.chunks++;
    }
    this.chunks[c] = { feat, emb, featHost, cap, key: old?.key ?? {} };
    this.stats.deviceSlots += cap;
  }

  private releaseDevice(): void {
    if (!this.context.isLost) {
      for (const c of this.chunks) {
        this.context.bindGroups.forget(c.feat);
        this.context.bindGroups.forget(c.emb);
        c.feat.destroy();
        c.emb.destroy();
      }
    }
    this.chunks.length = 0;
    if (this.owned) this.context.destroy();
  }

  destroy(): void {
    if (this.destroyed) return;
    this.destroyed = true;
    if (this.cpu !== undefined) { this.cpu.destroy(); return; }
    this.releaseDevice();
  }
}


const FIELDS = ['contrast', 'weight', 'gradAlpha', 'gradTau'] as const;

/** Names the first non-finite output of a run (only called once one was seen). */
function describeNonFinite(store: LiveStore, groups: number[], outStart: Int32Array, out: Float32Array, outI: Float32Array): string {
  const where = (p: number, node?: number) => {
    const slot = store.rowTree[p];
    const v = node ?? p;
    return `tree ${JSON.stringify(store.slotId[slot])}, node ${v - store.slotStart[slot]}`;
  };
  for (let i = 0; i < groups.length; i++) {
    const p = groups[i];
    for (let j = 0; j < store.childCount[p]; j++) {
      for (let f = 0; f < 4; f++) {
        const x = out[4 * (outStart[i] + j) + f];
        if (x - x !== 0) return `${FIELDS[f]} ${x} at ${where(p, store.child[store.childStart[p] + j])}`;
      }
    }
    if (outI[i] - outI[i] !== 0) return `intensity ${outI[i]} of the group of ${where(p)}`;
  }
  return 'a non-finite output';
}
