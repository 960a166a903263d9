/**
 * Row slabs for the live forest. Every tree owns one contiguous slab of rows (node v of the
 * tree lives at row `start + v`), with spare rows so appends land in place. Slab sizes come
 * from a small set of classes (2^k and 3·2^(k-1)) so a freed slab is reused by the next tree
 * of a similar size, which is the common pattern in training (a batch of trees leaves, a
 * batch of similar trees arrives).
 */
export function slabClass(rows: number): number {
  if (rows <= 4) return 4;
  let p = 4;
  while (p < rows) {
    const mid = p + (p >> 1);
    if (mid >= rows) return mid;
    p *= 2;
  }
  return p;
}

/** The next class up when a tree outgrows its slab: at least 1.5× the old size. */
export function grownClass(current: number, needed: number): number {
  return slabClass(Math.max(needed, current + (current >> 1)));
}

/** Free list by size class plus a bump pointer; row capacity growth is the caller's job. */
export class SlabAllocator {
  private readonly free = new Map<number, number[]>();
  /** First row never handed out. */
  top = 0;
  /** Rows sitting in freed slabs. */
  freeRows = 0;

  /**
   * When > 0, no slab crosses a multiple of `boundary` (a device backend keeps its rows in
   * chunks of this many, one storage binding each, and a sibling group must sit in one chunk).
   */
  boundary = 0;

  /** Returns the start row of a slab of exactly `size` rows (a class size). */
  take(size: number): number {
    const list = this.free.get(size);
    if (list !== undefined && list.length > 0) {
      this.freeRows -= size;
      return list.pop()!;
    }
    if (this.boundary > 0) {
      if (size > this.boundary) throw new RangeError(`a tree of ${size} rows does not fit one device chunk of ${this.boundary} rows`);
      const used = this.top % this.boundary;
      if (used + size > this.boundary) this.top += this.boundary - used; // the rest of this chunk stays unused
    }
    const start = this.top;
    this.top += size;
    return start;
  }

  /** Freed slabs of exactly `size` rows that `take` would hand out before growing `top`. */
  freeSlabs(size: number): number {
    return this.free.get(size)?.length ?? 0;
  }

  give(start: number, size: number): void {
    let list = this.free.get(size);
    if (list === undefined) { list = []; this.free.set(size, list); }
    list.push(start);
    this.freeRows += size;
  }

  reset(): void {
    this.free.clear();
    this.top = 0;
    this.freeRows = 0;
  }
}
