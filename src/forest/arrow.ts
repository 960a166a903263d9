import { sharedArray } from '../util/shared.js';
import { readArrowIpc, typeName, type ArrowBatch, type ArrowField, type ArrowIpc, type ArrowNode } from './arrow-ipc.js';
import { ForestError } from './errors.js';
import type { NdArray, NumericArray, NumericDtype } from './columnar.js';
import { typedView } from './npy.js';

/**
 * Apache Arrow IPC input (the `.arrow` file format, and the stream format the service reads): a
 * table with one row per node in tree order. Columns: `tree` (per-row tree index) or `tree_id`
 * (per-row ids, plain or dictionary-encoded; runs of equal ids are trees when there is no `tree`
 * column), `parent`, `reward`, `visits`, `uncertainty`, `terminal` (bool or 0/1 integers),
 * `embedding` (a fixed-size list of float32 or float64). The container is checked by
 * `arrow-ipc.ts`; here every column's declared length is checked against the bytes its buffers
 * hold before anything reads them, dictionary indices against their dictionary, and text as
 * UTF-8. A single batch's numeric columns are typed-array views over the input bytes.
 */
export function decodeArrow(bytes: Uint8Array, source: string): Map<string, NdArray> {
  const ipc = readArrowIpc(bytes, source);
  const arrays = new Map<string, NdArray>();
  const fields = ipc.fields;
  if (fields.length === 0) throw new ForestError({}, `${source}: the Arrow schema has no columns`);
  const seen = new Set<string>();
  for (const field of fields) {
    if (seen.has(field.name)) throw new ForestError({ field: field.name }, `${source}: the Arrow schema has this column twice`);
    seen.add(field.name);
    checkReadable(field, source);
  }
  const parts = fields.map(() => [] as NdArray[]);
  const dictionaries = new Map<number, string[]>();
  for (const message of ipc.messages) {
    if (message.kind === 'dictionary') {
      readDictionary(message, ipc, dictionaries, source);
      continue;
    }
    const cursor = new Cursor(message.batch, source);
    for (let f = 0; f < fields.length; f++) parts[f].push(readColumn(fields[f], cursor, message.batch.length, dictionaries, source));
    cursor.finish();
  }
  for (let f = 0; f < fields.length; f++) arrays.set(fields[f].name, joinParts(fields[f], parts[f]));
  return arrays;
}

/** Refuses, naming the column, a type the forest schema has no use for (before any batch is read). */
function checkReadable(field: ArrowField, source: string): void {
  const fail = (reason: string): never => { throw new ForestError({ field: field.name }, `${source}: ${reason}`); };
  const t = field.type;
  if (field.dictionary) {
    if (t.kind !== 'utf8') fail(`is a dictionary of ${typeName(field)}, expected strings`);
    checkInt(field.dictionary.indexType.bitWidth, fail);
    return;
  }
  if (t.kind === 'int') checkInt(t.bitWidth, fail);
  else if (t.kind === 'float') { if (t.precision !== 1 && t.precision !== 2) fail(`has Arrow type ${typeName(field)}, which is not read (integers, float32 and float64 are)`); }
  else if (t.kind === 'fixed-size-list') {
    const child = t.child;
    if (child === undefined || child.dictionary || child.type.kind !== 'float' || (child.type.precision !== 1 && child.type.precision !== 2)) fail(`must be a fixed-size list of float32 or float64, got ${typeName(field)}`);
    if (t.listSize < 0) fail(`has list size ${t.listSize}`);
  } else if (t.kind === 'other') fail(`has Arrow type ${typeName(field)}, which is not a forest column type`);
}

function checkInt(bitWidth: number, fail: (reason: string) => never): void {
  if (bitWidth !== 8 && bitWidth !== 16 && bitWidth !== 32 && bitWidth !== 64) fail(`has integer bit width ${bitWidth} (8, 16, 32 or 64)`);
}

/** Hands out a batch's field nodes and buffers in schema order (depth first), failing past their end. */
class Cursor {
  private node = 0;
  private buffer = 0;
  constructor(private readonly batch: ArrowBatch, private readonly source: string) {}

  nextNode(field: string): ArrowNode {
    const n = this.batch.nodes[this.node++];
    if (n === undefined) throw new ForestError({ field }, `${this.source}: the record batch has fewer field nodes than the schema has columns`);
    return n;
  }

  /** The next buffer's bytes, checked to hold at least `needed` bytes. */
  nextBuffer(field: string, needed: number, what: string): Uint8Array {
    const b = this.batch.buffers[this.buffer++];
    if (b === undefined) throw new ForestError({ field }, `${this.source}: the record batch has fewer buffers than its columns need`);
    if (b.length < needed) throw new ForestError({ field }, `${this.source}: the ${what} buffer holds ${b.length} bytes, the column's declared length needs ${needed}`);
    return this.batch.body.subarray(b.offset, b.offset + b.length);
  }

