import { adapterIdentity, adapterName, cpuEmulationReason, requestGpuAdapter, type PowerPreference } from './adapter.js';
import { GpuDeviceLostError, GpuUnavailableError, GpuValidationError } from './errors.js';
import { PARAMS_BYTES, STAGE_LANES, TILE_ROWS } from './layout.js';
import { BindGroupCache } from './bind-groups.js';
import { BufferPool } from './pool.js';
import { kernelSource, type KernelName } from './shaders.js';

export interface GpuContextOptions {
  /**
   * The `navigator.gpu` to use. Defaults to Dawn's (the `webgpu` package) in Node, or the
   * global `navigator.gpu` where one exists (browsers, Deno).
   */
  gpu?: GPU;
  /** An adapter already requested (and judged) by the caller; `gpu` and `powerPreference` are then unused. */
  adapter?: GPUAdapter;
  powerPreference?: PowerPreference;
  /** Workgroup sizes (powers of two) overriding `KERNEL_WORKGROUP` — for tuning measurements. */
  workgroupSizes?: Partial<Record<KernelName, number>>;
}

/** Workgroup sizes of the two kernels (see docs/GPU.md for the measurements behind them). */
export const KERNEL_WORKGROUP: Readonly<Record<KernelName, number>> = { score_workgroup: 64, score_thread: 64, score_tiles: TILE_ROWS, score_reduce: 64, score_staged: STAGE_LANES };

/**
 * Owns one WebGPU device and everything created on it: compiled pipelines (built once per
 * kernel and embedding type), the bind group layout and the buffer pool. Create it once,
 * share it across scorers and calls, and `destroy()` it at the end — Dawn keeps the Node
 * process alive while a device exists.
 */
export class GpuContext {
  readonly pool: BufferPool;
  readonly layout: GPUBindGroupLayout;
  /** Bind groups of the scoring kernels, one per set of buffers, reused across calls. */
  readonly bindGroups: BindGroupCache;
  /** Queue submissions of scoring work so far (one per call, or per chunk when one-shot scoring streams chunks). */
  submits = 0;
  /** Work lists written to the device, and calls that found theirs already in the pooled work buffer. */
  workListsWritten = 0;
  workListsReused = 0;
  readonly hasF16: boolean;
  readonly hasTimestamps: boolean;
  /** Largest storage binding that also fits one buffer, in bytes (the adapter's real limits, requested at creation). */
  readonly maxBinding: number;
  readonly maxWorkgroupsPerDim: number;
  readonly minStorageOffset: number;
  /**
   * Whether the adapter emulates a GPU on the CPU (lavapipe/llvmpipe, SwiftShader, WARP, or a
   * fallback adapter): the kernel mapping then defaults to 'classic' (see docs/GPU.md).
   */
  readonly cpuEmulated: boolean;
  private readonly pipelines = new Map<string, Promise<GPUComputePipeline>>();
  private lostError: GpuDeviceLostError | undefined;
  private readonly waiters = new Set<(err: unknown) => void>();
  private destroyed = false;
  /** Settles (never rejects) when the device is lost; every wait races against it. */
  readonly lost: Promise<GpuDeviceLostError>;

  private readonly workgroupSizes: Record<KernelName, number>;

  private constructor(readonly device: GPUDevice, readonly adapterName: string, workgroupSizes: Partial<Record<KernelName, number>> = {}, cpuEmulated = false) {
    this.cpuEmulated = cpuEmulated;
    // The tile and staged kernels' sizes are what the host cuts work lists by: not tunable here.
    this.workgroupSizes = { ...KERNEL_WORKGROUP, ...workgroupSizes, score_tiles: TILE_ROWS, score_staged: STAGE_LANES };
    this.pool = new BufferPool(device, undefined, (buffer) => this.bindGroups.forget(buffer));
    this.hasF16 = device.features.has('shader-f16');
    this.hasTimestamps = device.features.has('timestamp-query');
    // A chunk's buffer must also fit one buffer; keep it 4-byte aligned (writeBuffer sizes).
    this.maxBinding = Math.floor(Math.min(device.limits.maxStorageBufferBindingSize, device.limits.maxBufferSize) / 4) * 4;
    this.maxWorkgroupsPerDim = device.limits.maxComputeWorkgroupsPerDimension;
    this.minStorageOffset = device.limits.minStorageBufferOffsetAlignment;
    this.lost = device.lost.then((info) => {
      const err = new GpuDeviceLostError(info.reason, info.message);
      this.lostError = err;
      for (const reject of this.waiters) reject(err);
      this.waiters.clear();
      return err;
    });
    const storage = (binding: number, type: GPUBufferBindingType): GPUBindGroupLayoutEntry => ({ binding, visibility: GPUShaderStage.COMPUTE, buffer: { type } });
    this.layout = device.createBindGroupLayout({
      label: 'trace-score',
      entries: [
        // The params of each dispatch sit at their own offset of one uniform buffer.
        { binding: 0, visibility: GPUShaderStage.COMPUTE, buffer: { type: 'uniform', hasDynamicOffset: true } },
        storage(1, 'read-only-storage'),
        storage(2, 'read-only-storage'),
        storage(3, 'read-only-storage'),
        storage(4, 'storage'),
        storage(5, 'storage'),
      ],
    });
    this.bindGroups = new BindGroupCache(device, this.layout, Math.floor(device.limits.maxStorageBufferBindingSize / 4) * 4, PARAMS_BYTES);
  }

