import {
  Bool, Dictionary, Field, FixedSizeList, Float32, Float64, Int32, makeData, makeVector, Table, tableFromIPC, tableToIPC, Type, Utf8, vectorFromArray,
  type Data, type Vector,
} from 'apache-arrow';
import { ForestError } from './errors.js';
import { ndArraysOfForest, type NdArray, type NumericArray, type NumericDtype } from './columnar.js';
import type { PackedForest } from './packed.js';

/**
 * Apache Arrow IPC (the `.arrow` file format, and the stream format the service reads): a table
 * with one row per node in tree order. Columns: `tree` (per-row tree index) or `tree_id`
 * (per-row ids; runs of equal ids are trees when there is no `tree` column), `parent`, `reward`,
 * `visits`, `uncertainty`, `terminal` (bool or 0/1 integers), `embedding` (a fixed-size list of
 * float32 or float64). Arrow's own reader (the `apache-arrow` package) parses the container;
 * single-batch columns are typed-array views over the input bytes.
 */
export function decodeArrow(bytes: Uint8Array, source: string): Map<string, NdArray> {
  let table: Table;
  try {
    table = tableFromIPC(bytes);
  } catch (err) {
    throw new ForestError({}, `${source}: not a valid Arrow IPC file or stream: ${(err as Error).message}`);
  }
  const arrays = new Map<string, NdArray>();
  for (const field of table.schema.fields) {
    const vector = table.getChild(field.name)!;
    arrays.set(field.name, columnOf(vector, field.name, source));
  }
  if (arrays.size === 0) throw new ForestError({}, `${source}: not a valid Arrow IPC file or stream (no columns found)`);
  return arrays;
}

function columnOf(vector: Vector, name: string, source: string): NdArray {
  const fail = (reason: string): never => { throw new ForestError({ field: name }, `${source}: ${reason}`); };
  const type = vector.type;
  if (vector.nullCount > 0) {
    let row = 0;
    while (row < vector.length && vector.isValid(row)) row++;
    throw new ForestError({ node: row, field: name }, `${source}: null values are not allowed (row ${row} is null)`);
  }
  const n = vector.length;
  switch (type.typeId) {
    case Type.Int:
    case Type.Float: {
      const dtype = numericDtypeOf(type as unknown as { typeId: Type; bitWidth?: number; isSigned?: boolean; precision?: number });
      if (dtype === undefined) fail(`has Arrow type ${String(type)}, which is not read (integers, float32 and float64 are)`);
      return { kind: 'numeric', dtype: dtype!, shape: [n], data: valuesOf(vector.data, 1) };
    }
    case Type.Bool: {
      const out = new Uint8Array(n);
      let at = 0;
      for (const d of vector.data) {
        const bits = d.values as Uint8Array;
        for (let i = 0; i < d.length; i++) { const b = d.offset + i; out[at++] = (bits[b >> 3] >> (b & 7)) & 1; }
      }
      return { kind: 'numeric', dtype: 'bool', shape: [n], data: out };
    }
    case Type.Dictionary: {
      if (!isStringType((type as unknown as { dictionary: { typeId: Type } }).dictionary.typeId)) fail(`is a dictionary of ${String(type)}, expected strings`);
      // Per-row ids are usually dictionary-encoded: decode each distinct string once.
      const data = new Array<string>(n);
      let at = 0;
      for (const d of vector.data) {
        const words = [...(d.dictionary as Vector)].map(String);
        const indices = d.values as NumericArray;
        for (let i = 0; i < d.length; i++) data[at++] = words[Number(indices[i])];
      }
      return { kind: 'string', dtype: String(type), shape: [n], data };
    }
    case Type.Utf8:
    case Type.LargeUtf8: {
      const data = new Array<string>(n);
      let at = 0;
      for (const value of vector) data[at++] = String(value);
      return { kind: 'string', dtype: String(type), shape: [n], data };
    }
    case Type.FixedSizeList: {
      const list = type as unknown as { listSize: number; children: Field[] };
      const dim = list.listSize;
      const childType = list.children[0].type as unknown as { typeId: Type; precision?: number };
      const dtype = childType.typeId === Type.Float ? numericDtypeOf(childType) : undefined;
      if (dtype !== 'float32' && dtype !== 'float64') fail(`must be a fixed-size list of float32 or float64, got ${String(type)}`);
      const children = vector.data.map((d) => {
        const child = d.children[0] as Data;
        if (child.nullCount > 0) fail('null values inside the embedding lists are not allowed');
        return { data: child, length: d.length * dim };
      });
      return { kind: 'numeric', dtype: dtype!, shape: [n, dim], data: concatValues(children) };
    }
    default:
      return fail(`has Arrow type ${String(type)}, which is not a forest column type`);
  }
}

