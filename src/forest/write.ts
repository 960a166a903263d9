import { closeSync, mkdirSync, openSync, renameSync, rmdirSync, rmSync, writeSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { encodeArrow } from './arrow-write.js';
import { ndArraysOfForest } from './columnar.js';
import type { ForestFormat, ColumnarFormat } from './load.js';
import { encodeNpz } from './npz.js';
import type { PackedForest } from './packed.js';

/**
 * Writes a forest in any of the input formats, atomically (a temporary file in the same folder,
 * then a rename). JSON and JSON Lines are written tree by tree, so a forest whose text exceeds
 * V8's string limit still converts; numbers are written so they read back exactly (float32
 * embeddings as the decimal of their exact value).
 */
export function writeForestFile(forest: PackedForest, path: string, format: ForestFormat | ColumnarFormat): void {
  const target = resolve(path);
  const created = mkdirSync(dirname(target), { recursive: true });
  const tmp = join(dirname(target), `.${basename(target)}.${process.pid}.tmp`);
  let fd: number | undefined;
  try {
    fd = openSync(tmp, 'w');
    for (const chunk of forestBytes(forest, format)) writeSync(fd, chunk);
    closeSync(fd);
    fd = undefined;
    renameSync(tmp, target);
  } catch (err) {
    if (fd !== undefined) try { closeSync(fd); } catch { /* already closed */ }
    rmSync(tmp, { force: true });
    if (created !== undefined) removeEmptyFolders(dirname(target), created);
    throw err;
  }
}

/** Nothing is left when a write fails: the folders it made, from `deepest` up to `top`, if still empty. */
function removeEmptyFolders(deepest: string, top: string): void {
  for (let dir = deepest; ; dir = dirname(dir)) {
    try { rmdirSync(dir); } catch { return; }
    if (dir === top || dirname(dir) === dir) return;
  }
}

/** The forest encoded in `format`, as a sequence of byte chunks. */
export function* forestBytes(forest: PackedForest, format: ForestFormat | ColumnarFormat): Generator<Uint8Array> {
  if (format === 'npz') { yield encodeNpz(ndArraysOfForest(forest)); return; }
  if (format === 'arrow') { yield encodeArrow(forest, 'file'); return; }
  const encoder = new TextEncoder();
  if (format === 'json') yield encoder.encode(`{"dim":${forest.dim},"trees":[\n`);
  // JSON Lines takes dim from the first embedding; a forest of no trees states it on a line of its own.
  if (format === 'jsonl' && forest.treeCount === 0) yield encoder.encode(`{"dim":${forest.dim}}\n`);
  for (let t = 0; t < forest.treeCount; t++) {
    const line = treeJson(forest, t);
    yield encoder.encode(format === 'json' ? `${line}${t + 1 < forest.treeCount ? ',' : ''}\n` : `${line}\n`);
  }
  if (format === 'json') yield encoder.encode(']}\n');
}

/** One tree as a JSON object (a JSON Lines line). */
export function treeJson(forest: PackedForest, t: number): string {
  const start = forest.treeOffset[t], end = forest.treeOffset[t + 1], dim = forest.dim;
  const nodes: string[] = [];
  for (let row = start; row < end; row++) {
    const p = forest.parentRow[row];
    const e = forest.embedding.subarray(row * dim, (row + 1) * dim);
    nodes.push(`{"parent":${p < 0 ? -1 : p - start},"reward":${forest.reward[row]},"visits":${forest.visits[row]},"uncertainty":${forest.uncertainty[row]},"terminal":${forest.terminal[row] === 1},"embedding":[${e.join(',')}]}`);
  }
  return `{"id":${JSON.stringify(forest.treeIds[t])},"nodes":[${nodes.join(',')}]}`;
}
