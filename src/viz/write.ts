import { writeFileAtomic as writeAtomically } from '../util/atomic-write.js';
import type { Allocation } from '../allocate/allocate.js';
import type { PackedForest } from '../forest/packed.js';
import type { Scores } from '../score/types.js';
import { renderTreeView, type TreeViewOptions } from './html.js';
import type { TreeSelection } from './model.js';
import { renderTreeSvg, type TreeSvgOptions } from './svg.js';

export interface WriteTreeViewOptions extends TreeViewOptions {
  /** Where the page goes (its folder is created). */
  outFile: string;
}

export interface WrittenView {
  /** Absolute path of the file written. */
  path: string;
  bytes: number;
  selection: TreeSelection;
}

/**
 * Writes the explorable view of a scored, allocated forest: one HTML file that opens offline.
 * The page holds the most contested trees (50 by default) plus `initialTree`, shown first
 * (default: the most contested).
 */
export function writeTreeView(forest: PackedForest, scores: Scores, allocation: Allocation, options: WriteTreeViewOptions): WrittenView {
  const { html, selection } = renderTreeView(forest, scores, allocation, options);
  const path = writeAtomically(options.outFile, html);
  return { path, bytes: Buffer.byteLength(html), selection };
}

export interface WriteTreeSvgOptions extends TreeSvgOptions {
  outFile: string;
}

/** Writes a static SVG of one tree (for papers), coloured by one metric. */
export function writeTreeSvg(forest: PackedForest, scores: Scores, allocation: Allocation, tree: number, options: WriteTreeSvgOptions): { path: string; bytes: number } {
  const svg = renderTreeSvg(forest, scores, allocation, tree, options);
  return { path: writeAtomically(options.outFile, svg), bytes: Buffer.byteLength(svg) };
}
