/**
 * Reuses GPU buffers across scoring calls. A buffer is handed to one caller at a time
 * (acquire → release), so concurrent calls never share one. Sizes are rounded up to a
 * power of two so forests of similar size hit the same buffers; idle buffers beyond
 * `maxIdleBytes` are destroyed, which keeps GPU memory flat across repeated calls.
 */
export interface PoolStats {
  /** Bytes of buffers handed out and not yet released. */
  inUseBytes: number;
  /** Bytes of idle buffers kept for reuse. */
  idleBytes: number;
  /** Buffers ever created. */
  created: number;
}

export class BufferPool {
  private readonly idle = new Map<string, GPUBuffer[]>();
  private readonly inUse = new Set<GPUBuffer>();
  private stats: PoolStats = { inUseBytes: 0, idleBytes: 0, created: 0 };

  constructor(private readonly device: GPUDevice, private readonly maxIdleBytes = 512 * 2 ** 20) {}

  acquire(size: number, usage: GPUBufferUsageFlags, label: string): GPUBuffer {
    const rounded = roundSize(size, this.device.limits.maxBufferSize);
    const key = `${usage}:${rounded}`;
    let buffer = this.idle.get(key)?.pop();
    if (buffer) {
      this.stats.idleBytes -= rounded;
    } else {
      buffer = this.device.createBuffer({ size: rounded, usage, label });
      this.stats.created++;
    }
    this.inUse.add(buffer);
    this.stats.inUseBytes += rounded;
    return buffer;
  }

  release(buffer: GPUBuffer): void {
    if (!this.inUse.delete(buffer)) return;
    const size = buffer.size;
    this.stats.inUseBytes -= size;
    if (buffer.mapState !== 'unmapped') buffer.unmap();
    if (this.stats.idleBytes + size > this.maxIdleBytes) {
      buffer.destroy();
      return;
    }
    const key = `${buffer.usage}:${size}`;
    const list = this.idle.get(key) ?? [];
    list.push(buffer);
    this.idle.set(key, list);
    this.stats.idleBytes += size;
  }

  /** Destroys idle buffers (in-use ones are destroyed with the device). */
  trim(): void {
    for (const list of this.idle.values()) for (const b of list) b.destroy();
    this.idle.clear();
    this.stats.idleBytes = 0;
  }

  snapshot(): PoolStats {
    return { ...this.stats };
  }
}

function roundSize(size: number, maxBufferSize: number): number {
  const min = 256;
  if (size <= min) return min;
  const pow2 = 2 ** Math.ceil(Math.log2(size));
  // Near the device limit (which need not be a power of two) only align, never exceed it.
  return pow2 <= maxBufferSize ? pow2 : Math.ceil(size / min) * min;
}
