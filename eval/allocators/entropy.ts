import type { Grower } from '../tree.js';
import { interleave, openNodes, runLaunches, type Allocator, type Launch } from './types.js';

/**
 * Entropy-guided branching, TreeRL's EPTree (Hou et al. 2025, "TreeRL: LLM Reinforcement
 * Learning with On-Policy Tree Search"; ARPO, Dong et al. 2025, branches on the same signal):
 * M full chains per prompt, then each iteration forks the N open nodes of highest policy
 * entropy that have not been forked yet, T full rollouts from each.
 */
export class EntropyAllocator implements Allocator {
  readonly name = 'entropy';
  constructor(private readonly initialChains = 2, private readonly forks = 2, private readonly perFork = 2) {}

  grow(g: Grower): void {
    const f = g.forest;
    const trees = f.treeNodes.length;
    const forked = new Set<number>();
    const init: Launch[][] = [];
    for (let t = 0; t < trees; t++) init.push(Array.from({ length: this.initialChains }, () => ({ node: f.roots[t], steps: Infinity })));
    runLaunches(g, interleave(init));
    while (g.remaining() > 0) {
      const perTree: Launch[][] = [];
      for (let t = 0; t < trees; t++) {
        let candidates = openNodes(g, t).filter((v) => !forked.has(v));
        if (candidates.length === 0) candidates = openNodes(g, t); // everything forked once: allow repeats
        // Highest entropy first; ties to the older node, so the order is deterministic.
        candidates.sort((x, y) => f.entropy[y] - f.entropy[x] || x - y);
        const list: Launch[] = [];
        for (const v of candidates.slice(0, this.forks)) {
          forked.add(v);
          for (let k = 0; k < this.perFork; k++) list.push({ node: v, steps: Infinity });
        }
        perTree.push(list);
      }
      if (runLaunches(g, interleave(perTree)) === 0) break;
    }
  }
}
