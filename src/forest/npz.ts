import { Inflate, zipSync } from 'fflate';
import { sharedArray } from '../util/shared.js';
import type { NdArray } from './columnar.js';
import { crc32 } from './crc32.js';
import { ForestError } from './errors.js';
import { DEFAULT_MAX_INFLATED_BYTES } from './limits.js';
import { encodeNpy, MAX_NPY_HEADER_BYTES, npyArray, npyLayout, type NpyLayout } from './npy.js';
import { memorySource, type ByteSource } from './source.js';
import { readZipDirectory, type ZipEntry } from './zip.js';

/**
 * numpy's `.npz` (what `numpy.savez` / `numpy.savez_compressed` write): a zip archive with one
 * `.npy` per array, named `<array>.npy`. The archive's directory is checked whole first
 * (`zip.ts`), then each entry is read once into its own buffer and checked against its CRC-32:
 *
 * - a stored entry (`numpy.savez`): its `.npy` header, then its data straight into an aligned
 *   buffer (from a file, one positional read; in memory, a view when already aligned), so
 *   numeric arrays are typed-array views with no per-chunk copy;
 * - a deflated entry (`numpy.savez_compressed`): inflated in small steps into a buffer of the
 *   size its `.npy` header declares, which must equal the size the zip directory declares; a
 *   stream that inflates past it is refused at once. All deflated entries together may declare
 *   at most `maxInflatedBytes` (default `DEFAULT_MAX_INFLATED_BYTES`), so a small file cannot
 *   make the reader allocate without bound.
 */
export interface NpzOptions {
  /** The most bytes the archive's compressed entries may inflate to, in all. */
  maxInflatedBytes?: number;
  /**
   * The caller hands over the bytes (given as a Uint8Array): misaligned arrays are moved within
   * them instead of copied (`memorySource`'s `movable`). Default false: the input is not changed.
   */
  movable?: boolean;
}


export function decodeNpz(input: ByteSource | Uint8Array, source: string, options: NpzOptions = {}): Map<string, NdArray> {
  const archive = input instanceof Uint8Array ? memorySource(input, { movable: options.movable === true }) : input;
  if (archive.size === 0) throw new ForestError({}, `${source}: the file is empty`);
  const entries = readZipDirectory(archive, source);
  if (entries.length === 0) throw new ForestError({}, `${source}: not a valid .npz archive (no arrays found)`);
  const maxInflated = options.maxInflatedBytes ?? DEFAULT_MAX_INFLATED_BYTES;
  let inflated = 0;
  const names = new Set<string>();
  for (const e of entries) {
    if (!e.name.endsWith('.npy')) throw new ForestError({ field: e.name }, `${source}: an .npz holds only .npy arrays, found ${JSON.stringify(e.name)}`);
    const name = e.name.slice(0, -4);
    if (names.has(name)) throw new ForestError({ field: name }, `${source}: the archive holds this array twice`);
    names.add(name);
    if (e.method === 8) {
      inflated += e.size;
      if (inflated > maxInflated) {
        throw new ForestError({ field: name }, `${source}: the compressed arrays inflate to more than ${maxInflated} bytes (--max-inflated-bytes, maxInflatedBytes), ${inflated} so far`);
      }
    }
  }
  const arrays = new Map<string, NdArray>();
  for (const e of entries) {
    const name = e.name.slice(0, -4);
    arrays.set(name, e.method === 0 ? readStored(archive, e, name, source) : readDeflated(archive, e, name, source));
  }
  return arrays;
}

function checkCrc(actual: number, entry: ZipEntry, name: string, source: string): void {
  if (actual !== entry.crc32) {
    throw new ForestError({ field: name }, `${source}: the array's bytes fail their CRC-32 check (0x${actual.toString(16).padStart(8, '0')}, the archive says 0x${entry.crc32.toString(16).padStart(8, '0')}): the file is corrupt`);
  }
}

/** The `.npy` header of an entry from its first bytes, declared to fill the entry exactly. */
function layoutOf(head: Uint8Array, entry: ZipEntry, name: string, source: string): NpyLayout {
  let layout: NpyLayout;
  try {
    layout = npyLayout(head, name, entry.size);
  } catch (err) {
    if (err instanceof ForestError) throw new ForestError(err.location, `${source}: ${err.reason}`);
    throw err;
  }
  const declared = layout.header.dataOffset + layout.dataBytes;
  if (declared !== entry.size) throw new ForestError({ field: name }, `${source}: its .npy header declares ${declared} bytes, the archive holds ${entry.size} (a truncated or padded array)`);
  return layout;
}

/** Where an `.npy` header ends (its length field read from `head`), or undefined when `head` is too short to say. */
function headerEnd(head: Uint8Array): number | undefined {
  if (head.length < 12) return undefined;
  return head[6] === 1 ? 10 + (head[8] | (head[9] << 8)) : 12 + new DataView(head.buffer, head.byteOffset).getUint32(8, true);
}

