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

const PARAMS_BYTES = 32;
const UNIFORM_SLOT = 256; // minUniformBufferOffsetAlignment is at most 256

export async function loadPipelines(ctx: GpuContext, f16: boolean): Promise<Pipelines> {
  const [thread, workgroup] = await Promise.all([ctx.pipeline('score_thread', f16), ctx.pipeline('score_workgroup', f16)]);
  return { thread, workgroup };
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
  const nThread = lists.thread.length / 4;
  const nWg = lists.workgroup.length / 4;
  const nGroups = nThread + nWg;
  const outBytes = outSlots * OUT_BYTES;
  const outIBytes = Math.max(4, nGroups * 4);
  const wgOffset = Math.ceil((nThread * WORK_BYTES) / ctx.minStorageOffset) * ctx.minStorageOffset;
  const workBytes = wgOffset + Math.max(WORK_BYTES, nWg * WORK_BYTES);
  const tsBytes = ctx.hasTimestamps ? 16 : 0;
  const readBytes = outBytes + outIBytes + tsBytes;

  const S = GPUBufferUsage;
  const work = pool.acquire(workBytes, S.STORAGE | S.COPY_DST, 'work');
  const uniforms = pool.acquire(2 * UNIFORM_SLOT, S.UNIFORM | S.COPY_DST, 'params');
  const out = pool.acquire(Math.max(OUT_BYTES, outBytes), S.STORAGE | S.COPY_SRC, 'out');
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
    if (nThread > 0) q.writeBuffer(work, 0, lists.thread);
    if (nWg > 0) q.writeBuffer(work, wgOffset, lists.workgroup);
    const wgPerThreadDispatch = Math.ceil(nThread / ctx.workgroupSize('score_thread'));
    const gridThread = foldGrid(wgPerThreadDispatch, ctx.maxWorkgroupsPerDim);
    const gridWg = foldGrid(nWg, ctx.maxWorkgroupsPerDim);
    q.writeBuffer(uniforms, 0, paramsBlock(params, nThread, dim, embStride(dim, inputs.f16), gridThread[0]));
    q.writeBuffer(uniforms, UNIFORM_SLOT, paramsBlock(params, nWg, dim, embStride(dim, inputs.f16), gridWg[0]));

    const bind = (slot: number, offset: number, size: number) =>
      device.createBindGroup({
        layout: ctx.layout,
        entries: [
          { binding: 0, resource: { buffer: uniforms, offset: slot * UNIFORM_SLOT, size: PARAMS_BYTES } },
          { binding: 1, resource: { buffer: inputs.feat, size: inputs.featBytes } },
          { binding: 2, resource: { buffer: inputs.emb, size: inputs.embBytes } },
          { binding: 3, resource: { buffer: work, offset, size } },
          { binding: 4, resource: { buffer: out, size: Math.max(OUT_BYTES, outBytes) } },
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
    if (nThread > 0) {
      pass.setPipeline(pipes.thread);
      pass.setBindGroup(0, bind(0, 0, nThread * WORK_BYTES));
      pass.dispatchWorkgroups(gridThread[0], gridThread[1]);
    }
    if (nWg > 0) {
      pass.setPipeline(pipes.workgroup);
      pass.setBindGroup(0, bind(1, wgOffset, nWg * WORK_BYTES));
      pass.dispatchWorkgroups(gridWg[0], gridWg[1]);
    }
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
