import * as zlib from 'node:zlib';

/**
 * CRC-32 (the zip checksum, polynomial 0xEDB88320) of `data`, continuing from `previous` (the
 * CRC of the bytes before it). zlib's native one where Node has it (20.15 and later, several
 * GB/s), else a table-driven one.
 */
export function crc32(data: Uint8Array, previous = 0): number {
  // Nothing to add (and Node 20's zlib.crc32 answers 0 for an empty view of a SharedArrayBuffer).
  if (data.length === 0) return previous >>> 0;
  return native !== undefined ? native(data, previous) >>> 0 : tableCrc32(data, previous);
}

const native = (zlib as unknown as { crc32?: (data: Uint8Array, value?: number) => number }).crc32;

let table: Uint32Array | undefined;

/** The table-driven CRC-32 (exported for the test that checks it against zlib's). */
export function tableCrc32(data: Uint8Array, previous = 0): number {
  if (table === undefined) {
    table = new Uint32Array(256);
    for (let n = 0; n < 256; n++) {
      let c = n;
      for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
      table[n] = c >>> 0;
    }
  }
  let crc = ~previous >>> 0;
  for (let i = 0; i < data.length; i++) crc = table[(crc ^ data[i]) & 0xff] ^ (crc >>> 8);
  return ~crc >>> 0;
}
