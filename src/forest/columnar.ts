import { describeValue, ForestError, type ForestErrorLocation } from './errors.js';
import { packColumns, type ForestColumns, type PackedForest } from './packed.js';

/**
 * The columnar forest shared by the `.npz` and Arrow IPC containers: one row per node over all
 * trees in tree order. Trees are given by `tree_offset` (T+1 row offsets), or by a per-row `tree`
 * index, or (neither given) by runs of equal per-row `tree_id`s. `parent` is tree-local (−1 for
 * roots); `embedding` is N × D, float32 or float64; `tree_id` is optional (T strings, or one per
 * row, equal within a tree). Validation is `packColumns`'s, so errors read as for JSON.
 */
export const COLUMN_NAMES = ['tree_offset', 'tree', 'tree_id', 'parent', 'reward', 'visits', 'uncertainty', 'terminal', 'embedding'] as const;
export type ColumnName = (typeof COLUMN_NAMES)[number];

export type NumericDtype = 'bool' | 'int8' | 'uint8' | 'int16' | 'uint16' | 'int32' | 'uint32' | 'int64' | 'uint64' | 'float32' | 'float64';
export type NumericArray = Uint8Array | Int8Array | Int16Array | Uint16Array | Int32Array | Uint32Array | BigInt64Array | BigUint64Array | Float32Array | Float64Array;

/** One array read from a container: numbers as a typed array over its (row-major) values, or strings. */
export type NdArray =
  | { kind: 'numeric'; dtype: NumericDtype; shape: number[]; data: NumericArray }
  | { kind: 'string'; dtype: string; shape: number[]; data: string[] };

const INTEGER_DTYPES: readonly NumericDtype[] = ['int8', 'uint8', 'int16', 'uint16', 'int32', 'uint32', 'int64', 'uint64'];
const FLOAT_DTYPES: readonly NumericDtype[] = ['float32', 'float64'];

/** Validates named arrays from a container (`source` names it in errors) and packs them. */
export function packNdArrays(arrays: ReadonlyMap<string, NdArray>, source: string): PackedForest {
  return packColumns(columnsFromNdArrays(arrays, source));
}

/** Dtype and shape checks, and conversion to the packed column types (views where the type already fits). */
export function columnsFromNdArrays(arrays: ReadonlyMap<string, NdArray>, source: string): ForestColumns {
  for (const name of arrays.keys()) {
    if (!(COLUMN_NAMES as readonly string[]).includes(name)) {
      throw new ForestError({ field: name }, `${source}: unknown column (columns: ${COLUMN_NAMES.join(', ')})`);
    }
  }
  const fail = (field: string, reason: string): never => { throw new ForestError({ field }, `${source}: ${reason}`); };
  const numeric = (name: ColumnName, allowed: readonly NumericDtype[], what: string) => {
    const a = arrays.get(name);
    if (a === undefined) return undefined;
    if (a.kind !== 'numeric' || !allowed.includes(a.dtype)) fail(name, `must be ${what}, got dtype ${a.dtype}`);
    return a as Extract<NdArray, { kind: 'numeric' }>;
  };
  const vector = (name: ColumnName, a: { shape: number[] } | undefined) => {
    if (a !== undefined && a.shape.length !== 1) fail(name, `must be 1-D, got shape (${a.shape.join(', ')})`);
  };

  const parentArr = numeric('parent', INTEGER_DTYPES, 'integers');
  if (parentArr === undefined) fail('parent', 'the column is required');
  vector('parent', parentArr);
  const nodeCount = parentArr!.shape[0];

  // Trees.
  const offsetArr = numeric('tree_offset', INTEGER_DTYPES, 'integers');
  const treeArr = numeric('tree', INTEGER_DTYPES, 'integers');
  const idArr = arrays.get('tree_id');
  if (idArr !== undefined && idArr.kind !== 'string') fail('tree_id', `must be strings, got dtype ${idArr.dtype}`);
  vector('tree_offset', offsetArr);
  vector('tree', treeArr);
  vector('tree_id', idArr);
  if (offsetArr && treeArr) fail('tree', 'give either "tree_offset" or "tree", not both');
  let treeOffset: Int32Array;
  if (offsetArr) treeOffset = int32Column(offsetArr.data, 'tree_offset', () => ({ field: 'tree_offset' }), source);
  else if (treeArr) treeOffset = offsetsFromTreeIndex(treeArr.data, nodeCount, source);
  else if (idArr && idArr.shape[0] === nodeCount) treeOffset = offsetsFromIdRuns(idArr.data as string[]);
  else fail('tree_offset', 'the column is required (or a per-row "tree" index, or a per-row "tree_id")');
  const treeCount = treeOffset!.length - 1;
  if (treeCount < 0) fail('tree_offset', 'must have T+1 entries (T trees), got none');
  if (offsetArr) checkTreeOffsets(treeOffset!, nodeCount, source);
  const locate = locator(treeOffset!, nodeCount);

  let treeIds: string[];
  if (idArr === undefined) treeIds = Array.from({ length: treeCount }, (_, t) => String(t));
  else treeIds = treeIdsOf(idArr.data as string[], treeOffset!, nodeCount, source);

  const parent = int32Column(parentArr!.data, 'parent', (row) => ({ ...locate(row), field: 'parent' }), source);
  const reward = float64Column(numeric('reward', [...FLOAT_DTYPES, ...INTEGER_DTYPES], 'numbers'), nodeCount, 'reward', 0, source);
  const visits = float64Column(numeric('visits', [...FLOAT_DTYPES, ...INTEGER_DTYPES], 'numbers'), nodeCount, 'visits', 0, source);
  const uncertainty = float64Column(numeric('uncertainty', [...FLOAT_DTYPES, ...INTEGER_DTYPES], 'numbers'), nodeCount, 'uncertainty', 0, source);
  const terminal = terminalColumn(numeric('terminal', ['bool', ...INTEGER_DTYPES], 'booleans or 0/1 integers'), nodeCount, locate, source);

  const embArr = numeric('embedding', FLOAT_DTYPES, 'float32 or float64');
  let dim = 0;
  let embedding: Float32Array | Float64Array = new Float64Array(0);
  if (embArr !== undefined) {
    if (embArr.shape.length !== 2) fail('embedding', `must be 2-D (nodes × dim), got shape (${embArr.shape.join(', ')})`);
    if (embArr.shape[0] !== nodeCount) fail('embedding', `has ${embArr.shape[0]} rows, expected ${nodeCount} (one per node)`);
    dim = embArr.shape[1];
    embedding = embArr.data as Float32Array | Float64Array;
  }
  return { dim, treeIds, treeOffset: treeOffset!, parent, reward, visits, uncertainty, terminal, embedding };
}

