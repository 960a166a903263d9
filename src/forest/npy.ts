import { sharedArray } from '../util/shared.js';
import { ForestError } from './errors.js';
import type { NdArray, NumericArray, NumericDtype } from './columnar.js';

/**
 * numpy's `.npy` array format (what `numpy.save` writes, and each entry of an `.npz`): a magic
 * string, a version, a little header that is a Python dict literal
 * `{'descr': '<f4', 'fortran_order': False, 'shape': (N, D), }`, then the raw values. The header
 * is parsed strictly (exactly those three keys, literal values only); object arrays (pickles) and
 * big-endian data are refused with the array named.
 */
const MAGIC = [0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59]; // \x93NUMPY

const NUMERIC: Record<string, { dtype: NumericDtype; bytes: number }> = {
  b1: { dtype: 'bool', bytes: 1 }, u1: { dtype: 'uint8', bytes: 1 }, i1: { dtype: 'int8', bytes: 1 },
  u2: { dtype: 'uint16', bytes: 2 }, i2: { dtype: 'int16', bytes: 2 },
  u4: { dtype: 'uint32', bytes: 4 }, i4: { dtype: 'int32', bytes: 4 },
  u8: { dtype: 'uint64', bytes: 8 }, i8: { dtype: 'int64', bytes: 8 },
  f4: { dtype: 'float32', bytes: 4 }, f8: { dtype: 'float64', bytes: 8 },
};

const CODE_OF: Record<NumericDtype, string> = {
  bool: '|b1', uint8: '|u1', int8: '|i1', uint16: '<u2', int16: '<i2', uint32: '<u4', int32: '<i4',
  uint64: '<u8', int64: '<i8', float32: '<f4', float64: '<f8',
};

export interface NpyHeader {
  descr: string;
  fortranOrder: boolean;
  shape: number[];
  /** Bytes before the data. */
  dataOffset: number;
}

/** Reads and checks the header of one `.npy` (`name` is the array's name in errors). */
export function parseNpyHeader(bytes: Uint8Array, name: string): NpyHeader {
  const bad = (reason: string): never => { throw new ForestError({ field: name }, `not a valid .npy array: ${reason}`); };
  if (bytes.length < 10 || MAGIC.some((b, i) => bytes[i] !== b)) bad('missing the \\x93NUMPY magic');
  const major = bytes[6];
  if (major !== 1 && major !== 2 && major !== 3) bad(`unsupported format version ${major}.${bytes[7]}`);
  const lengthBytes = major === 1 ? 2 : 4;
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (bytes.length < 8 + lengthBytes) bad('the header is truncated');
  const headerLength = lengthBytes === 2 ? view.getUint16(8, true) : view.getUint32(8, true);
  if (headerLength > MAX_NPY_HEADER_BYTES) bad(`the header is ${headerLength} bytes (at most ${MAX_NPY_HEADER_BYTES} are read)`);
  const start = 8 + lengthBytes;
  if (start + headerLength > bytes.length) bad('the header is truncated');
  const text = new TextDecoder(major === 3 ? 'utf-8' : 'latin1').decode(bytes.subarray(start, start + headerLength));
  const m = /^\{\s*(.*?)\s*\}\s*$/s.exec(text);
  if (m === null) bad(`the header is not a dict literal: ${JSON.stringify(text.slice(0, 80))}`);
  const fields = new Map<string, string>();
  const entry = /\s*'(descr|fortran_order|shape)'\s*:\s*('[^']*'|True|False|\(\s*(?:\d+\s*,\s*)*(?:\d+\s*)?\))\s*(?:,|$)/y;
  const body = m![1];
  let at = 0;
  while (at < body.length) {
    entry.lastIndex = at;
    const e = entry.exec(body);
    if (e === null) bad(`unexpected header text ${JSON.stringify(body.slice(at, at + 40))}`);
    if (fields.has(e![1])) bad(`the header repeats '${e![1]}'`);
    fields.set(e![1], e![2]);
    at = entry.lastIndex;
  }
  for (const k of ['descr', 'fortran_order', 'shape']) if (!fields.has(k)) bad(`the header has no '${k}'`);
  const descr = fields.get('descr')!;
  if (!descr.startsWith("'")) bad(`'descr' must be a string, got ${descr}`);
  const fortran = fields.get('fortran_order')!;
  if (fortran !== 'True' && fortran !== 'False') bad(`'fortran_order' must be True or False, got ${fortran}`);
  const shapeText = fields.get('shape')!;
  if (!shapeText.startsWith('(')) bad(`'shape' must be a tuple, got ${shapeText}`);
  const shape = (shapeText.match(/\d+/g) ?? []).map(Number);
  if (shape.some((d) => !Number.isSafeInteger(d))) bad(`'shape' ${shapeText} is too large`);
  return { descr: descr.slice(1, -1), fortranOrder: fortran === 'True', shape, dataOffset: start + headerLength };
}

