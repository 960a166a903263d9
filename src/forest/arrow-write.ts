import { Bool, Dictionary, Field, FixedSizeList, Float32, Float64, Int32, makeData, makeVector, Table, tableToIPC, Utf8, vectorFromArray } from 'apache-arrow';
import { ndArraysOfForest } from './columnar.js';
import type { PackedForest } from './packed.js';

/**
 * The Arrow IPC writer, through the `apache-arrow` package (loaded only by what writes Arrow:
 * `convert`, tests); the reader is `arrow.ts`.
 */

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
