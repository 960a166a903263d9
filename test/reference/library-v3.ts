/**
 * The library's public API (src/index.ts) as a black box for the v3 conformance suite: forest
 * text in, plan JSON out, exactly what `trace-alloc score --scores --backend cpu` prints, but in
 * process, so that hundreds of forests cost milliseconds each instead of a Node start each.
 * Only the exported entry points are used (parseForest, scoreCpu, allocate, planToJson); nothing
 * of the allocator is read or imitated here.
 */
import { allocate, parseForest, planToJson, scoreCpu } from '../../src/index.js';
import type { ScoringRule } from './v3-scores.js';
import type { V3Params, V3Plan } from './v3.js';

/** The plan the library makes under rule v3 (or v4, which reads the same settings) for a forest file's text. */
export function libraryPlanV3(text: string, format: 'json' | 'jsonl', p: V3Params, rule: ScoringRule = 'v3'): V3Plan {
  const forest = parseForest(text, format);
  const scores = scoreCpu(forest, { alpha: p.alpha, tau: p.tau, rule });
  const budget = p.budget.kind === 'perTree'
    ? { budget: p.budget.budget }
    : { totalBudget: p.budget.total, minPerTree: p.budget.minPerTree };
  const allocation = allocate(forest, scores, {
    rule,
    ...budget,
    pruneRatio: p.pruneRatio,
    contestGain: p.contestGain,
    forkKeep: p.forkKeep,
    treeFloor: p.treeFloor,
    baseDepth: p.baseDepth,
    depthGain: p.depthGain,
    minDepth: p.minDepth,
    ...(p.maxDepth === undefined ? {} : { maxDepth: p.maxDepth }),
  });
  return planToJson(forest, scores, allocation, { includeScores: true }) as V3Plan;
}
