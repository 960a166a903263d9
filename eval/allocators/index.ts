import type { LearnOptions } from '../../src/learn/state.js';
import { EntropyAllocator } from './entropy.js';
import { IndependentAllocator } from './independent.js';
import { KnapsackAllocator } from './knapsack.js';
import { PuctAllocator } from './puct.js';
import { SpoTreeAllocator } from './spo.js';
import { TraceAllocator } from './trace.js';
import { TreePoAllocator } from './treepo.js';
import { DEFAULT_ROUND, type Allocator, type RoundSize } from './types.js';
import { UniformAllocator } from './uniform.js';

export const ALLOCATORS = [
  'trace', 'trace-learned', 'trace-nocontrast', 'trace-outcome', 'trace-v4', 'trace-v3', 'trace-v2', 'trace-v2-learned', 'trace-v1', 'trace-v1-learned', 'trace-closed', 'trace-closed-learned',
  'independent', 'independent-1.5x', 'independent-2x', 'uniform', 'entropy', 'puct', 'spo-tree', 'treepo', 'knapsack',
] as const;
export type AllocatorName = (typeof ALLOCATORS)[number];

/**
 * The budget per training step an allocator runs with, as a multiple of the task's: 1 except the
 * compute-equivalence rows, independent chains at 1.5× and 2× the budget (same training steps).
 */
export function budgetMultiplier(name: AllocatorName): number {
  return name === 'independent-1.5x' ? 1.5 : name === 'independent-2x' ? 2 : 1;
}

/**
 * `segment`: the environment's segment length in steps, shared by every segment-based method
 * (SPO-tree and TreePO segments, TRACE's base depth D0) so none is handicapped by a length
 * that cannot reach the end of an episode within the budget. `round`: rollouts per tree per
 * allocation round of TRACE and knapsack (the task's; docs/EVALUATION.md).
 * `trace` is the library's default rule (v5); `trace-v4` the rule it replaced, whose gate closes after one visit each;
 * `trace-v3`, `trace-v2`, `trace-v1` the earlier rules;
 * `trace-nocontrast` and `trace-outcome` are the default rule on ablated scores (`ablation.ts`).
 */
export function createAllocator(name: AllocatorName, segment: number, round: RoundSize = DEFAULT_ROUND, learnOptions?: LearnOptions): Allocator {
  const trace = { baseDepth: segment, round };
  switch (name) {
    case 'trace': return new TraceAllocator(trace);
    case 'trace-learned': return new TraceAllocator({ ...trace, learn: true, learnOptions });
    case 'trace-nocontrast': return new TraceAllocator({ ...trace, scores: 'nocontrast' });
    case 'trace-outcome': return new TraceAllocator({ ...trace, scores: 'outcome' });
    case 'trace-v4': return new TraceAllocator({ ...trace, rule: 'v4' });
    case 'trace-v3': return new TraceAllocator({ ...trace, rule: 'v3' });
    case 'trace-v2': return new TraceAllocator({ ...trace, rule: 'v2' });
    case 'trace-v2-learned': return new TraceAllocator({ ...trace, rule: 'v2', learn: true, learnOptions });
    case 'trace-v1': return new TraceAllocator({ ...trace, rule: 'v1' });
    case 'trace-v1-learned': return new TraceAllocator({ ...trace, rule: 'v1', learn: true, learnOptions });
    case 'trace-closed': return new TraceAllocator({ ...trace, rule: 'v1', closeExhausted: true });
    case 'trace-closed-learned': return new TraceAllocator({ ...trace, rule: 'v1', learn: true, learnOptions, closeExhausted: true });
    case 'independent': case 'independent-1.5x': case 'independent-2x': return new IndependentAllocator();
    case 'uniform': return new UniformAllocator();
    case 'entropy': return new EntropyAllocator();
    case 'puct': return new PuctAllocator();
    case 'spo-tree': return new SpoTreeAllocator(segment);
    case 'treepo': return new TreePoAllocator(segment);
    case 'knapsack': return new KnapsackAllocator(round);
  }
}
