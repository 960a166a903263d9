import { hierarchy, tree as tidyTree } from 'd3-hierarchy';
import type { TreeColumns } from './model.js';

/**
 * Tidy-tree geometry shared by the static SVG and the page (which runs the same d3-hierarchy
 * layout in the browser with these numbers): root on top, one level per `dy`, adjacent
 * siblings `dx` apart and cousins `cousinGap·dx` apart so forks read as groups; a node with a
 * badge (new rollouts start there) takes `badgeGap·dx` more room so neighbouring badges do not
 * collide.
 */
export const LAYOUT = Object.freeze({ dx: 16, dy: 72, cousinGap: 1.5, badgeGap: 1, radius: 5 });

export interface TreeGeometry {
  x: Float64Array;
  y: Float64Array;
  /** Distance from the root in edges. */
  level: Int32Array;
  minX: number;
  maxX: number;
  maxY: number;
}

export function childLists(parent: readonly number[]): number[][] {
  const children: number[][] = parent.map(() => []);
  for (let v = 1; v < parent.length; v++) children[parent[v]].push(v);
  return children;
}

export function layoutTree(parent: readonly number[], options: { dx?: number; dy?: number; badged?: ArrayLike<number> } = {}): TreeGeometry {
  const children = childLists(parent);
  const badged = options.badged;
  const root = hierarchy(0, (v) => (children[v].length > 0 ? children[v] : null));
  tidyTree<number>()
    .nodeSize([options.dx ?? LAYOUT.dx, options.dy ?? LAYOUT.dy])
    .separation((a, b) => (a.parent === b.parent ? 1 : LAYOUT.cousinGap) + (badged && (badged[a.data] > 0 || badged[b.data] > 0) ? LAYOUT.badgeGap : 0))(root);
  const n = parent.length;
  const x = new Float64Array(n), y = new Float64Array(n), level = new Int32Array(n);
  let minX = 0, maxX = 0, maxY = 0;
  root.each((d) => {
    const v = d.data;
    x[v] = d.x ?? 0;
    y[v] = d.y ?? 0;
    level[v] = d.depth;
    minX = Math.min(minX, x[v]);
    maxX = Math.max(maxX, x[v]);
    maxY = Math.max(maxY, y[v]);
  });
  return { x, y, level, minX, maxX, maxY };
}

/** Nodes in a pruned branch: pruned themselves or below a pruned node. */
export function greyedNodes(tree: TreeColumns): Uint8Array {
  const out = new Uint8Array(tree.parent.length);
  for (let v = 0; v < out.length; v++) out[v] = tree.pruned[v] || (v > 0 && out[tree.parent[v]]) ? 1 : 0;
  return out;
}

/** Nodes on the way to new rollouts: some node at or below them starts branches. */
export function budgetPath(tree: TreeColumns): Uint8Array {
  const out = new Uint8Array(tree.parent.length);
  for (let v = out.length - 1; v >= 0; v--) {
    if (tree.branches[v] > 0) out[v] = 1;
    if (out[v] && v > 0) out[tree.parent[v]] = 1;
  }
  return out;
}
