import { ForestError } from './errors.js';
import type { ByteSource } from './source.js';

/**
 * The directory of a zip archive (APPNOTE.TXT, PKWARE), read from its end and checked whole
 * before any entry is read: the end-of-central-directory record must end the file (a truncated
 * archive has none), the central directory must list every entry, each local header must agree
 * with its directory entry (name, method, sizes, CRC-32), and the entries, the directory and
 * the end records must tile the file exactly — no gap, no overlap, nothing appended. Zip64
 * (what `numpy.savez` writes for every entry, and archives past 4 GiB) is read; encrypted
 * entries, multi-disk archives and methods other than stored (0) and deflate (8) are refused.
 * The entries' CRC-32 is checked by the reader of their data (`npz.ts`).
 */
export interface ZipEntry {
  name: string;
  /** 0 stored, 8 deflate. */
  method: number;
  crc32: number;
  compressedSize: number;
  /** Uncompressed size. */
  size: number;
  /** Where the entry's (compressed) data starts in the archive. */
  dataOffset: number;
}

const SIG = { local: 0x04034b50, central: 0x02014b50, end: 0x06054b50, end64: 0x06064b50, locator64: 0x07064b50, descriptor: 0x08074b50 } as const;
const MAX16 = 0xffff;
const MAX32 = 0xffffffff;

