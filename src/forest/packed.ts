import { sharedArray } from '../util/shared.js';
import { didYouMean } from '../util/suggest.js';
import { describeValue, ForestError, type ForestErrorLocation } from './errors.js';
import { checkGroupSizes } from './limits.js';
import type { ForestInput, NodeInput } from './input.js';
import type { ForestColumns, PackedForest } from './layout.js';

// The layout types live in layout.ts so that limits.ts can read them without importing this module.
export type { ForestColumns, PackedForest } from './layout.js';

/**
 * Validates column data and builds the sibling-group index. Throws `ForestError` naming the
 * tree, node and field of the first bad value. The columns' arrays are adopted, not copied.
 */
export function packColumns(columns: ForestColumns, options: PackOptions = {}): PackedForest {
  const { dim, treeIds, treeOffset, parent, reward, visits, uncertainty, terminal, embedding } = columns;
  if (!Number.isInteger(dim) || dim < 0) throw new ForestError({ field: 'dim' }, `must be an integer >= 0, got ${describeValue(dim)}`);
  const treeCount = treeIds.length;
  if (treeOffset.length !== treeCount + 1 || treeOffset[0] !== 0) {
    throw new ForestError({ field: 'treeOffset' }, `must have ${treeCount + 1} entries (one per tree id, and one more) starting at 0, got ${treeOffset.length} starting at ${treeOffset[0]}`);
  }
  const nodeCount = treeOffset[treeCount];
  for (const [name, col] of [['parent', parent], ['reward', reward], ['visits', visits], ['uncertainty', uncertainty], ['terminal', terminal]] as const) {
    if (col.length !== nodeCount) throw new ForestError({ field: name }, `column has ${col.length} entries, expected ${nodeCount}`);
  }
  if (embedding.length !== nodeCount * dim) {
    throw new ForestError({ field: 'embedding' }, `matrix has ${embedding.length} values, expected ${nodeCount} × ${dim}`);
  }

  // The embedding matrix is most of the data: scan it once in a tight loop, and report its first
  // bad value in row order below, where the row's other fields have been checked first.
  const badEmbedding = firstNonFinite(embedding);
  const badEmbeddingRow = badEmbedding < 0 ? -1 : Math.floor(badEmbedding / dim);
  const seen = new Map<string, number>();
  const nodeTree = sharedArray(Int32Array, nodeCount);
  const parentRow = sharedArray(Int32Array, nodeCount);
  const childCount = new Int32Array(nodeCount);
  for (let t = 0; t < treeCount; t++) {
    const id = treeIds[t];
    const first = seen.get(id);
    if (first !== undefined) throw new ForestError({ tree: t, treeId: id, field: 'id' }, `duplicate tree id, first used by tree #${first}`);
    seen.set(id, t);
    const start = treeOffset[t];
    const end = treeOffset[t + 1];
    if (end <= start) throw new ForestError({ tree: t, treeId: id, field: 'nodes' }, 'a tree needs at least one node (the root)');
    const at = (field: string, row: number) => ({ tree: t, treeId: id, node: row - start, field });
    for (let row = start; row < end; row++) {
      const v = row - start;
      nodeTree[row] = t;
      const p = parent[row];
      if (v === 0) {
        if (p !== -1) throw new ForestError(at('parent', row), `the root (node 0) must have parent -1, got ${p}`);
        parentRow[row] = -1;
      } else {
        if (p < 0 || p >= v) throw new ForestError(at('parent', row), `must be a node index in [0, ${v - 1}] (parents come before children), got ${p}`);
        parentRow[row] = start + p;
        childCount[start + p]++;
      }
      if (!Number.isFinite(reward[row])) throw new ForestError(at('reward', row), `must be a finite number, got ${describeValue(reward[row])}`);
      const n = visits[row];
      if (!Number.isInteger(n) || n < 0) throw new ForestError(at('visits', row), `must be an integer >= 0, got ${describeValue(n)}`);
      const u = uncertainty[row];
      if (!Number.isFinite(u) || u < 0) throw new ForestError(at('uncertainty', row), `must be a finite number >= 0, got ${describeValue(u)}`);
      if (terminal[row] > 1) throw new ForestError(at('terminal', row), `must be 0 or 1, got ${terminal[row]}`);
      if (row === badEmbeddingRow) {
        const d = badEmbedding - row * dim;
        throw new ForestError(at(`embedding[${d}]`, row), `must be a finite number, got ${describeValue(embedding[badEmbedding])}`);
      }
    }
  }

  // Sibling groups: one per row with children, in row order (so by tree, then parent row).
  const childGroup = sharedArray(Int32Array, nodeCount).fill(-1);
  const treeGroupOffset = sharedArray(Int32Array, treeCount + 1);
  let groupCount = 0;
  for (let t = 0; t < treeCount; t++) {
    treeGroupOffset[t] = groupCount;
    for (let row = treeOffset[t]; row < treeOffset[t + 1]; row++) if (childCount[row] > 0) childGroup[row] = groupCount++;
  }
  treeGroupOffset[treeCount] = groupCount;
  const groupParent = sharedArray(Int32Array, groupCount);
  const groupOffset = sharedArray(Int32Array, groupCount + 1);
  for (let row = 0, g = 0; row < nodeCount; row++) {
    if (childCount[row] === 0) continue;
    groupParent[g] = row;
    groupOffset[g + 1] = groupOffset[g] + childCount[row];
    g++;
  }
  const groupChild = sharedArray(Int32Array, nodeCount - treeCount);
  const parentGroup = sharedArray(Int32Array, nodeCount).fill(-1);
  const cursor = groupOffset.slice(0, groupCount);
  for (let row = 0; row < nodeCount; row++) {
    const p = parentRow[row];
    if (p < 0) continue;
    const g = childGroup[p];
    parentGroup[row] = g;
    groupChild[cursor[g]++] = row;
  }

  const packed: PackedForest = {
    dim, treeCount, nodeCount, groupCount, treeIds: [...treeIds], treeOffset, nodeTree, parentRow,
    reward, visits, uncertainty, terminal, embedding, groupParent, groupOffset, groupChild,
    treeGroupOffset, childGroup, parentGroup,
  };
  checkGroupSizes(packed, options.maxGroupSize ?? Infinity);
  packedByUs.add(packed);
  return packed;
}

