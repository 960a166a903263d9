import { hierarchy, tree as tidyTree, type HierarchyNode } from 'd3-hierarchy';
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

/**
 * The d3 hierarchy of a tree whose parents come before their children (as in every forest),
 * built in one pass. d3's own `hierarchy()` gives each node its height by walking up from
 * every node in turn, which on a deep chain is quadratic (a 100,000-node chain took 66 s);
 * here heights come from one reverse pass. The nodes are d3's own (its prototype, the same
 * fields), so `tree()` lays them out exactly as it lays out `hierarchy()`'s.
 */
export function hierarchyOf(parent: readonly number[], children: readonly number[][]): HierarchyNode<number> {
  type Mutable = { children?: Mutable[]; parent: Mutable | null; depth: number; height: number };
  const NodeOf = hierarchy(0).constructor as new (data: number) => Mutable;
  const nodes = parent.map((_, v) => new NodeOf(v));
  for (let v = 0; v < nodes.length; v++) {
    const kids = children[v];
    if (kids.length === 0) continue;
    const node = nodes[v];
    node.children = kids.map((c) => nodes[c]);
    for (const c of kids) { nodes[c].parent = node; nodes[c].depth = node.depth + 1; }
  }
  for (let v = nodes.length - 1; v > 0; v--) {
    const up = nodes[parent[v]];
    if (up.height < nodes[v].height + 1) up.height = nodes[v].height + 1;
  }
  return nodes[0] as unknown as HierarchyNode<number>;
}

export function layoutTree(parent: readonly number[], options: { dx?: number; dy?: number; badged?: ArrayLike<number> } = {}): TreeGeometry {
  const children = childLists(parent);
  const badged = options.badged;
  const root = hierarchyOf(parent, children);
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