/** What an `.npy` header says about its data: type, count and byte length (checked to be representable). */
export interface NpyLayout {
  header: NpyHeader;
  kind: 'numeric' | 'string';
  /** Numeric arrays: the element type. */
  dtype?: NumericDtype;
  /** Strings: `U` (UTF-32 code points) or `S` (bytes), and characters per item. */
  stringKind?: 'U' | 'S';
  itemChars?: number;
  count: number;
  /** Bytes of data after the header: exactly what the array needs. */
  dataBytes: number;
}

/** The longest header read: numpy writes a few hundred bytes and refuses more than 10000 by default. */
export const MAX_NPY_HEADER_BYTES = 65536;

/**
 * The header of one `.npy` and what it declares (`bytes` holds at least the header; `name` is
 * the array's name in errors). `maxDataBytes`: a declared size above it is refused here, before
 * anything is allocated for it.
 */
export function npyLayout(bytes: Uint8Array, name: string, maxDataBytes = Number.MAX_SAFE_INTEGER): NpyLayout {
  const h = parseNpyHeader(bytes, name);
  const fail = (reason: string): never => { throw new ForestError({ field: name }, reason); };
  if (h.fortranOrder && h.shape.filter((d) => d > 1).length > 1) fail(`is stored in Fortran (column-major) order; save a C-ordered array (numpy.ascontiguousarray)`);
  const m = /^([<>|=])([a-zA-Z])(\d+)$/.exec(h.descr);
  if (m === null) fail(`has dtype '${h.descr}', which is not a plain numeric or string type (object arrays are not read)`);
  const [, order, kind, sizeText] = m!;
  const size = Number(sizeText);
  const key = `${kind}${size}`;
  if (order === '>' && size > 1) fail(`has big-endian dtype '${h.descr}'; save it little-endian (array.astype('<${key}'))`);
  let itemBytes: number;
  let layout: Omit<NpyLayout, 'count' | 'dataBytes'>;
  if (kind === 'U' || kind === 'S') {
    itemBytes = kind === 'U' ? 4 * size : size;
    layout = { header: h, kind: 'string', stringKind: kind, itemChars: size };
  } else {
    const t = NUMERIC[key];
    if (t === undefined) fail(`has dtype '${h.descr}', which is not read (bool, integers, float32 and float64 are)`);
    itemBytes = t.bytes;
    layout = { header: h, kind: 'numeric', dtype: t.dtype };
  }
  // The product of the dimensions, stopped as soon as it passes what may be declared (an empty dimension makes it 0).
  let count = h.shape.includes(0) ? 0 : 1;
  for (const d of count === 0 ? [] : h.shape) {
    count *= d;
    if (count * itemBytes > maxDataBytes) fail(`declares shape (${h.shape.join(', ')}) of '${h.descr}': more than the ${maxDataBytes} bytes there are`);
  }
  return { ...layout, count, dataBytes: count * itemBytes };
}

/** The array of `layout` from its data (exactly `layout.dataBytes` bytes; numeric data viewed in place when aligned). */
export function npyArray(layout: NpyLayout, data: Uint8Array, name: string): NdArray {
  if (data.length !== layout.dataBytes) throw new ForestError({ field: name }, `holds ${data.length} data bytes, its header declares ${layout.dataBytes}`);
  const { shape, descr } = layout.header;
  if (layout.kind === 'string') return { kind: 'string', dtype: descr, shape, data: decodeFixedStrings(data, layout.count, layout.itemChars!, layout.stringKind!, name) };
  return { kind: 'numeric', dtype: layout.dtype!, shape, data: typedView(layout.dtype!, data, layout.count) };
}

/**
 * Decodes one whole `.npy` (header and data, nothing after). Numeric data is a typed-array view
 * over `bytes` when it is aligned for its type, else one copy. Fixed-width strings (`<U`, `|S`)
 * become JS strings; text that is not valid Unicode is refused.
 */