export interface PackOptions {
  /**
   * Accept fields a forest, tree or node does not have (extra data a trainer stores, such as
   * text or logprobs) and ignore them. Default false: an unknown field is a `ForestError`
   * naming it and the nearest known name, so a typo (`rewrd`) never silently drops a value.
   */
  allowUnknownFields?: boolean;
  /**
   * Refuse (ForestError naming the tree, the parent node and the size) a node with more
   * children than this. Default: no cap; the CLI and `serve` use DEFAULT_MAX_GROUP_SIZE (4096).
   */
  maxGroupSize?: number;
}

export const FOREST_FIELDS: readonly string[] = ['dim', 'trees'];
export const TREE_FIELDS: readonly string[] = ['id', 'nodes'];
export const NODE_FIELDS: readonly string[] = ['parent', 'reward', 'visits', 'uncertainty', 'terminal', 'embedding'];

/**
 * Throws a `ForestError` for the first own field of `value` not in `known` (what = "node",
 * "tree" or "forest"). A tree holding `trees`/`dim` is most likely a whole forest written
 * on one JSON Lines line, and the message says so.
 */
export function checkKnownFields(value: object, known: readonly string[], what: string, at: ForestErrorLocation): void {
  for (const key in value) {
    if (!Object.hasOwn(value, key) || known.includes(key)) continue;
    const loc = { ...at, field: key };
    if (what === 'tree' && (key === 'trees' || key === 'dim')) {
      throw new ForestError(loc, 'a tree has no such field: this looks like a whole forest {"dim", "trees"} where one tree {"id", "nodes"} was expected (a JSON Lines file holds one tree per line; a single JSON document belongs in a .json file)');
    }
    throw new ForestError(loc, `unknown ${what} field${didYouMean(key, known)}; ${what} fields are ${known.join(', ')} (extra fields are kept out of scoring with allowUnknownFields, --allow-unknown-fields on the command line)`);
  }
}