/** Columns of new nodes for existing trees (the service's `extend`): one row per node, each naming its tree. */
export interface NodeRows {
  dim: number;
  /** Per row: the id of the tree the node joins. */
  treeIds: string[];
  /** Per row: the tree-local index of the parent (an existing node, or a new one earlier in the rows of the same tree). */
  parent: Int32Array;
  reward: Float64Array;
  visits: Float64Array;
  uncertainty: Float64Array;
  terminal: Uint8Array;
  /** Rows × dim, row-major. */
  embedding: Float32Array | Float64Array;
}

export const ROW_COLUMN_NAMES = ['tree_id', 'parent', 'reward', 'visits', 'uncertainty', 'terminal', 'embedding'] as const;

/**
 * Dtype and shape checks of a batch of new nodes (`ROW_COLUMN_NAMES`; `tree_id` and `parent`
 * required, one value per row), converted as for whole forests. Values are checked where the
 * nodes join their trees (`LiveStore.checkNodes`).
 */
export function rowsFromNdArrays(arrays: ReadonlyMap<string, NdArray>, source: string): NodeRows {
  for (const name of arrays.keys()) {
    if (!(ROW_COLUMN_NAMES as readonly string[]).includes(name)) {
      throw new ForestError({ field: name }, `${source}: unknown column (columns of new nodes: ${ROW_COLUMN_NAMES.join(', ')})`);
    }
  }
  const fail = (field: string, reason: string): never => { throw new ForestError({ field }, `${source}: ${reason}`); };
  const ids = arrays.get('tree_id');
  if (ids === undefined) fail('tree_id', 'the column is required: the tree of each new node');
  if (ids!.kind !== 'string') fail('tree_id', `must be strings, got dtype ${ids!.dtype}`);
  if (ids!.shape.length !== 1) fail('tree_id', `must be 1-D, got shape (${ids!.shape.join(', ')})`);
  const n = ids!.shape[0];
  const parentArr = arrays.get('parent');
  if (parentArr === undefined) fail('parent', 'the column is required');
  if (parentArr!.kind !== 'numeric' || !INTEGER_DTYPES.includes(parentArr!.dtype)) fail('parent', `must be integers, got dtype ${parentArr!.dtype}`);
  if (parentArr!.shape.length !== 1 || parentArr!.shape[0] !== n) fail('parent', `must have one value per row (${n}), got shape (${parentArr!.shape.join(', ')})`);
  const at = (row: number): ForestErrorLocation => ({ node: row });
  const numeric = (name: ColumnName, allowed: readonly NumericDtype[], what: string) => {
    const a = arrays.get(name);
    if (a === undefined) return undefined;
    if (a.kind !== 'numeric' || !allowed.includes(a.dtype)) fail(name, `must be ${what}, got dtype ${a.dtype}`);
    if (name !== 'embedding' && (a.shape.length !== 1 || a.shape[0] !== n)) fail(name, `must have one value per row (${n}), got shape (${a.shape.join(', ')})`);
    return a as Extract<NdArray, { kind: 'numeric' }>;
  };
  const parent = int32Column((parentArr as Extract<NdArray, { kind: 'numeric' }>).data, 'parent', (row) => ({ ...at(row), field: 'parent' }), source);
  const reward = float64Column(numeric('reward', [...FLOAT_DTYPES, ...INTEGER_DTYPES], 'numbers'), n, 'reward', 0, source);
  const visits = float64Column(numeric('visits', [...FLOAT_DTYPES, ...INTEGER_DTYPES], 'numbers'), n, 'visits', 0, source);
  const uncertainty = float64Column(numeric('uncertainty', [...FLOAT_DTYPES, ...INTEGER_DTYPES], 'numbers'), n, 'uncertainty', 0, source);
  const terminal = terminalColumn(numeric('terminal', ['bool', ...INTEGER_DTYPES], 'booleans or 0/1 integers'), n, at, source);
  const embArr = numeric('embedding', FLOAT_DTYPES, 'float32 or float64');
  let dim = 0;
  let embedding: Float32Array | Float64Array = new Float64Array(0);
  if (embArr !== undefined) {
    if (embArr.shape.length !== 2) fail('embedding', `must be 2-D (rows × dim), got shape (${embArr.shape.join(', ')})`);
    if (embArr.shape[0] !== n) fail('embedding', `has ${embArr.shape[0]} rows, expected ${n} (one per row)`);
    dim = embArr.shape[1];
    embedding = embArr.data as Float32Array | Float64Array;
  }
  return { dim, treeIds: ids!.data as string[], parent, reward, visits, uncertainty, terminal, embedding };
}