export function decodeNpy(bytes: Uint8Array, name: string): NdArray {
  const layout = npyLayout(bytes, name, bytes.length);
  const body = bytes.subarray(layout.header.dataOffset);
  if (body.length < layout.dataBytes) throw new ForestError({ field: name }, `is truncated: ${body.length} data bytes, expected ${layout.dataBytes}`);
  return npyArray(layout, body, name);
}

const UTF8 = new TextDecoder('utf-8', { fatal: true });

/** Fixed-width strings, trailing NULs dropped; a code point that is not a Unicode scalar value, or bytes that are not UTF-8, name the row. */
function decodeFixedStrings(body: Uint8Array, count: number, size: number, kind: 'U' | 'S', name: string): string[] {
  const out: string[] = new Array(count);
  const view = new DataView(body.buffer, body.byteOffset, body.byteLength);
  const bad = (i: number, what: string): never => { throw new ForestError({ node: i, field: name }, `item ${i} is not valid text: ${what}`); };
  for (let i = 0; i < count; i++) {
    if (kind === 'S') {
      const item = body.subarray(i * size, (i + 1) * size);
      let end = item.length;
      while (end > 0 && item[end - 1] === 0) end--;
      try {
        out[i] = UTF8.decode(item.subarray(0, end));
      } catch {
        bad(i, 'its bytes are not UTF-8');
      }
    } else {
      let end = size;
      while (end > 0 && view.getUint32((i * size + end - 1) * 4, true) === 0) end--;
      let s = '';
      for (let c = 0; c < end; c++) {
        const code = view.getUint32((i * size + c) * 4, true);
        if (code > 0x10ffff || (code >= 0xd800 && code <= 0xdfff)) bad(i, `code point ${code} (0x${code.toString(16)}) is not a Unicode character`);
        s += String.fromCodePoint(code);
      }
      out[i] = s;
    }
  }
  return out;
}

const CTOR = {
  bool: Uint8Array, uint8: Uint8Array, int8: Int8Array, uint16: Uint16Array, int16: Int16Array, uint32: Uint32Array,
  int32: Int32Array, uint64: BigUint64Array, int64: BigInt64Array, float32: Float32Array, float64: Float64Array,
} as const;

/** A typed array of `count` values over `bytes` (a view when aligned, else one copy). */
export function typedView(dtype: NumericDtype, bytes: Uint8Array, count: number): NumericArray {
  const Ctor = CTOR[dtype];
  const width = Ctor.BYTES_PER_ELEMENT;
  let source = bytes;
  if (bytes.byteOffset % width !== 0) {
    // Misaligned: one copy, into shared memory so CPU scoring threads read it in place.
    source = sharedArray(Uint8Array, count * width);
    source.set(bytes.subarray(0, count * width));
  }
  return new Ctor(source.buffer as ArrayBuffer, source.byteOffset, count) as NumericArray;
}

/** Encodes one array as `.npy` version 1.0 (header padded so the data starts on a 64-byte boundary). */
export function encodeNpy(array: NdArray): Uint8Array[] {
  const shape = `(${array.shape.join(', ')}${array.shape.length === 1 ? ',' : ''})`;
  let descr: string;
  let data: Uint8Array;
  if (array.kind === 'numeric') {
    descr = CODE_OF[array.dtype];
    data = new Uint8Array(array.data.buffer, array.data.byteOffset, array.data.byteLength);
  } else {
    const width = Math.max(1, ...array.data.map((s) => [...s].length));
    descr = `<U${width}`;
    const out = new Uint8Array(array.data.length * width * 4);
    const view = new DataView(out.buffer);
    array.data.forEach((s, i) => { let c = 0; for (const ch of s) view.setUint32((i * width + c++) * 4, ch.codePointAt(0)!, true); });
    data = out;
  }
  let header = `{'descr': '${descr}', 'fortran_order': False, 'shape': ${shape}, }`;
  const total = Math.ceil((10 + header.length + 1) / 64) * 64;
  header = header.padEnd(total - 10 - 1, ' ') + '\n';
  const head = new Uint8Array(10 + header.length);
  head.set(MAGIC, 0);
  head[6] = 1;
  head[7] = 0;
  new DataView(head.buffer).setUint16(8, header.length, true);
  for (let i = 0; i < header.length; i++) head[10 + i] = header.charCodeAt(i);
  return [head, data];
}
