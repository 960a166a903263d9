/**
 * A bounds-checked reader of FlatBuffers tables, the encoding of Arrow IPC metadata. Input
 * files are untrusted: every offset, vector length and string is checked against the bytes
 * actually present before it is followed, so a forged or bit-flipped table is a
 * `FlatBufferError` — never an out-of-range read, a loop over a forged length or unbounded
 * recursion (the caller follows only the nesting its schema needs).
 *
 * Wire format (flatbuffers.dev, "Internals"): a table starts with an int32 offset back to its
 * vtable; the vtable is a uint16 byte size, a uint16 table size and one uint16 per field slot
 * (0: the field is absent and takes its default); scalars are inline at the table position
 * plus the slot's offset; tables, vectors and strings are uint32 offsets relative to where the
 * offset itself is stored; a vector or string is a uint32 count followed by its elements.
 */
export class FlatBufferError extends Error {
  override name = 'FlatBufferError';
}

export class FlatTable {
  private constructor(
    private readonly bytes: Uint8Array,
    private readonly view: DataView,
    /** Byte position of the table in `bytes`. */
    readonly position: number,
    private readonly vtable: number,
    private readonly vtableSize: number,
  ) {}

  /** The root table of a FlatBuffer (`bytes` holds exactly the buffer). */
  static root(bytes: Uint8Array): FlatTable {
    const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    return FlatTable.at(bytes, view, offsetTarget(view, 0));
  }

  private static at(bytes: Uint8Array, view: DataView, position: number): FlatTable {
    need(view, position, 4);
    const vtable = position - view.getInt32(position, true);
    need(view, vtable, 4);
    const vtableSize = view.getUint16(vtable, true);
    if (vtableSize < 4 || vtableSize % 2 !== 0) throw new FlatBufferError(`a vtable of ${vtableSize} bytes`);
    need(view, vtable, vtableSize);
    return new FlatTable(bytes, view, position, vtable, vtableSize);
  }

  /** Where slot `slot`'s value is, checked to hold `width` bytes; 0 when the field is absent. */
  private field(slot: number, width: number): number {
    const entry = 4 + 2 * slot;
    if (entry + 2 > this.vtableSize) return 0;
    const offset = this.view.getUint16(this.vtable + entry, true);
    if (offset === 0) return 0;
    const at = this.position + offset;
    need(this.view, at, width);
    return at;
  }

  has(slot: number): boolean {
    return this.field(slot, 0) !== 0;
  }

  bool(slot: number, fallback = false): boolean {
    const at = this.field(slot, 1);
    return at === 0 ? fallback : this.view.getUint8(at) !== 0;
  }

  uint8(slot: number, fallback = 0): number {
    const at = this.field(slot, 1);
    return at === 0 ? fallback : this.view.getUint8(at);
  }

  int16(slot: number, fallback = 0): number {
    const at = this.field(slot, 2);
    return at === 0 ? fallback : this.view.getInt16(at, true);
  }

  int32(slot: number, fallback = 0): number {
    const at = this.field(slot, 4);
    return at === 0 ? fallback : this.view.getInt32(at, true);
  }

  /** An int64 field as a number; a value outside ±(2⁵³ − 1) is an error naming `what`. */
  int64(slot: number, what: string, fallback = 0): number {
    const at = this.field(slot, 8);
    return at === 0 ? fallback : safeInt64(this.view, at, what);
  }

  table(slot: number): FlatTable | undefined {
    const at = this.field(slot, 4);
    return at === 0 ? undefined : FlatTable.at(this.bytes, this.view, offsetTarget(this.view, at));
  }

  string(slot: number): string | undefined {
    const at = this.field(slot, 4);
    if (at === 0) return undefined;
    const { start, count } = vectorAt(this.view, offsetTarget(this.view, at), 1);
    return UTF8.decode(this.bytes.subarray(start, start + count));
  }

  /** A vector of tables (each element an offset to its table). */
  tables(slot: number): FlatTable[] {
    const at = this.field(slot, 4);
    if (at === 0) return [];
    const { start, count } = vectorAt(this.view, offsetTarget(this.view, at), 4);
    const out: FlatTable[] = [];
    for (let i = 0; i < count; i++) out.push(FlatTable.at(this.bytes, this.view, offsetTarget(this.view, start + 4 * i)));
    return out;
  }

  /** A vector of structs of `size` bytes: each element as a reader of its fields. */
  structs(slot: number, size: number): FlatStruct[] {
    const at = this.field(slot, 4);
    if (at === 0) return [];
    const { start, count } = vectorAt(this.view, offsetTarget(this.view, at), size);
    const out: FlatStruct[] = [];
    for (let i = 0; i < count; i++) out.push(new FlatStruct(this.view, start + size * i));
    return out;
  }

  /** How many elements a vector field holds (0 when absent), without reading them. */
  vectorLength(slot: number, elementSize: number): number {
    const at = this.field(slot, 4);
    return at === 0 ? 0 : vectorAt(this.view, offsetTarget(this.view, at), elementSize).count;
  }
}

/** One struct inside a vector: fixed fields at byte offsets (already bounds-checked as a whole). */
export class FlatStruct {
  constructor(private readonly view: DataView, private readonly position: number) {}
  int32(offset: number): number { return this.view.getInt32(this.position + offset, true); }
  int64(offset: number, what: string): number { return safeInt64(this.view, this.position + offset, what); }
}

const UTF8 = new TextDecoder('utf-8', { fatal: false });

function need(view: DataView, at: number, width: number): void {
  if (at < 0 || at + width > view.byteLength) throw new FlatBufferError(`an offset points outside the metadata (byte ${at} of ${view.byteLength})`);
}

function offsetTarget(view: DataView, at: number): number {
  need(view, at, 4);
  return at + view.getUint32(at, true);
}

/** A vector's elements: its count checked against the bytes that follow. */
function vectorAt(view: DataView, at: number, elementSize: number): { start: number; count: number } {
  need(view, at, 4);
  const count = view.getUint32(at, true);
  if (count * elementSize > view.byteLength - at - 4) throw new FlatBufferError(`a vector of ${count} elements does not fit the metadata`);
  return { start: at + 4, count };
}

function safeInt64(view: DataView, at: number, what: string): number {
  const value = view.getBigInt64(at, true);
  if (value > BigInt(Number.MAX_SAFE_INTEGER) || value < -BigInt(Number.MAX_SAFE_INTEGER)) throw new FlatBufferError(`${what} ${value} is out of range`);
  return Number(value);
}