/** Maps a global row to its tree and node (for errors found while converting). */
function locator(treeOffset: Int32Array, nodeCount: number): (row: number) => ForestErrorLocation {
  return (row) => {
    let lo = 0, hi = treeOffset.length - 2;
    if (hi < 0 || row >= nodeCount) return { node: row };
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (treeOffset[mid] <= row) lo = mid; else hi = mid - 1;
    }
    return { tree: lo, node: row - treeOffset[lo] };
  };
}

function int32Column(data: NumericArray, field: string, at: (row: number) => ForestErrorLocation, source: string): Int32Array {
  if (data instanceof Int32Array) return data;
  const out = new Int32Array(data.length);
  for (let i = 0; i < data.length; i++) {
    const v = Number(data[i]);
    if (v < -0x80000000 || v > 0x7fffffff) throw new ForestError(at(i), `${source}: ${field} must fit a 32-bit integer, got ${String(data[i])}`);
    out[i] = v;
  }
  return out;
}

function float64Column(a: Extract<NdArray, { kind: 'numeric' }> | undefined, nodeCount: number, field: string, fallback: number, source: string): Float64Array {
  if (a === undefined) return new Float64Array(nodeCount).fill(fallback);
  if (a.shape.length !== 1) throw new ForestError({ field }, `${source}: must be 1-D, got shape (${a.shape.join(', ')})`);
  if (a.data instanceof Float64Array) return a.data;
  const out = new Float64Array(a.data.length);
  for (let i = 0; i < a.data.length; i++) out[i] = Number(a.data[i]);
  return out;
}

function terminalColumn(a: Extract<NdArray, { kind: 'numeric' }> | undefined, nodeCount: number, locate: (row: number) => ForestErrorLocation, source: string): Uint8Array {
  if (a === undefined) return new Uint8Array(nodeCount);
  if (a.shape.length !== 1) throw new ForestError({ field: 'terminal' }, `${source}: must be 1-D, got shape (${a.shape.join(', ')})`);
  if (a.data instanceof Uint8Array) return a.data; // values above 1 are rejected by packColumns
  const out = new Uint8Array(a.data.length);
  for (let i = 0; i < a.data.length; i++) {
    const v = Number(a.data[i]);
    if (v !== 0 && v !== 1) throw new ForestError({ ...locate(i), field: 'terminal' }, `must be 0 or 1, got ${String(a.data[i])}`);
    out[i] = v;
  }
  return out;
}