export function readZipDirectory(source: ByteSource, name: string): ZipEntry[] {
  const fail = (reason: string): never => { throw new ForestError({}, `${name}: not a valid .npz (zip) archive: ${reason}`); };
  const size = source.size;
  // The end record is 22 bytes plus a comment of up to 65535 bytes, and must end the file.
  const tailLength = Math.min(size, 22 + MAX16);
  const tail = source.view(size - tailLength, tailLength);
  const tv = dataView(tail);
  let end = -1;
  for (let at = tailLength - 22; at >= 0; at--) {
    if (tv.getUint32(at, true) === SIG.end && at + 22 + tv.getUint16(at + 20, true) === tailLength) { end = at; break; }
  }
  if (end < 0) fail('no end-of-central-directory record at its end (the file is truncated, or not a zip archive)');
  const endOffset = size - tailLength + end;
  if (tv.getUint16(end + 4, true) !== 0 || tv.getUint16(end + 6, true) !== 0) fail('a multi-disk archive');
  let count = tv.getUint16(end + 10, true);
  let directorySize = tv.getUint32(end + 12, true);
  let directoryOffset = tv.getUint32(end + 16, true);
  if (tv.getUint16(end + 8, true) !== count) fail('the end record counts its entries twice, differently');
  let directoryEnd = endOffset;
  // Zip64: a locator right before the end record points at the zip64 end record.
  if (endOffset >= 20 && u32(source, endOffset - 20) === SIG.locator64) {
    const locator = dataView(source.view(endOffset - 20, 20));
    const record = safe(locator.getBigUint64(8, true), 'the zip64 end record offset', fail);
    if (locator.getUint32(4, true) !== 0 || locator.getUint32(16, true) > 1) fail('a multi-disk archive');
    if (record + 56 > endOffset - 20) fail('the zip64 end record lies outside the file');
    const z = dataView(source.view(record, 56));
    if (z.getUint32(0, true) !== SIG.end64) fail('no zip64 end record where its locator points');
    if (record + 12 + safe(z.getBigUint64(4, true), 'the zip64 end record size', fail) !== endOffset - 20) fail('the zip64 end record does not reach its locator');
    if (z.getUint32(16, true) !== 0 || z.getUint32(20, true) !== 0) fail('a multi-disk archive');
    const count64 = safe(z.getBigUint64(32, true), 'the entry count', fail);
    if (safe(z.getBigUint64(24, true), 'the entry count', fail) !== count64) fail('the zip64 end record counts its entries twice, differently');
    count = count64;
    directorySize = safe(z.getBigUint64(40, true), 'the central directory size', fail);
    directoryOffset = safe(z.getBigUint64(48, true), 'the central directory offset', fail);
    directoryEnd = record;
  } else if (count === MAX16 || directorySize === MAX32 || directoryOffset === MAX32) {
    fail('the end record defers to a zip64 record that is not there');
  }
  if (directoryOffset + directorySize !== directoryEnd) fail(`the central directory [${directoryOffset}, +${directorySize}) does not end where the end records start (byte ${directoryEnd})`);
  if (count * 46 > directorySize) fail(`${count} entries do not fit a central directory of ${directorySize} bytes`);

  const directory = source.view(directoryOffset, directorySize);
  const dv = dataView(directory);
  const entries: (ZipEntry & { localOffset: number; end: number })[] = [];
  let at = 0;
  for (let i = 0; i < count; i++) {
    if (at + 46 > directorySize || dv.getUint32(at, true) !== SIG.central) fail(`central directory entry ${i} is malformed`);
    const flags = dv.getUint16(at + 8, true);
    const method = dv.getUint16(at + 10, true);
    const crc = dv.getUint32(at + 16, true);
    const nameLength = dv.getUint16(at + 28, true), extraLength = dv.getUint16(at + 30, true), commentLength = dv.getUint16(at + 32, true);
    const next = at + 46 + nameLength + extraLength + commentLength;
    if (next > directorySize) fail(`central directory entry ${i} runs past the directory`);
    const nameBytes = directory.subarray(at + 46, at + 46 + nameLength);
    const entryName = new TextDecoder().decode(nameBytes);
    if (flags & 0x41) fail(`${JSON.stringify(entryName)} is encrypted`);
    if (method !== 0 && method !== 8) fail(`${JSON.stringify(entryName)} uses compression method ${method} (stored and deflate are read)`);
    if (dv.getUint16(at + 34, true) !== 0 && dv.getUint16(at + 34, true) !== MAX16) fail('a multi-disk archive');
    // Zip64 extra: the 64-bit values of the fields whose 32-bit value is all ones, in this order.
    const wide = zip64Values(directory.subarray(at + 46 + nameLength, at + 46 + nameLength + extraLength), fail);
    let w = 0;
    const pick = (narrow: number, what: string) => (narrow === MAX32 ? (wide[w] === undefined ? fail(`${JSON.stringify(entryName)}: no zip64 ${what}`) : wide[w++]) : narrow);
    const size = pick(dv.getUint32(at + 24, true), 'size');
    const compressedSize = pick(dv.getUint32(at + 20, true), 'compressed size');
    const localOffset = pick(dv.getUint32(at + 42, true), 'offset');
    const local = readLocal(source, localOffset, directoryOffset, entryName, nameBytes, { flags, method, crc, size, compressedSize }, fail);
    entries.push({ name: entryName, method, crc32: crc, compressedSize, size, dataOffset: local.dataOffset, localOffset, end: local.end });
    at = next;
  }
  if (at !== directorySize) fail(`the central directory holds ${directorySize - at} bytes after its ${count} entries`);
  // Entries, then the directory, edge to edge from byte 0.
  const byOffset = [...entries].sort((a, b) => a.localOffset - b.localOffset);
  let expected = 0;
  for (const e of byOffset) {
    if (e.localOffset !== expected) fail(`${JSON.stringify(e.name)} starts at byte ${e.localOffset}, expected ${expected} (bytes missing, overlapping or in between)`);
    expected = e.end;
  }
  if (expected !== directoryOffset) fail(`the entries end at byte ${expected}, the central directory starts at ${directoryOffset}`);
  return entries.map(({ name: n, method, crc32, compressedSize, size: s, dataOffset }) => ({ name: n, method, crc32, compressedSize, size: s, dataOffset }));
}

interface DirectoryFacts { flags: number; method: number; crc: number; size: number; compressedSize: number }

