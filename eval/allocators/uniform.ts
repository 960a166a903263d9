import type { Grower } from '../tree.js';
import { interleave, openNodes, runLaunches, sampleDistinct, type Allocator, type Launch } from './types.js';

/**
 * Uniform random expansion, Tree-GRPO's sampler (Ji et al. 2025, "Tree Search for LLM Agent
 * Reinforcement Learning"): M full chains per prompt, then repeatedly N nodes drawn uniformly
 * from each tree's open nodes, each expanded with one rollout to the end of the episode.
 */
export class UniformAllocator implements Allocator {
  readonly name = 'uniform';
  constructor(private readonly initialChains = 2, private readonly perIteration = 2) {}

  grow(g: Grower): void {
    const trees = g.forest.treeNodes.length;
    const init: Launch[][] = [];
    for (let t = 0; t < trees; t++) init.push(Array.from({ length: this.initialChains }, () => ({ node: g.forest.roots[t], steps: Infinity })));
    runLaunches(g, interleave(init));
    while (g.remaining() > 0) {
      const perTree: Launch[][] = [];
      for (let t = 0; t < trees; t++) {
        perTree.push(sampleDistinct(openNodes(g, t), this.perIteration, () => g.rng.next()).map((node) => ({ node, steps: Infinity })));
      }
      if (runLaunches(g, interleave(perTree)) === 0) break;
    }
  }
}
