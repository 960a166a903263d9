import { splitsContrast, type ScoreParams } from '../score/types.js';
import type { GpuContext } from './context.js';
import { embStride, OUT_BYTES, WORK_BYTES, type WorkLists } from './layout.js';

/** The input buffers of one chunk, already on the device. */
export interface ChunkInputs {
  f16: boolean;
  feat: GPUBuffer;
  featBytes: number;
  emb: GPUBuffer;
  embBytes: number;
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

const PARAMS_BYTES = 32;
const UNIFORM_SLOT = 256; // minUniformBufferOffsetAlignment is at most 256

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

/**
 * Encodes and submits the scoring of the listed groups of one chunk, synchronously (so the
 * caller can queue the next chunk's upload while this one runs), and returns a promise of
 * its outputs. Every buffer it touches besides the inputs comes from the pool and goes back
 * to it, so concurrent calls never share an output buffer.
 */
export function submitChunk(
  ctx: GpuContext,
  pipes: Pipelines,
  inputs: ChunkInputs,
  dim: number,
  lists: WorkLists,
  outSlots: number,
  params: ScoreParams,
): Promise<ChunkOutputs> {
  const { device, pool } = ctx;
  // The dispatches of one chunk, in order: small groups (a lane each), mid-sized groups (a
  // workgroup each), then the pair tiles of the largest groups and their reduction (which
  // reads what the tiles wrote: WebGPU orders dispatches of a pass).
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
  const offsets: number[] = [];
  let workBytes = 0;
  for (const seg of segments) {
    offsets.push(workBytes);
    workBytes += Math.ceil(Math.max(WORK_BYTES, seg.list.byteLength) / ctx.minStorageOffset) * ctx.minStorageOffset;
  }
  const tsBytes = ctx.hasTimestamps ? 16 : 0;
  const readBytes = outBytes + outIBytes + tsBytes;

  const S = GPUBufferUsage;
  const work = pool.acquire(workBytes, S.STORAGE | S.COPY_DST, 'work');
  const uniforms = pool.acquire(segments.length * UNIFORM_SLOT, S.UNIFORM | S.COPY_DST, 'params');
  const out = pool.acquire(outBufferBytes, S.STORAGE | S.COPY_SRC, 'out');
  const outI = pool.acquire(outIBytes, S.STORAGE | S.COPY_SRC, 'outI');
  const readback = pool.acquire(readBytes, S.MAP_READ | S.COPY_DST, 'readback');
  const resolve = ctx.hasTimestamps ? pool.acquire(16, S.QUERY_RESOLVE | S.COPY_SRC, 'timestamps') : undefined;
  let querySet: GPUQuerySet | undefined;
  const release = () => {
    for (const b of [work, uniforms, out, outI, readback]) pool.release(b);
    if (resolve) pool.release(resolve);
    if (querySet) ctx.releaseQuerySet(querySet);
  };

  const submitted = ctx.guard('scoring a chunk', () => {
    const q = device.queue;
    const stride = embStride(dim, inputs.f16);
    const grids = segments.map((seg) => foldGrid(seg.workgroups, ctx.maxWorkgroupsPerDim));
    segments.forEach((seg, i) => {
      if (seg.list.length > 0) q.writeBuffer(work, offsets[i], seg.list);
      q.writeBuffer(uniforms, i * UNIFORM_SLOT, paramsBlock(params, seg.count, dim, stride, grids[i][0]));
    });

    const bind = (slot: number, offset: number, size: number) =>
      device.createBindGroup({
        layout: ctx.layout,
        entries: [
          { binding: 0, resource: { buffer: uniforms, offset: slot * UNIFORM_SLOT, size: PARAMS_BYTES } },
          { binding: 1, resource: { buffer: inputs.feat, size: inputs.featBytes } },
          { binding: 2, resource: { buffer: inputs.emb, size: inputs.embBytes } },
          { binding: 3, resource: { buffer: work, offset, size } },
          { binding: 4, resource: { buffer: out, size: outBufferBytes } },
          { binding: 5, resource: { buffer: outI, size: outIBytes } },
        ],
      });

    const enc = device.createCommandEncoder({ label: 'trace-score' });
    let timestampWrites: GPUComputePassTimestampWrites | undefined;
    if (resolve) {
      querySet = ctx.acquireQuerySet();
      timestampWrites = { querySet, beginningOfPassWriteIndex: 0, endOfPassWriteIndex: 1 };
    }
    const pass = enc.beginComputePass({ label: 'trace-score', timestampWrites });
    segments.forEach((seg, i) => {
      if (seg.list.length === 0) return;
      pass.setPipeline(seg.pipeline);
      pass.setBindGroup(0, bind(i, offsets[i], seg.list.byteLength));
      pass.dispatchWorkgroups(grids[i][0], grids[i][1]);
    });
    pass.end();
    if (outBytes > 0) enc.copyBufferToBuffer(out, 0, readback, 0, outBytes);
    enc.copyBufferToBuffer(outI, 0, readback, outBytes, outIBytes);
    if (resolve && querySet) {
      enc.resolveQuerySet(querySet, 0, 2, resolve, 0);
      enc.copyBufferToBuffer(resolve, 0, readback, outBytes + outIBytes, 16);
    }
    q.submit([enc.finish()]);
    const mapped = readback.mapAsync(GPUMapMode.READ, 0, readBytes);
    mapped.catch(() => {}); // awaited below; a validation error is reported by the scope instead
    return { mapped }; // boxed: an async guard must not adopt (and wait for) the map itself
  });

  return (async () => {
    try {
      const { mapped } = await submitted;
      await ctx.race(mapped);
      const mappedAt = performance.now();
      const bytes = readback.getMappedRange(0, readBytes);
      const result: ChunkOutputs = {
        out: new Float32Array(bytes.slice(0, outBytes)),
        outI: new Float32Array(bytes.slice(outBytes, outBytes + nGroups * 4)),
        kernelMs: undefined,
        mappedAt,
      };
      if (tsBytes > 0) {
        const ts = new BigUint64Array(bytes.slice(outBytes + outIBytes, readBytes));
        if (ts[1] >= ts[0]) result.kernelMs = Number(ts[1] - ts[0]) / 1e6;
      }
      readback.unmap();
      return result;
    } finally {
      if (!ctx.isLost) release();
    }
  })();
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

function paramsBlock(params: ScoreParams, count: number, dim: number, stride: number, gridX: number): ArrayBuffer {
  const buf = new ArrayBuffer(PARAMS_BYTES);
  const f = new Float32Array(buf);
  const u = new Uint32Array(buf);
  f[0] = params.alpha;
  f[1] = params.tau;
  u[2] = count;
  u[3] = dim;
  u[4] = Math.max(1, gridX);
  u[5] = stride;
  u[6] = splitsContrast(params) ? 1 : 0;
  return buf;
}
