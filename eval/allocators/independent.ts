import type { Grower } from '../tree.js';
import { interleave, runLaunches, type Allocator, type Launch } from './types.js';

/**
 * The no-tree control: every rollout starts at the prompt and runs to the end of the episode,
 * as in GRPO (Shao et al. 2024, "DeepSeekMath"). Trees are then stars of independent chains.
 */
export class IndependentAllocator implements Allocator {
  readonly name = 'independent';

  grow(g: Grower): void {
    const roots = g.forest.roots;
    while (g.remaining() > 0) {
      const perTree: Launch[][] = roots.map((node) => [{ node, steps: Infinity }]);
      if (runLaunches(g, interleave(perTree)) === 0) break;
    }
  }
}
