import type { Grower } from '../tree.js';
import { interleave, runLaunches, type Allocator, type Launch } from './types.js';

/**
 * Fixed branching and truncation, SPO-tree (Guo et al. 2025, "Segment Policy Optimization"):
 * a fixed-shape tree per prompt — every segment end forks into K segments of a fixed length,
 * for `levels` levels, and the last level runs to the end of the episode. When the budget
 * allows more, another tree of the same shape is grown from the prompt.
 */
export class SpoTreeAllocator implements Allocator {
  readonly name = 'spo-tree';
  constructor(private readonly segment = 4, private readonly branching = 2, private readonly levels = 3) {}

  grow(g: Grower): void {
    const f = g.forest;
    const trees = f.treeNodes.length;
    while (g.remaining() > 0) {
      let frontier: number[][] = f.roots.map((r) => [r]);
      let started = 0;
      for (let level = 0; level < this.levels && g.remaining() > 0; level++) {
        const last = level === this.levels - 1;
        const perTree: Launch[][] = [];
        for (let t = 0; t < trees; t++) {
          const list: Launch[] = [];
          for (const v of frontier[t]) for (let k = 0; k < this.branching; k++) list.push({ node: v, steps: last ? Infinity : this.segment });
          perTree.push(list);
        }
        const sizeBefore = f.size;
        started += runLaunches(g, interleave(perTree));
        // The next level forks from the open segment ends just created.
        frontier = Array.from({ length: trees }, () => [] as number[]);
        for (let v = sizeBefore; v < f.size; v++) {
          const isEnd = f.children[v].length === 0 && !f.terminal[v];
          if (isEnd) frontier[f.tree[v]].push(v);
        }
      }
      if (started === 0) break;
    }
  }
}