/**
 * Validates a plain-object forest and packs it. Missing fields take docs/ALGORITHM.md §1 defaults;
 * a missing `dim` is taken from the first embedding (0 when there is none).
 */
export function packForest(input: ForestInput, options: PackOptions = {}): PackedForest {
  if (input === null || typeof input !== 'object' || Array.isArray(input)) throw new ForestError({}, 'a forest must be an object with a "trees" array');
  const strict = options.allowUnknownFields !== true;
  if (strict) checkKnownFields(input, FOREST_FIELDS, 'forest', {});
  const trees = input.trees;
  if (!Array.isArray(trees)) throw new ForestError({ field: 'trees' }, `must be an array, got ${describeValue(trees)}`);
  const dim = input.dim ?? inferDim(trees);
  if (typeof dim !== 'number' || !Number.isInteger(dim) || dim < 0) throw new ForestError({ field: 'dim' }, `must be an integer >= 0, got ${describeValue(dim)}`);

  const treeIds: string[] = [];
  const treeOffset = sharedArray(Int32Array, trees.length + 1);
  for (let t = 0; t < trees.length; t++) {
    const tree = trees[t];
    if (tree === null || typeof tree !== 'object' || Array.isArray(tree)) throw new ForestError({ tree: t }, `a tree must be an object, got ${describeValue(tree)}`);
    const id = treeIdOf(tree.id, t);
    treeIds.push(id);
    if (strict) checkKnownFields(tree, TREE_FIELDS, 'tree', { tree: t, treeId: id });
    if (!Array.isArray(tree.nodes)) throw new ForestError({ tree: t, treeId: id, field: 'nodes' }, `must be an array, got ${describeValue(tree.nodes)}`);
    if (tree.nodes.length === 0) throw new ForestError({ tree: t, treeId: id, field: 'nodes' }, 'a tree needs at least one node (the root)');
    treeOffset[t + 1] = treeOffset[t] + tree.nodes.length;
  }
  const nodeCount = treeOffset[trees.length];
  const parent = sharedArray(Int32Array, nodeCount);
  const reward = sharedArray(Float64Array, nodeCount);
  const visits = sharedArray(Float64Array, nodeCount);
  const uncertainty = sharedArray(Float64Array, nodeCount);
  const terminal = sharedArray(Uint8Array, nodeCount);
  const embedding = allocateEmbedding(nodeCount, dim);

  for (let t = 0; t < trees.length; t++) {
    const nodes = trees[t].nodes;
    for (let v = 0; v < nodes.length; v++) {
      const row = treeOffset[t] + v;
      const node = nodes[v] as NodeInput | null;
      const at = (field?: string) => ({ tree: t, treeId: treeIds[t], node: v, field });
      if (node === null || typeof node !== 'object' || Array.isArray(node)) throw new ForestError(at(), `a node must be an object, got ${describeValue(node)}`);
      if (strict) checkKnownFields(node, NODE_FIELDS, 'node', { tree: t, treeId: treeIds[t], node: v });
      const p = node.parent ?? (v === 0 ? -1 : undefined);
      if (p === undefined) throw new ForestError(at('parent'), 'is required for every node but the root');
      if (typeof p !== 'number' || !Number.isInteger(p)) throw new ForestError(at('parent'), `must be an integer, got ${describeValue(p)}`);
      if (Math.abs(p) > 0x7fffffff) throw new ForestError(at('parent'), `must be a node index before this node, got ${p}`);
      parent[row] = p; // the range against the node index is checked in packColumns
      reward[row] = numberField(node.reward, 0, at('reward'));
      visits[row] = numberField(node.visits, 0, at('visits'));
      uncertainty[row] = numberField(node.uncertainty, 0, at('uncertainty'));
      const term = node.terminal ?? false;
      if (typeof term !== 'boolean') throw new ForestError(at('terminal'), `must be true or false, got ${describeValue(term)}`);
      terminal[row] = term ? 1 : 0;
      const e = node.embedding;
      if (e === undefined || e === null) {
        if (dim > 0) throw new ForestError(at('embedding'), `is required when dim > 0 (dim = ${dim})`);
        continue;
      }
      if (!isArrayLikeOfNumbers(e)) throw new ForestError(at('embedding'), `must be an array of ${dim} numbers, got ${describeValue(e)}`);
      if (e.length !== dim) throw new ForestError(at('embedding'), `must have ${dim} numbers (dim), got ${e.length}`);
      for (let d = 0; d < dim; d++) {
        const x = e[d];
        if (typeof x !== 'number' || !Number.isFinite(x)) throw new ForestError(at(`embedding[${d}]`), `must be a finite number, got ${describeValue(x)}`);
        embedding[row * dim + d] = x;
      }
    }
  }
  return packColumns({ dim, treeIds, treeOffset, parent, reward, visits, uncertainty, terminal, embedding }, options);
}

