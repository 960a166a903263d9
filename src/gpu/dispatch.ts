import { splitsContrast, uncertaintyGateVisits, type ScoreParams } from '../score/types.js';
import type { GpuContext } from './context.js';
import { embStride, OUT_BYTES, WORK_BYTES, type WorkLists } from './layout.js';

/** The input buffers of one chunk, already on the device (bound whole: kernels read only the slots their work lists name). */
export interface ChunkInputs {
  f16: boolean;
  feat: GPUBuffer;
  emb: GPUBuffer;
}

export interface Pipelines {
  thread: GPUComputePipeline;
  workgroup: GPUComputePipeline;
  tiles: GPUComputePipeline;
  reduce: GPUComputePipeline;
  staged: GPUComputePipeline;
}

/** Raw outputs of one dispatch: `out` holds (C, w, gA, gB) per output slot, `outI` one intensity per listed group. */
export interface ChunkOutputs {
  out: Float32Array;
  outI: Float32Array;
  /** GPU time of the compute pass from timestamp queries, or undefined without them. */
  kernelMs: number | undefined;
  /** When the mapped results were available (performance.now()). */
  mappedAt: number;
}

/** One dispatch of a chunk: its pipeline, its work list and its workgroup count. */
interface Segment {
  pipeline: GPUComputePipeline;
  list: Uint32Array;
  /** Work entries (or bins) the kernel reads: P.count. */
  count: number;
  workgroups: number;
}

const UNIFORM_SLOT = 256; // minUniformBufferOffsetAlignment is at most 256
const SEGMENTS = 5;
/** The params blocks of one chunk's dispatches, filled per call and copied by writeBuffer at once (no per-call allocation). */
const paramsScratch = new ArrayBuffer(SEGMENTS * UNIFORM_SLOT);
const paramsF32 = new Float32Array(paramsScratch);
const paramsU32 = new Uint32Array(paramsScratch);
/** What each pooled work buffer last received: a chunk whose lists are the same object skips the upload. */
const workContents = new WeakMap<GPUBuffer, WorkLists>();

export async function loadPipelines(ctx: GpuContext, f16: boolean): Promise<Pipelines> {
  const [thread, workgroup, tiles, reduce, staged] = await Promise.all(
    (['score_thread', 'score_workgroup', 'score_tiles', 'score_reduce', 'score_staged'] as const).map((k) => ctx.pipeline(k, f16)),
  );
  return { thread, workgroup, tiles, reduce, staged };
}

/** Workgroup grid for `n` workgroups, folded into 2-D past the per-dimension limit. */
export function foldGrid(n: number, maxPerDim: number): [number, number] {
  if (n <= maxPerDim) return [n, 1];
  const x = maxPerDim;
  const y = Math.ceil(n / x);
  if (y > maxPerDim) throw new RangeError(`${n} workgroups exceed a ${maxPerDim}² grid`);
  return [x, y];
}

/** One chunk's scoring: its inputs on the device, the work lists of the groups to score, and how many output slots they fill. */
export interface ChunkJob {
  inputs: ChunkInputs;
  lists: WorkLists;
  outSlots: number;
  /** An object standing for this chunk across calls (`BufferPool.acquire`): its buffers, bind group and work lists are then reused. */
  affinity?: object;
}

/** Scores the listed groups of one chunk: `submitChunks` with one job. */
export function submitChunk(ctx: GpuContext, pipes: Pipelines, dim: number, job: ChunkJob, params: ScoreParams): Promise<ChunkOutputs> {
  return submitChunks(ctx, pipes, dim, [job], params)[0];
}

/** The pooled buffers and encoded state of one job between encoding and readback. */
interface Encoded {
  work: GPUBuffer;
  readback: GPUBuffer;
  /** The timestamp query set and its resolve buffer: the first job of a call only. */
  querySet?: GPUQuerySet;
  resolve?: GPUBuffer;
  release: () => void;
  outBytes: number;
  outIBytes: number;
  nGroups: number;
  tsBytes: number;
  readBytes: number;
}