/** The local header at `offset`, checked against the directory: where the data starts and where the entry (data descriptor included) ends. */
function readLocal(source: ByteSource, offset: number, limit: number, name: string, nameBytes: Uint8Array, facts: DirectoryFacts, fail: (r: string) => never): { dataOffset: number; end: number } {
  const where = JSON.stringify(name);
  if (offset + 30 > limit) fail(`${where}: its local header lies outside the entries`);
  const head = dataView(source.view(offset, 30));
  if (head.getUint32(0, true) !== SIG.local) fail(`${where}: no local header where the directory points`);
  const flags = head.getUint16(6, true);
  const method = head.getUint16(8, true);
  const nameLength = head.getUint16(26, true), extraLength = head.getUint16(28, true);
  const dataOffset = offset + 30 + nameLength + extraLength;
  if (dataOffset > limit) fail(`${where}: its local header runs past the entries`);
  const rest = source.view(offset + 30, nameLength + extraLength);
  if (method !== facts.method || (flags & 0x08) !== (facts.flags & 0x08) || !sameBytes(rest.subarray(0, nameLength), nameBytes)) fail(`${where}: the local header disagrees with the central directory (name, method or flags)`);
  if (facts.method === 0 && facts.compressedSize !== facts.size) fail(`${where}: a stored entry of ${facts.size} bytes takes ${facts.compressedSize}`);
  const dataEnd = dataOffset + facts.compressedSize;
  if (dataEnd > limit) fail(`${where}: its data runs past the entries (the archive is truncated or its sizes are wrong)`);
  const wide = zip64Values(rest.subarray(nameLength), fail);
  const crc = head.getUint32(14, true);
  let compressed = head.getUint32(18, true), size = head.getUint32(22, true);
  if (size === MAX32 || compressed === MAX32) {
    if (wide.length < 2) fail(`${where}: no zip64 sizes in its local header`);
    [size, compressed] = wide;
  }
  if (!(facts.flags & 0x08)) {
    if (crc !== facts.crc || size !== facts.size || compressed !== facts.compressedSize) fail(`${where}: the local header disagrees with the central directory (CRC-32 or sizes)`);
    return { dataOffset, end: dataEnd };
  }
  // A data descriptor follows the data: an optional signature, the CRC-32 and both sizes (64-bit in zip64).
  const width = wide.length >= 2 ? 8 : 4;
  const probe = dataView(source.view(dataEnd, Math.min(4 + 4 + 2 * width, limit - dataEnd)));
  const signed = probe.byteLength >= 4 && probe.getUint32(0, true) === SIG.descriptor ? 4 : 0;
  const length = signed + 4 + 2 * width;
  if (probe.byteLength < length) fail(`${where}: its data descriptor is cut off`);
  const read = (at: number) => (width === 8 ? safe(probe.getBigUint64(at, true), 'a size', fail) : probe.getUint32(at, true));
  if (probe.getUint32(signed, true) !== facts.crc || read(signed + 4) !== facts.compressedSize || read(signed + 4 + width) !== facts.size) fail(`${where}: the data descriptor disagrees with the central directory`);
  return { dataOffset, end: dataEnd + length };
}

/** The 64-bit values of a zip64 extra field (header id 1) among `extra`'s fields, or none. */
function zip64Values(extra: Uint8Array, fail: (r: string) => never): number[] {
  const v = dataView(extra);
  for (let at = 0; at + 4 <= extra.length;) {
    const id = v.getUint16(at, true), length = v.getUint16(at + 2, true);
    if (at + 4 + length > extra.length) fail('an extra field runs past its header');
    if (id === 1) {
      const out: number[] = [];
      for (let k = 0; k + 8 <= length; k += 8) out.push(safe(v.getBigUint64(at + 4 + k, true), 'a zip64 value', fail));
      return out;
    }
    at += 4 + length;
  }
  return [];
}

function safe(value: bigint, what: string, fail: (r: string) => never): number {
  return value > BigInt(Number.MAX_SAFE_INTEGER) ? fail(`${what} ${value} is out of range`) : Number(value);
}

function u32(source: ByteSource, offset: number): number {
  return dataView(source.view(offset, 4)).getUint32(0, true);
}

function dataView(bytes: Uint8Array): DataView {
  return new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}
