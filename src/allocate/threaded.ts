import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { PackedForest } from '../forest/packed.js';
import type { CpuScorer } from '../score/cpu.js';
import type { RangeTask } from '../score/task.js';
import { CHUNKS_PER_THREAD, shareForest } from '../score/threads.js';
import type { Scores } from '../score/types.js';
import { beginAllocation, budgetTrees, finishAllocation, type Allocation } from './allocate.js';
import type { AllocateOptions } from './options.js';
import { placeTrees, prepareTrees, type TreeWork } from './trees.js';

/**
 * Below this many rows `allocateOnThreads` allocates on the calling thread: two round trips to
 * the workers cost more than they save (about 0.1–0.3 ms each on the project's 2-core machine).
 */
export const PARALLEL_MIN_ROWS = 50_000;

export interface ThreadedAllocateOptions {
  /** Rows from which the worker threads are used; default `PARALLEL_MIN_ROWS` (tests lower it). */
  minRows?: number;
}

/**
 * `allocate` on a CPU scorer's threads (the calling one included): each pass over the trees runs
 * by ranges of whole trees on every thread; only the global split between the passes (the
 * rounding across trees) runs on the calling thread. Every tree's numbers come from the same
 * code on the same rows as on one thread, so the plan is the same bit for bit.
 */
export async function allocateOnThreads(
  forest: PackedForest, scores: Scores, options: AllocateOptions, scorer: CpuScorer, threaded: ThreadedAllocateOptions = {},
): Promise<Allocation> {
  const work = beginAllocation(forest, scores, options);
  const threads = forest.nodeCount >= (threaded.minRows ?? PARALLEL_MIN_ROWS) ? scorer.threads : 1;
  const bounds = treeRanges(forest, threads * CHUNKS_PER_THREAD);
  const data = threads > 1 ? { ...work, forest: shareForest(forest) } as unknown as Record<string, unknown> : {};
  const pass = async (name: 'prepareTreesTask' | 'placeTreesTask', here: (w: TreeWork, t0: number, t1: number) => void) => {
    if (threads === 1) here(work, 0, forest.treeCount);
    else await scorer.runOnThreads({ module: TASK_MODULE, name }, data, bounds, (t0, t1) => here(work, t0, t1));
  };
  await pass('prepareTreesTask', prepareTrees);
  const unallocatedTotal = budgetTrees(work, scores);
  await pass('placeTreesTask', placeTrees);
  return finishAllocation(work, unallocatedTotal);
}

/** Boundaries of up to `chunks` ranges of whole trees, cut at about equal rows. */
export function treeRanges(forest: PackedForest, chunks: number): Int32Array {
  const n = Math.max(1, Math.min(chunks, forest.treeCount));
  const bounds = new Int32Array(n + 1);
  const { treeOffset, treeCount, nodeCount } = forest;
  let c = 1;
  for (let t = 0; t < treeCount && c < n; t++) {
    while (c < n && treeOffset[t + 1] >= (nodeCount * c) / n) bounds[c++] = t + 1;
  }
  for (; c <= n; c++) bounds[c] = treeCount;
  return bounds;
}

/** The module of the per-tree passes as a worker loads it: compiled JavaScript next to this file, or the TypeScript source under tsx. */
const TASK_MODULE: RangeTask['module'] = (() => {
  const js = new URL('./trees.js', import.meta.url);
  return existsSync(fileURLToPath(js)) ? js.href : fileURLToPath(new URL('./trees.ts', import.meta.url));
})();
