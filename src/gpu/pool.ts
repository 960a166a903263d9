/**
 * Reuses GPU buffers across scoring calls. A buffer is handed to one caller at a time
 * (acquire → release), so concurrent calls never share one. Sizes are rounded up so forests
 * of similar size hit the same buffers: to a power of two up to 1 MiB, and above that to an
 * eighth of the next power of two (≤ 25 % slack instead of up to 100 %). Idle buffers are kept
 * up to the larger of `minIdleBytes` and the peak bytes ever in use at once, so a workload
 * that needs N bytes per call reuses its buffers instead of destroying and recreating them
 * (what a fixed 512 MiB cap did at 16 384 trees), while memory stays flat across calls.
 * A buffer keeps one role (its label: 'work', 'feat', 'emb', …) for life: callers may then
 * remember what they last wrote into it (dispatch.ts skips re-sending unchanged work lists).
 */
export interface PoolStats {
  /** Bytes of buffers handed out and not yet released. */
  inUseBytes: number;
  /** Bytes of idle buffers kept for reuse. */
  idleBytes: number;
  /** Largest `inUseBytes` so far: the idle cap grows to it. */
  peakInUseBytes: number;
  /** Buffers ever created. */
  created: number;
  /** Buffers destroyed on release because the idle cap was reached. */
  destroyed: number;
}

export class BufferPool {
  private readonly idle = new Map<string, GPUBuffer[]>();
  /** Buffers handed out, with the idle list they go back to. */
  private readonly inUse = new Map<GPUBuffer, string>();
  /** Per affinity key, the buffer it last got under each label. */
  private readonly lastOf = new WeakMap<object, Map<string, GPUBuffer>>();
  private stats: PoolStats = { inUseBytes: 0, idleBytes: 0, peakInUseBytes: 0, created: 0, destroyed: 0 };

  constructor(
    private readonly device: GPUDevice,
    private readonly minIdleBytes = 64 * 2 ** 20,
    /** Called before the pool destroys one of its buffers (the bind group cache forgets it). */
    private readonly onDestroy: (buffer: GPUBuffer) => void = () => {},
  ) {}

  /** Current cap on idle bytes. */
  get maxIdleBytes(): number {
    return Math.max(this.minIdleBytes, this.stats.peakInUseBytes);
  }

  /**
   * A buffer of at least `size` bytes. With `affinity` (an object standing for one recurring
   * use: a chunk of a forest), the buffer this use last got under `label` is handed out again
   * when it is idle, so the same call on the same chunk gets the same buffers — and finds its
   * bind group and work lists from last time still valid — however calls interleaved.
   */
  acquire(size: number, usage: number, label: string, affinity?: object): GPUBuffer {
    const rounded = roundSize(size, this.device.limits.maxBufferSize);
    // The label is part of the key: a buffer serves one role only (work lists, features, …), so
    // what a role remembers of its buffer's contents (dispatch.ts's work lists) stays true.
    const key = `${label}:${usage}:${rounded}`;
    const list = this.idle.get(key);
    let buffer: GPUBuffer | undefined;
    const last = affinity ? this.lastOf.get(affinity)?.get(label) : undefined;
    const at = last && list ? list.lastIndexOf(last) : -1;
    if (at >= 0) buffer = list!.splice(at, 1)[0];
    else buffer = list?.pop();
    if (buffer) {
      this.stats.idleBytes -= rounded;
    } else {
      buffer = this.device.createBuffer({ size: rounded, usage, label });
      this.stats.created++;
    }
    if (affinity) {
      let byLabel = this.lastOf.get(affinity);
      if (!byLabel) this.lastOf.set(affinity, (byLabel = new Map()));
      byLabel.set(label, buffer);
    }
    this.inUse.set(buffer, key);
    this.stats.inUseBytes += rounded;
    this.stats.peakInUseBytes = Math.max(this.stats.peakInUseBytes, this.stats.inUseBytes);
    return buffer;
  }

  release(buffer: GPUBuffer): void {
    const key = this.inUse.get(buffer);
    if (key === undefined) return;
    this.inUse.delete(buffer);
    const size = buffer.size;
    this.stats.inUseBytes -= size;
    if (buffer.mapState !== 'unmapped') buffer.unmap();
    if (this.stats.idleBytes + size > this.maxIdleBytes) {
      this.onDestroy(buffer);
      buffer.destroy();
      this.stats.destroyed++;
      return;
    }
    const list = this.idle.get(key) ?? [];
    list.push(buffer);
    this.idle.set(key, list);
    this.stats.idleBytes += size;
  }

  /** Destroys idle buffers (in-use ones are destroyed with the device) and resets the idle cap. */
  trim(): void {
    for (const list of this.idle.values()) for (const b of list) { this.onDestroy(b); b.destroy(); }
    this.idle.clear();
    this.stats.idleBytes = 0;
    this.stats.peakInUseBytes = this.stats.inUseBytes;
  }

  snapshot(): PoolStats {
    return { ...this.stats };
  }
}

const MIN_SIZE = 256;
const FINE_FROM = 2 ** 20;

/** The pooled size for a request of `size` bytes (exported for tests). */
export function roundSize(size: number, maxBufferSize: number): number {
  if (size <= MIN_SIZE) return MIN_SIZE;
  const pow2 = 2 ** Math.ceil(Math.log2(size));
  const rounded = pow2 <= FINE_FROM ? pow2 : Math.ceil(size / (pow2 / 8)) * (pow2 / 8);
  // Near the device limit (which need not be a power of two) only align, never exceed it.
  return rounded <= maxBufferSize ? rounded : Math.ceil(size / MIN_SIZE) * MIN_SIZE;
}