/** Index of the first NaN or ±Infinity, or -1 (one monomorphic loop per array type). */
function firstNonFinite(values: Float64Array | Float32Array): number {
  return values instanceof Float32Array ? firstNonFinite32(values) : firstNonFinite64(values);
}
function firstNonFinite64(values: Float64Array): number {
  for (let i = 0; i < values.length; i++) if (!Number.isFinite(values[i])) return i;
  return -1;
}
function firstNonFinite32(values: Float32Array): number {
  for (let i = 0; i < values.length; i++) if (!Number.isFinite(values[i])) return i;
  return -1;
}

function inferDim(trees: readonly unknown[]): number {
  for (const tree of trees) {
    const nodes = (tree as { nodes?: unknown } | null)?.nodes;
    if (!Array.isArray(nodes)) continue;
    for (const node of nodes) {
      const e = (node as { embedding?: unknown } | null)?.embedding;
      if (isArrayLikeOfNumbers(e)) return e.length;
    }
  }
  return 0;
}

/**
 * A tree's id: a string, or an integer taken as its decimal string (`7` is tree "7");
 * the tree's position when omitted.
 */
export function treeIdOf(id: unknown, position: number): string {
  if (id === undefined) return String(position);
  if (typeof id === 'number' && Number.isSafeInteger(id)) return String(id);
  if (typeof id !== 'string') throw new ForestError({ tree: position, field: 'id' }, `must be a string (or an integer, read as its decimal string), got ${describeValue(id)}`);
  return id;
}

/** Forests built by `packColumns`, whose structure is known to be sound. */
const packedByUs = new WeakSet<object>();

/**
 * Checks at an API boundary that `forest` is a `PackedForest`: one made by `packForest` /
 * `packColumns` passes at once; anything else (a copy with swapped columns, a hand-made or
 * forged object) has its structure checked in O(T + N + G) — array types and lengths,
 * monotone offsets, rows in range — so that a malformed object is a `ForestError` instead of
 * empty scores or a runaway loop. Values are not re-validated.
 */