/**
 * Encodes the scoring of every job (one chunk each) into one command buffer, submits it once,
 * synchronously (so a caller can queue the next chunk's upload while this runs), and returns a
 * promise of each job's outputs. Per job: the work lists go up only when the pooled work buffer
 * does not already hold them, all dispatch params in one write, and the bind group comes from
 * the context's cache. Every buffer besides the inputs comes from the pool and goes back to it,
 * so concurrent calls never share an output buffer.
 */
export function submitChunks(ctx: GpuContext, pipes: Pipelines, dim: number, jobs: readonly ChunkJob[], params: ScoreParams): Promise<ChunkOutputs>[] {
  if (jobs.length === 0) return [];
  const { device } = ctx;
  const encoded: Encoded[] = [];
  const submitted = ctx.guard('scoring a chunk', () => {
    const q = device.queue;
    // Every job's buffers, work lists and params first; then one pass with every job's
    // dispatches (timed as a whole, into the first job's readback), then each job's copies.
    const prepared = jobs.map((job, j) => prepareJob(ctx, pipes, dim, job, params, q, encoded, j === 0 && ctx.hasTimestamps));
    const enc = device.createCommandEncoder({ label: 'trace-score' });
    const querySet = encoded[0]?.querySet;
    const pass = enc.beginComputePass({ label: 'trace-score', timestampWrites: querySet ? { querySet, beginningOfPassWriteIndex: 0, endOfPassWriteIndex: 1 } : undefined });
    for (const d of prepared) {
      d.segments.forEach((seg, i) => {
        if (seg.list.length === 0) return;
        pass.setPipeline(seg.pipeline);
        pass.setBindGroup(0, d.group, [i * UNIFORM_SLOT]);
        pass.dispatchWorkgroups(d.grids[i][0], d.grids[i][1]);
      });
    }
    pass.end();
    encoded.forEach((e, j) => {
      const { out, outI } = prepared[j];
      if (e.outBytes > 0) enc.copyBufferToBuffer(out, 0, e.readback, 0, e.outBytes);
      enc.copyBufferToBuffer(outI, 0, e.readback, e.outBytes, e.outIBytes);
      if (e.resolve && e.querySet) {
        enc.resolveQuerySet(e.querySet, 0, 2, e.resolve, 0);
        enc.copyBufferToBuffer(e.resolve, 0, e.readback, e.outBytes + e.outIBytes, 16);
      }
    });
    q.submit([enc.finish()]);
    ctx.submits++;
    const maps = encoded.map((e) => {
      const mapped = e.readback.mapAsync(GPUMapMode.READ, 0, e.readBytes);
      mapped.catch(() => {}); // awaited below; a validation error is reported by the scope instead
      return mapped;
    });
    return { maps }; // boxed: an async guard must not adopt (and wait for) the maps themselves
  });
  // Each job's promise below reports a failure; what a failed call wrote to its work buffers is unknown.
  // Its bind groups (each names its work buffer) are dropped too, in case one was an error object.
  submitted.catch(() => {
    for (const e of encoded) {
      if (!e.work) continue;
      workContents.delete(e.work);
      ctx.bindGroups.forget(e.work);
    }
  });

  let settled = 0;
  const releaseAll = () => {
    // Once every job's promise has settled (or the encoding failed), the pooled buffers go back.
    if (!ctx.isLost) for (const e of encoded) e.release();
  };
  return jobs.map(async (_, j) => {
    try {
      const { maps } = await submitted;
      const e = encoded[j];
      await ctx.race(maps[j]);
      const mappedAt = performance.now();
      const { outBytes, outIBytes, nGroups, tsBytes, readBytes } = e;
      const bytes = e.readback.getMappedRange(0, readBytes);
      const result: ChunkOutputs = {
        out: new Float32Array(bytes.slice(0, outBytes)),
        outI: new Float32Array(bytes.slice(outBytes, outBytes + nGroups * 4)),
        // The pass of all jobs is timed once, in the first job's readback.
        kernelMs: ctx.hasTimestamps && j > 0 ? 0 : undefined,
        mappedAt,
      };
      if (tsBytes > 0) {
        const ts = new BigUint64Array(bytes.slice(outBytes + outIBytes, readBytes));
        if (ts[1] >= ts[0]) result.kernelMs = Number(ts[1] - ts[0]) / 1e6;
      }
      e.readback.unmap();
      return result;
    } finally {
      if (++settled === jobs.length) releaseAll();
    }
  });
}

