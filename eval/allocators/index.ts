import type { LearnOptions } from '../../src/learn/state.js';
import { EntropyAllocator } from './entropy.js';
import { IndependentAllocator } from './independent.js';
import { PuctAllocator } from './puct.js';
import { SpoTreeAllocator } from './spo.js';
import { TraceAllocator } from './trace.js';
import { TreePoAllocator } from './treepo.js';
import type { Allocator } from './types.js';
import { UniformAllocator } from './uniform.js';

export const ALLOCATORS = ['trace', 'trace-learned', 'trace-v1', 'trace-v1-learned', 'trace-closed', 'trace-closed-learned', 'independent', 'uniform', 'entropy', 'puct', 'spo-tree', 'treepo'] as const;
export type AllocatorName = (typeof ALLOCATORS)[number];

/**
 * `segment`: the environment's segment length in steps, shared by every segment-based method
 * (SPO-tree and TreePO segments, TRACE's base depth D0) so none is handicapped by a length
 * that cannot reach the end of an episode within the budget.
 */
export function createAllocator(name: AllocatorName, segment: number, traceRolloutsPerTree = 2, learnOptions?: LearnOptions): Allocator {
  switch (name) {
    case 'trace': return new TraceAllocator({ baseDepth: segment, rolloutsPerTree: traceRolloutsPerTree });
    case 'trace-learned': return new TraceAllocator({ learn: true, learnOptions, baseDepth: segment, rolloutsPerTree: traceRolloutsPerTree });
    case 'trace-v1': return new TraceAllocator({ rule: 'v1', baseDepth: segment, rolloutsPerTree: traceRolloutsPerTree });
    case 'trace-v1-learned': return new TraceAllocator({ rule: 'v1', learn: true, learnOptions, baseDepth: segment, rolloutsPerTree: traceRolloutsPerTree });
    case 'trace-closed': return new TraceAllocator({ rule: 'v1', baseDepth: segment, rolloutsPerTree: traceRolloutsPerTree, closeExhausted: true });
    case 'trace-closed-learned': return new TraceAllocator({ rule: 'v1', learn: true, learnOptions, baseDepth: segment, rolloutsPerTree: traceRolloutsPerTree, closeExhausted: true });
    case 'independent': return new IndependentAllocator();
    case 'uniform': return new UniformAllocator();
    case 'entropy': return new EntropyAllocator();
    case 'puct': return new PuctAllocator();
    case 'spo-tree': return new SpoTreeAllocator(segment);
    case 'treepo': return new TreePoAllocator(segment);
  }
}
