import { GpuContext } from '../gpu/context.js';
import { loadPipelines, submitChunk, type ChunkOutputs, type Pipelines } from '../gpu/dispatch.js';
import { embBytesPerSlot, FEAT_BYTES, FEAT_FLOATS, OUT_BYTES, routeToThread, writeFeature } from '../gpu/layout.js';
import type { ScoreParams } from '../score/types.js';
import type { LiveBackend } from './backend.js';
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
  /** Slots the buffers hold. */
  cap: number;
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
 * moved, and single feature records for feedback updates (embeddings never change in place).
 * Only the re-scored groups' outputs are read back.
 */
export class GpuLiveBackend implements LiveBackend {
  readonly kind = 'gpu' as const;
  readonly stats: GpuLiveStats = { uploadedBytes: 0, grownBytes: 0, readBackBytes: 0, dispatches: 0, chunks: 0, deviceSlots: 0 };
  private store: LiveStore | undefined;
  private chunkSlots = 0;
  private readonly chunks: DeviceChunk[] = [];
  private pipes: Pipelines | undefined;
  private destroyed = false;

  private constructor(readonly context: GpuContext, private readonly owned: boolean, private readonly options: GpuLiveOptions) {}

  static async create(options: GpuLiveOptions = {}): Promise<GpuLiveBackend> {
    const context = options.context ?? (await GpuContext.create());
    return new GpuLiveBackend(context, options.context === undefined, options);
  }

  attach(store: LiveStore): void {
    this.store = store;
    const perSlot = Math.max(embBytesPerSlot(store.dim, false), FEAT_BYTES, OUT_BYTES);
    const maxBytes = Math.min(this.context.maxBinding, this.options.maxChunkBytes ?? Infinity);
    this.chunkSlots = 2 ** Math.floor(Math.log2(Math.max(1, Math.floor(maxBytes / perSlot))));
    store.setSlabBoundary(this.chunkSlots);
    store.trackChanges = true;
  }

  /** Slots per device chunk (a power of two). */
  get slotsPerChunk(): number { return this.chunkSlots; }

  async score(store: LiveStore, params: ScoreParams, parents: Int32Array, count: number): Promise<void> {
    if (this.destroyed) throw new Error('this GPU live backend was destroyed');
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
    const runs: { groups: number[]; outStart: Int32Array; pending: Promise<ChunkOutputs> }[] = [];
    for (const [c, groups] of perChunk) {
      let nThread = 0;
      for (const p of groups) if (routeToThread(store.childCount[p], 'auto', store.dim)) nThread++;
      const thread = new Uint32Array(nThread * 4), workgroup = new Uint32Array((groups.length - nThread) * 4);
      const outStart = new Int32Array(groups.length);
      let o = 0, t = 0, w = 0;
      groups.forEach((p, i) => {
        const k = store.childCount[p];
        const toThread = routeToThread(k, 'auto', store.dim);
        const list = toThread ? thread : workgroup;
        const at = toThread ? t++ * 4 : w++ * 4;
        list[at] = store.childStart[p] - c * CS;
        list[at + 1] = k;
        list[at + 2] = o;
        list[at + 3] = i;
        outStart[i] = o;
        o += k;
      });
      const chunk = this.chunks[c];
      const inputs = { f16: false, feat: chunk.feat, featBytes: chunk.cap * FEAT_BYTES, emb: chunk.emb, embBytes: chunk.emb.size };
      runs.push({ groups, outStart, pending: submitChunk(this.context, this.pipes, inputs, store.dim, { thread, workgroup }, o, params) });
      this.stats.dispatches++;
    }
    const outputs = await Promise.all(runs.map((r) => r.pending));

    const { child, childStart, childCount, contrast, weight, gradAlpha, gradTau, intensity } = store;
    runs.forEach((run, r) => {
      const { out, outI } = outputs[r];
      this.stats.readBackBytes += out.byteLength + outI.byteLength;
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

    const spans = store.changedSpans;
    for (let i = 0; i < spans.length; i += 2) this.upload(store, spans[i], spans[i + 1], true);
    const slots = store.changedSlots;
    if (slots.length > 0) {
      // Nearby single records go up as one write: fewer queue calls for a few re-sent records.
      const sorted = Int32Array.from(slots).sort();
      let a = sorted[0], b = a;
      for (let i = 1; i <= sorted.length; i++) {
        const q = i < sorted.length ? sorted[i] : Infinity;
        if (q - b <= 16 && Math.floor(q / CS) === Math.floor(a / CS)) { b = q; continue; }
        this.upload(store, a, b + 1, false);
        a = b = q;
      }
    }
    store.changedSpans = [];
    store.changedSlots = [];
  }

  private upload(store: LiveStore, lo: number, hi: number, withEmbeddings: boolean): void {
    const CS = this.chunkSlots;
    const c = Math.floor(lo / CS);
    hi = Math.min(hi, (c + 1) * CS, store.usedRows);
    if (hi <= lo) return;
    const chunk = this.chunks[c];
    const base = lo - c * CS;
    const { child, reward, uncertainty, visits, embedding, dim } = store;
    const feat = new Float32Array((hi - lo) * FEAT_FLOATS);
    for (let q = lo; q < hi; q++) {
      const row = child[q];
      writeFeature(feat, (q - lo) * FEAT_FLOATS, reward[row], uncertainty[row], visits[row]);
    }
    const queue = this.context.device.queue;
    queue.writeBuffer(chunk.feat, base * FEAT_BYTES, feat);
    this.stats.uploadedBytes += feat.byteLength;
    if (!withEmbeddings || dim === 0) return;
    const emb = new Float32Array((hi - lo) * dim);
    for (let q = lo; q < hi; q++) {
      const r = child[q] * dim;
      emb.set(embedding.subarray(r, r + dim), (q - lo) * dim);
    }
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
    if (old !== undefined) {
      const enc = device.createCommandEncoder({ label: 'live-grow' });
      enc.copyBufferToBuffer(old.feat, 0, feat, 0, old.feat.size);
      enc.copyBufferToBuffer(old.emb, 0, emb, 0, old.emb.size);
      device.queue.submit([enc.finish()]);
      this.stats.grownBytes += old.feat.size + old.emb.size;
      old.feat.destroy(); // after the copy that reads them completes
      old.emb.destroy();
      this.stats.deviceSlots -= old.cap;
    } else {
      this.stats.chunks++;
    }
    this.chunks[c] = { feat, emb, cap };
    this.stats.deviceSlots += cap;
  }

  destroy(): void {
    if (this.destroyed) return;
    this.destroyed = true;
    if (!this.context.isLost) for (const c of this.chunks) { c.feat.destroy(); c.emb.destroy(); }
    this.chunks.length = 0;
    if (this.owned) this.context.destroy();
  }
}
