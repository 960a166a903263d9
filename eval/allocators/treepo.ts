import type { Grower } from '../tree.js';
import { interleave, runLaunches, type Allocator, type Launch } from './types.js';

/**
 * Log-probability-weighted splitting, TreePO (Li et al. 2025, "TreePO: Bridging the Gap of
 * Policy Optimization and Efficacy and Inference Efficiency with Heuristic Tree-based
 * Modeling"): fixed-length segments; each tree keeps `width` active paths, and at every segment
 * boundary the `width` new segments are split over the open path ends in proportion to
 * softmax(−mean log-prob / T) — less likely paths get more branches (probability-driven
 * divergence), ends that get none stop early. When every path has ended the tree falls back
 * to branching from the prompt again.
 */
export class TreePoAllocator implements Allocator {
  readonly name = 'treepo';
  constructor(private readonly segment = 4, private readonly width = 4, private readonly temperature = 1) {}

  grow(g: Grower): void {
    const f = g.forest;
    const trees = f.treeNodes.length;
    let frontier: number[][] = f.roots.map((r) => [r]);
    while (g.remaining() > 0) {
      const perTree: Launch[][] = [];
      for (let t = 0; t < trees; t++) {
        const ends = frontier[t].length > 0 ? frontier[t] : [f.roots[t]];
        const counts = this.split(g, ends);
        const list: Launch[] = [];
        for (let i = 0; i < ends.length; i++) for (let k = 0; k < counts[i]; k++) list.push({ node: ends[i], steps: this.segment });
        perTree.push(list);
      }
      const sizeBefore = f.size;
      if (runLaunches(g, interleave(perTree)) === 0) break;
      frontier = Array.from({ length: trees }, () => [] as number[]);
      for (let v = sizeBefore; v < f.size; v++) if (f.children[v].length === 0 && !f.terminal[v]) frontier[f.tree[v]].push(v);
    }
  }

  /** `width` branches over the path ends by softmax(−mean log-prob / T), whole numbers by largest remainder. */
  private split(g: Grower, ends: number[]): number[] {
    const f = g.forest;
    const score = ends.map((v) => (f.depth[v] > 0 ? -f.pathLogProb[v] / f.depth[v] : 0) / this.temperature);
    const max = Math.max(...score);
    const w = score.map((s) => Math.exp(s - max));
    const z = w.reduce((a, b) => a + b, 0);
    const exact = w.map((x) => (this.width * x) / z);
    const counts = exact.map(Math.floor);
    let left = this.width - counts.reduce((a, b) => a + b, 0);
    const order = exact.map((x, i) => [x - Math.floor(x), i] as const).sort((a, b) => b[0] - a[0] || a[1] - b[1]);
    for (const [, i] of order) { if (left <= 0) break; counts[i]++; left--; }
    return counts;
  }
}
