import { columnsFromNdArrays, rowsFromNdArrays, type NodeRows } from '../forest/columnar.js';
import { decodeArrow } from '../forest/arrow.js';
import { ForestError, describeValue } from '../forest/errors.js';
import { sniffColumnar } from '../forest/load.js';
import { decodeNpz, type NpzOptions } from '../forest/npz.js';
import { packColumns, type PackedForest } from '../forest/packed.js';
import type { LiveForest } from './forest.js';
import { LiveError } from './store.js';

/**
 * The `add-columns` operation of `serve --stdio`: many trees at once from a columnar batch sent as
 * raw bytes after its JSON header line (`{"op": "add-columns", "bytes": N, ...}` then exactly N
 * bytes of an Arrow IPC stream or file, or an `.npz`). The batch is decoded and validated whole
 * before the forest is touched, so a rejected or truncated batch changes nothing.
 */
export const ADD_COLUMNS_FIELDS = ['bytes', 'replace'] as const;

/** The operations whose request line may be followed by a binary payload of `bytes` bytes. */
export const PAYLOAD_OPS: readonly string[] = ['add-columns', 'extend'];

/** The payload length a header announces, or undefined when the line is no (well-formed) header of an op with a payload. */
export function announcedBytes(request: unknown): number | undefined {
  if (request === null || typeof request !== 'object' || Array.isArray(request)) return undefined;
  const req = request as Record<string, unknown>;
  if (typeof req.op !== 'string' || !PAYLOAD_OPS.includes(req.op)) return undefined;
  const n = req.bytes;
  return typeof n === 'number' && Number.isSafeInteger(n) && n >= 0 ? n : undefined;
}

/** A malformed header: the byte count is missing or not an integer ≥ 0 (so no payload was read). */
export function badHeaderReason(request: Record<string, unknown>): string {
  return `"bytes" must be the payload's length in bytes (an integer >= 0) and the payload must follow the header line, got ${describeValue(request.bytes)}`;
}

/** Decodes and validates a payload into a packed forest whose default tree ids continue at `base`. */
export function decodeBatch(payload: Uint8Array, announced: number, base: number, dim: number | undefined, options: NpzOptions = {}): PackedForest {
  if (payload.length < announced) {
    throw new ForestError({ field: 'bytes' }, `the batch is truncated: the input ended after ${payload.length} of ${announced} bytes`);
  }
  const source = 'the batch';
  const format = sniffColumnar(payload);
  if (format === undefined) throw new ForestError({ field: 'bytes' }, `${source} is not an Arrow IPC stream or file, or an .npz archive (unknown first bytes)`);
  // The payload buffer is the service's own, reused for the next batch: arrays may move within it.
  const arrays = format === 'npz' ? decodeNpz(payload, source, { ...options, movable: true }) : decodeArrow(payload, source);
  const columns = columnsFromNdArrays(arrays, source);
  if (!arrays.has('tree_id')) columns.treeIds = columns.treeIds.map((_, t) => String(base + t));
  if (dim !== undefined && columns.dim !== dim) {
    throw new LiveError('invalid_value', { field: 'embedding' }, `${source} has dim ${columns.dim}, the live forest ${dim}`);
  }
  try {
    return packColumns(columns);
  } catch (err) {
    // Tree positions count from the end of the live forest, as for add-tree with "trees".
    if (err instanceof ForestError && err.location.tree !== undefined) throw new LiveError('invalid_value', { ...err.location, tree: base + err.location.tree }, err.reason);
    throw err;
  }
}

/** Decodes and checks the columns of an `extend` payload: new nodes, one row each, naming their trees. */
export function decodeRows(payload: Uint8Array, announced: number, options: NpzOptions = {}): NodeRows {
  if (payload.length < announced) {
    throw new ForestError({ field: 'bytes' }, `the payload is truncated: the input ended after ${payload.length} of ${announced} bytes`);
  }
  const source = 'the new nodes';
  const format = sniffColumnar(payload);
  if (format === undefined) throw new ForestError({ field: 'bytes' }, `${source} are not an Arrow IPC stream or file, or an .npz archive (unknown first bytes)`);
  return rowsFromNdArrays(format === 'npz' ? decodeNpz(payload, source, { ...options, movable: true }) : decodeArrow(payload, source), source);
}

/** Adds (or, with `replace`, replaces) the batch's trees; atomic: the whole batch is checked before any live tree is removed. */
export function applyBatch(live: LiveForest, batch: PackedForest, replace: boolean): { trees: number; added: string[]; replaced: string[] } {
  const replaced = replace ? live.replaceForest(batch) : (live.addForest(batch), []);
  return { trees: live.treeCount, added: [...batch.treeIds], replaced };
}