  finish(): void {
    if (this.node !== this.batch.nodes.length || this.buffer !== this.batch.buffers.length) {
      throw new ForestError({}, `${this.source}: the record batch has ${this.batch.nodes.length} field nodes and ${this.batch.buffers.length} buffers, its schema uses ${this.node} and ${this.buffer}`);
    }
  }
}

const WIDTH: Record<number, number> = { 8: 1, 16: 2, 32: 4, 64: 8 };

/** One column of one batch (`rows` is the batch's length, which every column must have). */
function readColumn(field: ArrowField, cursor: Cursor, rows: number, dictionaries: Map<number, string[]>, source: string): NdArray {
  const name = field.name;
  const fail = (reason: string): never => { throw new ForestError({ field: name }, `${source}: ${reason}`); };
  const node = cursor.nextNode(name);
  if (node.length !== rows) fail(`has ${node.length} rows in a record batch of ${rows}`);
  const validity = cursor.nextBuffer(name, 0, 'validity');
  if (node.nullCount > 0) refuseNulls(node, validity, name, source);
  const t = field.type;
  if (field.dictionary) {
    const { bitWidth, signed } = field.dictionary.indexType;
    const indices = intView(cursor.nextBuffer(name, rows * WIDTH[bitWidth], 'index'), bitWidth, signed, rows);
    const words = dictionaries.get(field.dictionary.id) ?? [];
    if (rows > 0 && !dictionaries.has(field.dictionary.id)) fail(`refers to dictionary ${field.dictionary.id}, which the stream does not hold before this batch`);
    const data = new Array<string>(rows);
    for (let i = 0; i < rows; i++) {
      const k = Number(indices[i]);
      if (!(k >= 0 && k < words.length)) throw new ForestError({ node: i, field: name }, `${source}: row ${i} has dictionary index ${String(indices[i])}, the dictionary holds ${words.length} strings`);
      data[i] = words[k];
    }
    return { kind: 'string', dtype: typeName(field), shape: [rows], data };
  }
  switch (t.kind) {
    case 'int':
      return { kind: 'numeric', dtype: intDtype(t.bitWidth, t.signed), shape: [rows], data: intView(cursor.nextBuffer(name, rows * WIDTH[t.bitWidth], 'value'), t.bitWidth, t.signed, rows) };
    case 'float': {
      const dtype = t.precision === 1 ? 'float32' : 'float64';
      return { kind: 'numeric', dtype, shape: [rows], data: typedView(dtype, cursor.nextBuffer(name, rows * (dtype === 'float32' ? 4 : 8), 'value'), rows) };
    }
    case 'bool': {
      const bits = cursor.nextBuffer(name, Math.ceil(rows / 8), 'value');
      const out = sharedArray(Uint8Array, rows);
      for (let i = 0; i < rows; i++) out[i] = (bits[i >> 3] >> (i & 7)) & 1;
      return { kind: 'numeric', dtype: 'bool', shape: [rows], data: out };
    }
    case 'utf8':
      return { kind: 'string', dtype: typeName(field), shape: [rows], data: readStrings(cursor, name, rows, t.large, source) };
    case 'fixed-size-list': {
      const child = t.child!;
      const dim = t.listSize;
      const childNode = cursor.nextNode(name);
      if (childNode.length !== rows * dim) fail(`holds ${childNode.length} list values, expected ${rows} rows × ${dim}`);
      const childValidity = cursor.nextBuffer(name, 0, 'validity');
      if (childNode.nullCount > 0) refuseNulls(childNode, childValidity, name, source, 'null values inside the embedding lists are not allowed');
      const dtype = child.type.kind === 'float' && child.type.precision === 1 ? 'float32' : 'float64';
      const values = cursor.nextBuffer(name, rows * dim * (dtype === 'float32' ? 4 : 8), 'value');
      return { kind: 'numeric', dtype, shape: [rows, dim], data: typedView(dtype, values, rows * dim) };
    }
    default:
      return fail(`has Arrow type ${typeName(field)}, which is not a forest column type`);
  }
}

/** Nulls are never allowed: names the first null row when the bitmap shows it. */
function refuseNulls(node: ArrowNode, validity: Uint8Array, field: string, source: string, reason = 'null values are not allowed'): never {
  const rows = Math.min(node.length, validity.length * 8);
  let row = 0;
  while (row < rows && ((validity[row >> 3] >> (row & 7)) & 1) === 1) row++;
  if (row < rows) throw new ForestError({ node: row, field }, `${source}: ${reason} (row ${row} is null)`);
  throw new ForestError({ field }, `${source}: ${reason} (the column declares ${node.nullCount} nulls)`);
}