function widthOf(layout: NpyLayout): number {
  return layout.kind === 'numeric' ? Math.max(1, layout.dataBytes / Math.max(1, layout.count)) : 1;
}

function readStored(archive: ByteSource, entry: ZipEntry, name: string, source: string): NdArray {
  // The header is at most 12 + MAX_NPY_HEADER_BYTES bytes; read a little first, then all of it.
  let head = archive.view(entry.dataOffset, Math.min(entry.size, 4096));
  const needed = Math.min(entry.size, headerEnd(head) ?? 0, 12 + MAX_NPY_HEADER_BYTES);
  if (needed > head.length) head = archive.view(entry.dataOffset, needed);
  const layout = layoutOf(head, entry, name, source);
  const dataOffset = layout.header.dataOffset;
  const headCrc = crc32(head.subarray(0, dataOffset)); // before aligning: moved data may overwrite the header's last bytes
  const data = archive.aligned(entry.dataOffset + dataOffset, layout.dataBytes, widthOf(layout));
  checkCrc(crc32(data, headCrc), entry, name, source);
  return npyArray(layout, data, name);
}

/** Compressed bytes fed per step: deflate inflates at most ~1032×, so one step yields at most ~34 MB. */
const INFLATE_STEP = 32 * 1024;
/** Compressed bytes read from a file at once. */
const READ_STEP = 8 << 20;

function readDeflated(archive: ByteSource, entry: ZipEntry, name: string, source: string): NdArray {
  const fail = (reason: string): never => { throw new ForestError({ field: name }, `${source}: ${reason}`); };
  const head = new Uint8Array(Math.min(entry.size, 12 + MAX_NPY_HEADER_BYTES));
  let headFilled = 0;
  let layout: NpyLayout | undefined;
  let data: Uint8Array | undefined;
  let dataFilled = 0;
  let total = 0;
  let crc = 0;
  let ended = false;
  const inflate = new Inflate((chunk, final) => {
    total += chunk.length;
    if (total > entry.size) fail(`the array inflates to more than the ${entry.size} bytes the archive declares`);
    crc = crc32(chunk, crc);
    let at = 0;
    if (layout === undefined) {
      const take = Math.min(chunk.length, head.length - headFilled);
      head.set(chunk.subarray(0, take), headFilled);
      headFilled += take;
      at = take;
      if (headFilled >= Math.min(headerEnd(head.subarray(0, headFilled)) ?? Infinity, head.length)) {
        layout = layoutOf(head.subarray(0, headFilled), entry, name, source);
        data = sharedArray(Uint8Array, layout.dataBytes);
        // Bytes of the head buffer past the header are the data's first bytes.
        const extra = head.subarray(layout.header.dataOffset, headFilled);
        data.set(extra);
        dataFilled = extra.length;
      }
    }
    if (layout !== undefined && at < chunk.length) {
      data!.set(chunk.subarray(at), dataFilled);
      dataFilled += chunk.length - at;
    }
    if (final) ended = true;
  });
  try {
    const end = entry.dataOffset + entry.compressedSize;
    if (entry.compressedSize === 0) inflate.push(new Uint8Array(0), true);
    for (let offset = entry.dataOffset; offset < end;) {
      const block = archive.view(offset, Math.min(READ_STEP, end - offset));
      for (let i = 0; i < block.length; i += INFLATE_STEP) inflate.push(block.subarray(i, i + INFLATE_STEP), offset + i + INFLATE_STEP >= end);
      offset += block.length;
    }
  } catch (err) {
    if (err instanceof ForestError) throw err;
    fail(`cannot inflate the array: ${(err as Error).message}`);
  }
  if (!ended || total !== entry.size) fail(`the array inflates to ${total} bytes, the archive declares ${entry.size} (a truncated archive)`);
  if (layout === undefined) layout = layoutOf(head.subarray(0, headFilled), entry, name, source);
  checkCrc(crc, entry, name, source);
  return npyArray(layout, data ?? new Uint8Array(0), name);
}

/** An `.npz` archive of the arrays, stored uncompressed (as `numpy.savez` writes). */
export function encodeNpz(arrays: ReadonlyMap<string, NdArray>, compress = false): Uint8Array {
  const files: Record<string, [Uint8Array, { level: 0 | 6 }]> = {};
  for (const [name, array] of arrays) files[`${name}.npy`] = [joined(encodeNpy(array)), { level: compress ? 6 : 0 }];
  return zipSync(files);
}

/** One buffer of all parts (no copy when there is one part). */
function joined(parts: Uint8Array[]): Uint8Array {
  if (parts.length === 1) return parts[0];
  let n = 0;
  for (const p of parts) n += p.length;
  const out = new Uint8Array(n);
  let at = 0;
  for (const p of parts) { out.set(p, at); at += p.length; }
  return out;
}