/** One job's state for encoding: its dispatches, their grids, its bind group and output buffers. */
interface PreparedJob {
  segments: Segment[];
  grids: [number, number][];
  group: GPUBindGroup;
  out: GPUBuffer;
  outI: GPUBuffer;
}

/**
 * Acquires one job's buffers (adding them to `into` at once, so they go back to the pool
 * whatever fails later) and writes its work lists (unless already there) and params; with
 * `timed`, also a query set for the call's pass.
 */
function prepareJob(ctx: GpuContext, pipes: Pipelines, dim: number, job: ChunkJob, params: ScoreParams, q: GPUQueue, into: Encoded[], timed: boolean): PreparedJob {
  const { pool } = ctx;
  const { inputs, lists, outSlots } = job;
  // The dispatches of one chunk, in order: small groups (several per workgroup, or a lane
  // each), mid-sized groups (a workgroup each), then the pair tiles of the largest groups and
  // their reduction (which reads what the tiles wrote: WebGPU orders dispatches of a pass).
  const segments: Segment[] = [
    { pipeline: pipes.staged, list: lists.staged, count: lists.bins, workgroups: lists.bins },
    { pipeline: pipes.thread, list: lists.thread, count: lists.thread.length / 4, workgroups: Math.ceil(lists.thread.length / 4 / ctx.workgroupSize('score_thread')) },
    { pipeline: pipes.workgroup, list: lists.workgroup, count: lists.workgroup.length / 4, workgroups: lists.workgroup.length / 4 },
    { pipeline: pipes.tiles, list: lists.tiles, count: lists.tiles.length / 8, workgroups: lists.tiles.length / 8 },
    { pipeline: pipes.reduce, list: lists.reduce, count: lists.reduce.length / 8, workgroups: lists.reduce.length / 8 },
  ];
  const nGroups = (lists.thread.length + lists.workgroup.length + lists.staged.length) / 4 - lists.bins + lists.reduce.length / 8;
  const outBytes = outSlots * OUT_BYTES;
  const outBufferBytes = Math.max(OUT_BYTES, (outSlots + lists.partialSlots) * OUT_BYTES);
  const outIBytes = Math.max(4, nGroups * 4);
  // Segments lie back to back in one work buffer; each dispatch finds its own at `workBase`.
  const bases: number[] = [];
  let workEntries = 0;
  for (const seg of segments) {
    bases.push(workEntries);
    workEntries += seg.list.length / 4;
  }
  const workBytes = Math.max(WORK_BYTES, workEntries * WORK_BYTES);
  const tsBytes = timed ? 16 : 0;
  const readBytes = outBytes + outIBytes + tsBytes;

  const S = GPUBufferUsage;
  const held: GPUBuffer[] = [];
  const acquire = (size: number, usage: number, label: string) => {
    const b = pool.acquire(size, usage, label, job.affinity);
    held.push(b);
    return b;
  };
  // Listed before the first acquire; `work` and `readback` are set just below.
  const e = { outBytes, outIBytes, nGroups, tsBytes, readBytes } as Encoded;
  e.release = () => {
    for (const b of held) pool.release(b);
    if (e.querySet) ctx.releaseQuerySet(e.querySet);
  };
  into.push(e);
  const work = (e.work = acquire(workBytes, S.STORAGE | S.COPY_DST, 'work'));
  e.readback = acquire(readBytes, S.MAP_READ | S.COPY_DST, 'readback');
  const uniforms = acquire(SEGMENTS * UNIFORM_SLOT, S.UNIFORM | S.COPY_DST, 'params');
  const out = acquire(outBufferBytes, S.STORAGE | S.COPY_SRC, 'out');
  const outI = acquire(outIBytes, S.STORAGE | S.COPY_SRC, 'outI');
  if (timed) {
    e.resolve = acquire(16, S.QUERY_RESOLVE | S.COPY_SRC, 'timestamps');
    e.querySet = ctx.acquireQuerySet();
  }

  if (workContents.get(work) === lists) {
    ctx.workListsReused++;
  } else {
    workContents.delete(work); // until the writes below are queued
    segments.forEach((seg, i) => { if (seg.list.length > 0) q.writeBuffer(work, bases[i] * WORK_BYTES, seg.list); });
    workContents.set(work, lists);
    ctx.workListsWritten++;
  }
  const stride = embStride(dim, inputs.f16);
  const grids = segments.map((seg) => foldGrid(seg.workgroups, ctx.maxWorkgroupsPerDim));
  segments.forEach((seg, i) => writeParams(i * UNIFORM_SLOT, params, seg.count, dim, stride, grids[i][0], bases[i]));
  q.writeBuffer(uniforms, 0, paramsScratch);
  return { segments, grids, group: ctx.bindGroups.get(uniforms, inputs.feat, inputs.emb, work, out, outI), out, outI };
}