function intDtype(bitWidth: number, signed: boolean): NumericDtype {
  return `${signed ? 'int' : 'uint'}${bitWidth}` as NumericDtype;
}

function intView(bytes: Uint8Array, bitWidth: number, signed: boolean, rows: number): NumericArray {
  return typedView(intDtype(bitWidth, signed), bytes, rows);
}

const UTF8 = new TextDecoder('utf-8', { fatal: true });

/** A Utf8 (int32 offsets) or LargeUtf8 (int64 offsets) column: offsets checked to rise within the data. */
function readStrings(cursor: Cursor, name: string, rows: number, large: boolean, source: string): string[] {
  // Zero rows may come without offsets; otherwise rows + 1 of them.
  const count = rows > 0 ? rows + 1 : 0;
  const offsets = typedView(large ? 'int64' : 'int32', cursor.nextBuffer(name, count * (large ? 8 : 4), 'offset'), count);
  const data = cursor.nextBuffer(name, 0, 'data');
  const out = new Array<string>(rows);
  for (let i = 0; i < rows; i++) {
    const start = Number(offsets[i]), end = Number(offsets[i + 1]);
    if (!(start >= 0 && start <= end && end <= data.length)) throw new ForestError({ node: i, field: name }, `${source}: row ${i}'s text lies at [${start}, ${end}), outside the ${data.length} bytes of string data`);
    try {
      out[i] = UTF8.decode(data.subarray(start, end));
    } catch {
      throw new ForestError({ node: i, field: name }, `${source}: row ${i} is not valid UTF-8 text`);
    }
  }
  return out;
}

/** A dictionary batch: one Utf8 column, replacing (or, as a delta, extending) dictionary `id`. */
function readDictionary(message: Extract<ArrowIpc['messages'][number], { kind: 'dictionary' }>, ipc: ArrowIpc, dictionaries: Map<number, string[]>, source: string): void {
  const field = ipc.fields.find((f) => f.dictionary?.id === message.id);
  if (field === undefined) throw new ForestError({}, `${source}: a dictionary batch has id ${message.id}, which no column uses`);
  const cursor = new Cursor(message.batch, source);
  const node = cursor.nextNode(field.name);
  if (node.length !== message.batch.length) throw new ForestError({ field: field.name }, `${source}: the dictionary has ${node.length} entries in a batch of ${message.batch.length}`);
  const validity = cursor.nextBuffer(field.name, 0, 'validity');
  if (node.nullCount > 0) refuseNulls(node, validity, field.name, source, 'null values in the dictionary are not allowed');
  const type = field.type as { kind: 'utf8'; large: boolean };
  const words = readStrings(cursor, field.name, node.length, type.large, source);
  cursor.finish();
  const before = dictionaries.get(message.id);
  dictionaries.set(message.id, message.isDelta && before ? [...before, ...words] : words);
}

/** One array per column: the batch's own for one batch (views), one copy joining several. */
function joinParts(field: ArrowField, parts: NdArray[]): NdArray {
  if (parts.length === 1) return parts[0];
  const isList = field.type.kind === 'fixed-size-list' && !field.dictionary;
  const rows = parts.reduce((n, p) => n + p.shape[0], 0);
  const shape = isList ? [rows, (field.type as { listSize: number }).listSize] : [rows];
  if (parts.length === 0) {
    if (field.dictionary || field.type.kind === 'utf8') return { kind: 'string', dtype: typeName(field), shape, data: [] };
    const dtype = emptyDtype(field);
    return { kind: 'numeric', dtype, shape, data: typedView(dtype, new Uint8Array(0), 0) };
  }
  if (parts[0].kind === 'string') return { kind: 'string', dtype: parts[0].dtype, shape, data: parts.flatMap((p) => p.data as string[]) };
  const first = parts[0] as Extract<NdArray, { kind: 'numeric' }>;
  const Ctor = first.data.constructor as unknown as { new (b: ArrayBufferLike, o: number, n: number): NumericArray; BYTES_PER_ELEMENT: number };
  const total = parts.reduce((n, p) => n + p.data.length, 0);
  const out = new Ctor(sharedArray(Uint8Array, total * Ctor.BYTES_PER_ELEMENT).buffer, 0, total);
  let at = 0;
  for (const p of parts) { (out as Float64Array).set(p.data as Float64Array, at); at += p.data.length; }
  return { kind: 'numeric', dtype: first.dtype, shape, data: out };
}

function emptyDtype(field: ArrowField): NumericDtype {
  const t = field.type;
  if (t.kind === 'int') return intDtype(t.bitWidth, t.signed);
  if (t.kind === 'bool') return 'bool';
  if (t.kind === 'float') return t.precision === 1 ? 'float32' : 'float64';
  const child = t.kind === 'fixed-size-list' ? t.child?.type : undefined;
  return child?.kind === 'float' && child.precision === 1 ? 'float32' : 'float64';
}