function isStringType(t: Type): boolean {
  return t === Type.Utf8 || t === Type.LargeUtf8;
}

function numericDtypeOf(type: { typeId: Type; bitWidth?: number; isSigned?: boolean; precision?: number }): NumericDtype | undefined {
  if (type.typeId === Type.Float) return type.precision === 1 ? 'float32' : type.precision === 2 ? 'float64' : undefined;
  if (type.typeId !== Type.Int) return undefined;
  return `${type.isSigned ? 'int' : 'uint'}${type.bitWidth}` as NumericDtype;
}

/** The values of a column's chunks: a view for one chunk, one copy to join several. */
function valuesOf(chunks: readonly Data[], width: number): NumericArray {
  return concatValues(chunks.map((d) => ({ data: d, length: d.length * width })));
}

/** Arrow slices fixed-width value buffers (and list children) with their Data, so values start at 0. */
function concatValues(parts: { data: Data; length: number }[]): NumericArray {
  const slices = parts.map((p) => (p.data.values as NumericArray).subarray(0, p.length) as NumericArray);
  if (slices.length === 1) return slices[0];
  const Ctor = slices[0].constructor as new (n: number) => NumericArray;
  let n = 0;
  for (const s of slices) n += s.length;
  const out = new Ctor(n);
  let at = 0;
  for (const s of slices) { (out as Float64Array).set(s as Float64Array, at); at += s.length; }
  return out;
}

/** The forest as an Arrow table: per-row `tree` and `tree_id`, the node columns, `embedding` as a fixed-size list. */
export function forestToArrowTable(forest: PackedForest): Table {
  const cols = ndArraysOfForest(forest);
  const n = forest.nodeCount;
  const bits = new Uint8Array((n + 7) >> 3);
  for (let row = 0; row < n; row++) if (forest.terminal[row]) bits[row >> 3] |= 1 << (row & 7);
  const f32 = forest.embedding instanceof Float32Array;
  const itemType = f32 ? new Float32() : new Float64();
  const embedding = makeData({
    type: new FixedSizeList(forest.dim, new Field('item', itemType, false)),
    length: n, nullCount: 0,
    child: makeData({ type: itemType, length: n * forest.dim, nullCount: 0, data: forest.embedding as Float32Array & Float64Array }),
  });
  return new Table({
    tree: makeVector(new Int32Array(forest.nodeTree)),
    tree_id: makeVector(makeData({ type: new Dictionary(new Utf8(), new Int32()), length: n, nullCount: 0, data: new Int32Array(forest.nodeTree), dictionary: vectorFromArray([...forest.treeIds], new Utf8()) })),
    parent: makeVector(cols.get('parent')!.data as Int32Array),
    reward: makeVector(forest.reward),
    visits: makeVector(forest.visits),
    uncertainty: makeVector(forest.uncertainty),
    terminal: makeVector(makeData({ type: new Bool(), length: n, nullCount: 0, data: bits })),
    embedding: makeVector(embedding),
  });
}

/** Encodes a forest as Arrow IPC: `file` (`.arrow`) or `stream` (what the service reads). */
export function encodeArrow(forest: PackedForest, format: 'file' | 'stream' = 'file'): Uint8Array {
  return tableToIPC(forestToArrowTable(forest), format);
}