  static async create(options: GpuContextOptions = {}): Promise<GpuContext> {
    const adapter = options.adapter ?? (await requestGpuAdapter(options.gpu, options.powerPreference));
    const wanted: GPUFeatureName[] = ['shader-f16', 'timestamp-query'];
    const requiredFeatures = wanted.filter((f) => adapter.features.has(f));
    const l = adapter.limits;
    // Ask for what the adapter really offers; the defaults (128 MiB bindings, 256 MiB buffers) are lower on many GPUs.
    const requiredLimits: Record<string, number> = {
      maxStorageBufferBindingSize: l.maxStorageBufferBindingSize,
      maxBufferSize: l.maxBufferSize,
      maxComputeWorkgroupsPerDimension: l.maxComputeWorkgroupsPerDimension,
      maxComputeWorkgroupStorageSize: l.maxComputeWorkgroupStorageSize,
      maxComputeInvocationsPerWorkgroup: l.maxComputeInvocationsPerWorkgroup,
      maxStorageBuffersPerShaderStage: l.maxStorageBuffersPerShaderStage,
    };
    const device = await adapter.requestDevice({ label: 'trace-alloc', requiredFeatures, requiredLimits });
    const identity = adapterIdentity(adapter);
    return new GpuContext(device, adapterName(identity), options.workgroupSizes, cpuEmulationReason(identity) !== undefined);
  }

  /** The compiled pipeline of a kernel, compiled once per device. */
  pipeline(kernel: KernelName, f16: boolean): Promise<GPUComputePipeline> {
    const key = `${kernel}:${f16 ? 'f16' : 'f32'}`;
    let p = this.pipelines.get(key);
    if (!p) {
      p = (async () => {
        const code = await kernelSource(kernel, f16);
        const module = await this.guard(`compiling ${key}`, () => this.device.createShaderModule({ label: key, code }));
        try {
          return await this.race(
            this.device.createComputePipelineAsync({
              label: key,
              layout: this.device.createPipelineLayout({ bindGroupLayouts: [this.layout] }),
              compute: { module, entryPoint: 'main', constants: { WG: this.workgroupSize(kernel) } },
            }),
          );
        } catch (err) {
          if (err instanceof GpuDeviceLostError) throw err;
          throw new GpuValidationError(`compiling ${key}`, (err as Error).message);
        }
      })();
      p.catch(() => this.pipelines.delete(key));
      this.pipelines.set(key, p);
    }
    return p;
  }

  private readonly idleQuerySets: GPUQuerySet[] = [];
  /** Timestamp query sets ever created: one per call in flight at most, then reused. */
  querySetsCreated = 0;

  /** A two-entry timestamp query set, reused across calls (one per call in flight). */
  acquireQuerySet(): GPUQuerySet {
    const q = this.idleQuerySets.pop();
    if (q) return q;
    this.querySetsCreated++;
    return this.device.createQuerySet({ label: 'trace-score-timestamps', type: 'timestamp', count: 2 });
  }

  /** Returns a query set once the submission that wrote it has completed (its readback mapped). */
  releaseQuerySet(q: GPUQuerySet): void {
    if (this.destroyed) q.destroy();
    else this.idleQuerySets.push(q);
  }

  workgroupSize(kernel: KernelName): number {
    return this.workgroupSizes[kernel];
  }

  /** Throws if the device is gone; call before starting GPU work. */
  checkAlive(): void {
    if (this.lostError) throw this.lostError;
    if (this.destroyed) throw new GpuDeviceLostError('destroyed', 'the GpuContext was destroyed');
  }

  /** Waits currently raced against device loss (0 when no call is in flight). */
  get pendingWaits(): number {
    return this.waiters.size;
  }

  get isLost(): boolean {
    return this.lostError !== undefined || this.destroyed;
  }

  /** Awaits `promise`, but fails with the device-lost error instead of hanging if the device goes away. */
  race<T>(promise: Promise<T>): Promise<T> {
    this.checkAlive();
    // A reject callback per pending wait, dropped when it settles: racing against the
    // long-lived `lost` promise itself would leave one reaction behind per call.
    return new Promise<T>((resolve, reject) => {
      this.waiters.add(reject);
      promise.then(
        (value) => { this.waiters.delete(reject); resolve(value); },
        (err: unknown) => { this.waiters.delete(reject); reject(err); },
      );
    });
  }

  /**
   * Runs `work` inside validation and out-of-memory error scopes and turns anything they
   * catch into a `GpuValidationError` (Dawn prints these instead of throwing).
   */
  async guard<T>(during: string, work: () => T): Promise<T> {
    // `work` is synchronous so that two calls in flight cannot interleave their scopes.
    this.checkAlive();
    this.device.pushErrorScope('out-of-memory');
    this.device.pushErrorScope('validation');
    let result: T;
    let thrown: unknown;
    try {
      result = work();
    } catch (err) {
      thrown = err;
    }
    const popValidation = this.device.popErrorScope();
    const popOom = this.device.popErrorScope();
    const validation = await this.race(popValidation);
    const oom = await this.race(popOom);
    if (thrown) throw thrown;
    if (validation) throw new GpuValidationError(during, validation.message);
    if (oom) throw new GpuValidationError(during, `out of memory: ${oom.message}`);
    return result!;
  }

  /** Simulates a lost device (tests, and callers that want to abandon in-flight work). */
  loseDevice(): void {
    this.device.destroy();
  }

  destroy(): void {
    if (this.destroyed) return;
    this.destroyed = true;
    for (const q of this.idleQuerySets.splice(0)) q.destroy();
    this.pool.trim();
    this.bindGroups.clear();
    this.device.destroy();
  }
}
