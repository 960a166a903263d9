import { OptionError } from '../util/errors.js';
import { ForestError } from './errors.js';
import type { PackedForest } from './layout.js';

/**
 * Default cap on the children of one node for the CLI and `serve` (`--max-group-size`).
 * Scoring a sibling group costs O(k²·dim); 4096 children is far above real rollout trees and
 * keeps one group's cost bounded (16.8 M pairs) on either backend.
 */
export const DEFAULT_MAX_GROUP_SIZE = 4096;

/**
 * Default cap on the bytes a compressed `.npz`'s arrays inflate to, in all (`--max-inflated-bytes`,
 * `maxInflatedBytes`). Memory follows the inflated size, which a small file can make huge (zeros
 * deflate about 1000:1); 2 GiB holds a 16,384-tree forest of 85 nodes at dim 128 in float64.
 */
export const DEFAULT_MAX_INFLATED_BYTES = 2 ** 31;

/**
 * Default cap on the bytes of one forest input (`--max-input-bytes`, `maxInputBytes`): a regular
 * file over it is refused from its size before anything is read; a stream (standard input, a
 * named pipe, a device such as /dev/zero) is read until its end or until it passes the cap.
 * The same 2 GiB as the inflated-size cap; W1 (4096 trees × 85 nodes, dim 128) is 188 MB as an `.npz`.
 */
export const DEFAULT_MAX_INPUT_BYTES = 2 ** 31;

/** What names the input cap in errors: the CLI flag and the library option. */
export const MAX_INPUT_BYTES_NAME = '--max-input-bytes (maxInputBytes)';

/** A `maxGroupSize` setting as given, if it is an integer ≥ 1 or Infinity (no cap); else an OptionError. */
export function checkMaxGroupSize(max: number): number {
  if (max === Infinity || (Number.isSafeInteger(max) && max >= 1)) return max;
  throw new OptionError(`maxGroupSize must be an integer >= 1 (or Infinity for no cap), got ${max}`);
}

/**
 * Throws a `ForestError` naming the tree, the parent node and the size of the first sibling
 * group with more than `max` children. O(groups).
 */
export function checkGroupSizes(forest: Pick<PackedForest, 'groupCount' | 'groupOffset' | 'groupParent' | 'nodeTree' | 'treeIds' | 'treeOffset'>, max: number): void {
  if (checkMaxGroupSize(max) === Infinity) return;
  const { groupOffset } = forest;
  for (let g = 0; g < forest.groupCount; g++) {
    const k = groupOffset[g + 1] - groupOffset[g];
    if (k <= max) continue;
    const row = forest.groupParent[g];
    const tree = forest.nodeTree[row];
    throw groupSizeError({ tree, treeId: forest.treeIds[tree], node: row - forest.treeOffset[tree] }, k, max);
  }
}

/** The error for a node with `k` children over the cap `max` (also used by live forests). */
export function groupSizeError(at: { tree?: number; treeId?: string; node?: number }, k: number, max: number): ForestError {
  return new ForestError({ ...at, field: 'children' }, `has ${k} children, more than the maximum group size ${max} (--max-group-size, maxGroupSize)`);
}