export function assertPackedForest(forest: unknown): asserts forest is PackedForest {
  if (forest !== null && typeof forest === 'object' && packedByUs.has(forest)) return;
  const fail = (field: string, why: string): never => { throw new ForestError({ field }, `not a PackedForest (make one with packForest or packColumns): ${why}`); };
  if (forest === null || typeof forest !== 'object') fail('forest', `got ${describeValue(forest)}`);
  const f = forest as Record<string, unknown>;
  const count = (name: string): number => {
    const x = f[name];
    if (typeof x !== 'number' || !Number.isSafeInteger(x) || x < 0) fail(name, `must be an integer >= 0, got ${describeValue(x)}`);
    return x as number;
  };
  const dim = count('dim'), T = count('treeCount'), N = count('nodeCount'), G = count('groupCount');
  type Kind = Int32ArrayConstructor | Float64ArrayConstructor | Float32ArrayConstructor | Uint8ArrayConstructor;
  const typed = <A extends ArrayLike<number>>(name: string, kinds: readonly Kind[], length: number): A => {
    const x = f[name];
    if (!kinds.some((k) => x instanceof k)) fail(name, `must be a ${kinds.map((k) => k.name).join(' or ')}`);
    if ((x as A).length !== length) fail(name, `has ${(x as A).length} entries, expected ${length}`);
    return x as A;
  };
  const ids = f.treeIds;
  if (!Array.isArray(ids) || ids.length !== T || ids.some((id) => typeof id !== 'string')) fail('treeIds', `must be an array of ${T} strings`);
  const treeOffset = typed<Int32Array>('treeOffset', [Int32Array], T + 1);
  const nodeTree = typed<Int32Array>('nodeTree', [Int32Array], N);
  const parentRow = typed<Int32Array>('parentRow', [Int32Array], N);
  typed<ArrayLike<number>>('reward', [Float64Array], N); typed<ArrayLike<number>>('visits', [Float64Array], N); typed<ArrayLike<number>>('uncertainty', [Float64Array], N);
  typed<ArrayLike<number>>('terminal', [Uint8Array], N);
  typed('embedding', [Float64Array, Float32Array], N * dim);
  const groupParent = typed<Int32Array>('groupParent', [Int32Array], G);
  const groupOffset = typed<Int32Array>('groupOffset', [Int32Array], G + 1);
  const groupChild = typed<Int32Array>('groupChild', [Int32Array], N - T);
  const treeGroupOffset = typed<Int32Array>('treeGroupOffset', [Int32Array], T + 1);
  const childGroup = typed<Int32Array>('childGroup', [Int32Array], N);
  const parentGroup = typed<Int32Array>('parentGroup', [Int32Array], N);
  const monotone = (name: string, a: Int32Array, last: number) => {
    if (a[0] !== 0 || a[a.length - 1] !== last) fail(name, `must run from 0 to ${last}`);
    for (let i = 1; i < a.length; i++) if (a[i] < a[i - 1]) fail(name, `must not decrease (entry ${i})`);
  };
  monotone('treeOffset', treeOffset, N);
  monotone('groupOffset', groupOffset, N - T);
  monotone('treeGroupOffset', treeGroupOffset, G);
  for (let t = 0; t < T; t++) {
    if (treeOffset[t + 1] === treeOffset[t]) fail('treeOffset', `tree #${t} has no nodes`);
    for (let row = treeOffset[t]; row < treeOffset[t + 1]; row++) if (nodeTree[row] !== t) fail('nodeTree', `row ${row} must belong to tree #${t}`);
  }
  for (let row = 0; row < N; row++) {
    const p = parentRow[row], start = treeOffset[nodeTree[row]];
    if (row === start ? p !== -1 : p < start || p >= row) fail('parentRow', `row ${row} has parent row ${p}`);
    if (childGroup[row] < -1 || childGroup[row] >= G) fail('childGroup', `row ${row} names group ${childGroup[row]}`);
    if (parentGroup[row] < -1 || parentGroup[row] >= G) fail('parentGroup', `row ${row} names group ${parentGroup[row]}`);
  }
  for (let g = 0; g < G; g++) {
    if (groupOffset[g + 1] === groupOffset[g]) fail('groupOffset', `group ${g} has no children`);
    const p = groupParent[g];
    if (p < 0 || p >= N) fail('groupParent', `group ${g} has parent row ${p}`);
    for (let i = groupOffset[g]; i < groupOffset[g + 1]; i++) {
      const c = groupChild[i];
      if (c < 0 || c >= N || parentRow[c] !== p) fail('groupChild', `entry ${i} (row ${c}) is not a child of group ${g}'s parent row ${p}`);
    }
  }
}

function numberField(value: unknown, fallback: number, at: { tree: number; treeId: string; node: number; field?: string }): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number') throw new ForestError(at, `must be a number, got ${describeValue(value)}`);
  return value; // range checks live in packColumns
}

function isArrayLikeOfNumbers(value: unknown): value is ArrayLike<number> {
  return Array.isArray(value) || (ArrayBuffer.isView(value) && !(value instanceof DataView));
}

/** The embedding matrix, or a ForestError on `dim` when it cannot exist (e.g. dim 1e10). */
function allocateEmbedding(nodeCount: number, dim: number): Float64Array {
  try {
    return sharedArray(Float64Array, nodeCount * dim);
  } catch {
    throw new ForestError({ field: 'dim' }, `${nodeCount} nodes × dim ${dim} is more embedding values than fit in memory`);
  }
}