/** A per-row tree index must count up from 0 in steps of 0 or 1 (rows in tree order). */
/**
 * `tree_offset` must start at 0, never decrease and end at the row count: said here, naming the
 * column, instead of as a mismatch of some other column's length (or of packColumns' own names).
 */
function checkTreeOffsets(offsets: Int32Array, nodeCount: number, source: string): void {
  const fail = (reason: string) => { throw new ForestError({ field: 'tree_offset' }, `${source}: ${reason}`); };
  if (offsets[0] !== 0) fail(`must start at 0 (the first tree's first row), got ${offsets[0]}`);
  for (let t = 0; t + 1 < offsets.length; t++) {
    if (offsets[t + 1] < offsets[t]) fail(`must not decrease: entry ${t + 1} is ${offsets[t + 1]}, after ${offsets[t]}`);
  }
  const last = offsets[offsets.length - 1];
  if (last !== nodeCount) fail(`must end at the number of rows (${nodeCount}, the length of "parent"), got ${last}`);
}

function offsetsFromTreeIndex(data: NumericArray, nodeCount: number, source: string): Int32Array {
  if (data.length !== nodeCount) throw new ForestError({ field: 'tree' }, `${source}: column has ${data.length} entries, expected ${nodeCount}`);
  const offsets: number[] = [0];
  let current = -1; // tree of the previous row
  for (let row = 0; row < data.length; row++) {
    const t = Number(data[row]);
    if (t === current) continue;
    if (t !== current + 1) {
      throw new ForestError({ field: 'tree' }, `${source}: rows must be in tree order (tree indices 0, 1, 2, … without gaps); row ${row} has tree ${String(data[row])} after tree ${current}`);
    }
    if (row > 0) offsets.push(row);
    current = t;
  }
  if (nodeCount > 0) offsets.push(nodeCount);
  return Int32Array.from(offsets);
}

function offsetsFromIdRuns(ids: readonly string[]): Int32Array {
  const offsets: number[] = [0];
  for (let row = 1; row < ids.length; row++) if (ids[row] !== ids[row - 1]) offsets.push(row);
  if (ids.length > 0) offsets.push(ids.length);
  return Int32Array.from(offsets);
}

function treeIdsOf(ids: readonly string[], treeOffset: Int32Array, nodeCount: number, source: string): string[] {
  const treeCount = treeOffset.length - 1;
  if (ids.length === treeCount && !(ids.length === nodeCount && treeCount !== nodeCount)) return [...ids];
  if (ids.length !== nodeCount) {
    throw new ForestError({ field: 'tree_id' }, `${source}: must have one id per tree (${treeCount}) or per row (${nodeCount}), got ${ids.length}`);
  }
  const out: string[] = [];
  for (let t = 0; t < treeCount; t++) {
    const id = ids[treeOffset[t]];
    for (let row = treeOffset[t] + 1; row < treeOffset[t + 1]; row++) {
      if (ids[row] !== id) {
        throw new ForestError({ tree: t, treeId: id, node: row - treeOffset[t], field: 'tree_id' }, `${source}: must be the same for every row of a tree, got ${describeValue(ids[row])}`);
      }
    }
    out.push(id);
  }
  return out;
}

/** The columns of a packed forest as arrays for a container writer (tree-local parents, per-tree ids). */
export function ndArraysOfForest(forest: PackedForest): Map<ColumnName, NdArray> {
  const n = forest.nodeCount;
  const parent = new Int32Array(n);
  for (let row = 0; row < n; row++) {
    const p = forest.parentRow[row];
    parent[row] = p < 0 ? -1 : p - forest.treeOffset[forest.nodeTree[row]];
  }
  const embeddingDtype: NumericDtype = forest.embedding instanceof Float32Array ? 'float32' : 'float64';
  return new Map<ColumnName, NdArray>([
    ['tree_offset', { kind: 'numeric', dtype: 'int32', shape: [forest.treeCount + 1], data: forest.treeOffset }],
    ['tree_id', { kind: 'string', dtype: 'string', shape: [forest.treeCount], data: [...forest.treeIds] }],
    ['parent', { kind: 'numeric', dtype: 'int32', shape: [n], data: parent }],
    ['reward', { kind: 'numeric', dtype: 'float64', shape: [n], data: forest.reward }],
    ['visits', { kind: 'numeric', dtype: 'float64', shape: [n], data: forest.visits }],
    ['uncertainty', { kind: 'numeric', dtype: 'float64', shape: [n], data: forest.uncertainty }],
    ['terminal', { kind: 'numeric', dtype: 'bool', shape: [n], data: forest.terminal }],
    ['embedding', { kind: 'numeric', dtype: embeddingDtype, shape: [n, forest.dim], data: forest.embedding }],
  ]);
}
