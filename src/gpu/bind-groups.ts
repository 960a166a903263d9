/**
 * Bind groups of the scoring kernels, created once per set of buffers and reused. Every kernel
 * binds the same six buffers (params, features, embeddings, work, out, outI) as whole buffers,
 * with the params slot as a dynamic offset and each dispatch's place in the work buffer in its
 * params (`workBase`), so one bind group serves every dispatch of a chunk. The buffer pool hands
 * the same buffers to calls of the same shape, so a repeated call (the same forest, new α and τ;
 * the same live chunk) finds its bind group here instead of creating one. Entries that name a
 * destroyed buffer are dropped (`forget`), and the cache holds at most `capacity` entries.
 */
export class BindGroupCache {
  private readonly ids = new WeakMap<GPUBuffer, number>();
  private nextId = 1;
  /** Key (buffer ids) → bind group, least recently used first. */
  private readonly entries = new Map<string, { group: GPUBindGroup; ids: number[] }>();
  /** Bind groups created, and calls that found theirs here. */
  created = 0;
  reused = 0;

  constructor(
    private readonly device: GPUDevice,
    private readonly layout: GPUBindGroupLayout,
    /** Largest storage binding (bytes): a pooled buffer may be larger than what can be bound at once. */
    private readonly maxStorageBinding: number,
    /** Bytes of one params block (the dynamic-offset uniform binding). */
    private readonly paramsBytes: number,
    private readonly capacity = 128,
  ) {}

  /** The bind group of these buffers (params, feat, emb, work, out, outI), created on first use. */
  get(params: GPUBuffer, feat: GPUBuffer, emb: GPUBuffer, work: GPUBuffer, out: GPUBuffer, outI: GPUBuffer): GPUBindGroup {
    const buffers = [params, feat, emb, work, out, outI];
    const ids = buffers.map((b) => this.idOf(b));
    const key = ids.join(':');
    const hit = this.entries.get(key);
    if (hit) {
      this.entries.delete(key);
      this.entries.set(key, hit);
      this.reused++;
      return hit.group;
    }
    const storage = (buffer: GPUBuffer) => ({ buffer, size: Math.min(buffer.size, this.maxStorageBinding) });
    const group = this.device.createBindGroup({
      label: 'trace-score',
      layout: this.layout,
      entries: [
        { binding: 0, resource: { buffer: params, size: this.paramsBytes } },
        ...[feat, emb, work, out, outI].map((b, i) => ({ binding: i + 1, resource: storage(b) })),
      ],
    });
    this.created++;
    this.entries.set(key, { group, ids });
    if (this.entries.size > this.capacity) this.entries.delete(this.entries.keys().next().value as string);
    return group;
  }

  /** Drops every bind group that names `buffer` (call before destroying it). */
  forget(buffer: GPUBuffer): void {
    const id = this.ids.get(buffer);
    if (id === undefined) return;
    this.ids.delete(buffer);
    for (const [key, e] of this.entries) if (e.ids.includes(id)) this.entries.delete(key);
  }

  get size(): number {
    return this.entries.size;
  }

  clear(): void {
    this.entries.clear();
  }

  private idOf(buffer: GPUBuffer): number {
    let id = this.ids.get(buffer);
    if (id === undefined) this.ids.set(buffer, (id = this.nextId++));
    return id;
  }
}