/** Queues an upload of inputs and a copy back of an output-sized buffer: the transfer floor. */
export function submitTransferOnly(ctx: GpuContext, outBytes: number): Promise<number> {
  const S = GPUBufferUsage;
  const out = ctx.pool.acquire(Math.max(4, outBytes), S.STORAGE | S.COPY_SRC, 'out');
  const readback = ctx.pool.acquire(Math.max(4, outBytes), S.MAP_READ | S.COPY_DST, 'readback');
  const submitted = ctx.guard('reading back', () => {
    const enc = ctx.device.createCommandEncoder();
    enc.copyBufferToBuffer(out, 0, readback, 0, Math.max(4, outBytes));
    ctx.device.queue.submit([enc.finish()]);
    const mapped = readback.mapAsync(GPUMapMode.READ);
    mapped.catch(() => {});
    return { mapped };
  });
  return (async () => {
    try {
      await ctx.race((await submitted).mapped);
      const copy = new Float32Array(readback.getMappedRange().slice(0, Math.max(4, outBytes)));
      readback.unmap();
      return copy.length;
    } finally {
      if (!ctx.isLost) {
        ctx.pool.release(out);
        ctx.pool.release(readback);
      }
    }
  })();
}

/** Fills one dispatch's params block (common.wgsl `Params`) at `at` bytes of the scratch. */
function writeParams(at: number, params: ScoreParams, count: number, dim: number, stride: number, gridX: number, workBase: number): void {
  const i = at / 4, f = paramsF32, u = paramsU32;
  f[i] = params.alpha;
  f[i + 1] = params.tau;
  u[i + 2] = count;
  u[i + 3] = dim;
  u[i + 4] = Math.max(1, gridX);
  u[i + 5] = stride;
  u[i + 6] = kernelRuleOf(params);
  u[i + 7] = workBase;
}

/** common.wgsl's `P.rule`: 0 v1 (a pair's response counts fully for both), 1 split by uncertainty (v2, v3), 2 split and v4's uncertainty gate, 3 split and v5's. */
function kernelRuleOf(params: ScoreParams): number {
  const gateVisits = uncertaintyGateVisits(params);
  if (gateVisits === 1) return 2;
  if (gateVisits === 2) return 3;
  return splitsContrast(params) ? 1 : 0;
}
