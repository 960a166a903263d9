import { OptionError } from '../util/errors.js';
import type { Allocation } from '../allocate/allocate.js';
import type { PackedForest } from '../forest/packed.js';
import type { Scores } from '../score/types.js';

/**
 * Everything the view shows about one tree, as tree-local columns (index = node number inside
 * the tree). Plain arrays so the same object feeds the static SVG and the page's JSON.
 */
export interface TreeColumns {
  /** Position of the tree in the forest. */
  index: number;
  id: string;
  /** Mean intensity over the tree's forks with k >= 2 (0 when it has none): "how contested". */
  meanIntensity: number;
  budget: number;
  unallocated: number;
  parent: number[];
  reward: number[];
  visits: number[];
  uncertainty: number[];
  terminal: number[];
  contrast: number[];
  weight: number[];
  gradAlpha: number[];
  gradTau: number[];
  /** Intensity of the fork at this node (the group it parents); 0 for leaves and single children. */
  intensity: number[];
  branches: number[];
  depth: number[];
  /** ψ: priority relative to a uniform split along the path from the root. */
  priority: number[];
  /** x_v before rounding. */
  mass: number[];
  pruned: number[];
  live: number[];
}

/** Mean intensity of tree `t`'s forks with at least two children; the order of the tree picker. */
export function meanIntensity(forest: PackedForest, scores: Scores, t: number): number {
  const { treeGroupOffset, groupOffset } = forest;
  let sum = 0, count = 0;
  for (let g = treeGroupOffset[t]; g < treeGroupOffset[t + 1]; g++) {
    if (groupOffset[g + 1] - groupOffset[g] < 2) continue;
    sum += scores.intensity[g];
    count++;
  }
  return count > 0 ? sum / count : 0;
}

/** All trees, most contested first (higher mean intensity; ties to the smaller index). */
export function rankTreesByContest(forest: PackedForest, scores: Scores): number[] {
  const key = Float64Array.from({ length: forest.treeCount }, (_, t) => meanIntensity(forest, scores, t));
  return Array.from({ length: forest.treeCount }, (_, t) => t).sort((a, b) => key[b] - key[a] || a - b);
}

export function extractTree(forest: PackedForest, scores: Scores, allocation: Allocation, t: number): TreeColumns {
  checkInputs(forest, scores, allocation);
  if (!Number.isInteger(t) || t < 0 || t >= forest.treeCount) {
    throw new OptionError(`tree #${t} is not in the forest (it has ${forest.treeCount} trees)`);
  }
  const lo = forest.treeOffset[t], hi = forest.treeOffset[t + 1];
  const rows = (column: ArrayLike<number>) => Array.from({ length: hi - lo }, (_, v) => column[lo + v]);
  const intensity = new Array<number>(hi - lo).fill(0);
  for (let v = lo; v < hi; v++) {
    const g = forest.childGroup[v];
    if (g >= 0 && forest.groupOffset[g + 1] - forest.groupOffset[g] >= 2) intensity[v - lo] = scores.intensity[g];
  }
  return {
    index: t,
    id: forest.treeIds[t],
    meanIntensity: meanIntensity(forest, scores, t),
    budget: allocation.treeBudget[t],
    unallocated: allocation.unallocated[t],
    parent: rows(forest.parentRow).map((p) => (p < 0 ? -1 : p - lo)),
    reward: rows(forest.reward),
    visits: rows(forest.visits),
    uncertainty: rows(forest.uncertainty),
    terminal: rows(forest.terminal),
    contrast: rows(scores.contrast),
    weight: rows(scores.weight),
    gradAlpha: rows(scores.gradAlpha),
    gradTau: rows(scores.gradTau),
    intensity,
    branches: rows(allocation.branches),
    depth: rows(allocation.depth),
    priority: rows(allocation.priority),
    mass: rows(allocation.mass),
    pruned: rows(allocation.pruned),
    live: rows(allocation.live),
  };
}

function checkInputs(forest: PackedForest, scores: Scores, allocation: Allocation): void {
  if (scores.weight.length !== forest.nodeCount || scores.intensity.length !== forest.groupCount) {
    throw new RangeError(`scores do not match the forest (${scores.weight.length} weights for ${forest.nodeCount} nodes)`);
  }
  if (allocation.branches.length !== forest.nodeCount || allocation.treeBudget.length !== forest.treeCount) {
    throw new RangeError(`allocation does not match the forest (${allocation.branches.length} rows for ${forest.nodeCount} nodes)`);
  }
}

export interface TreeSelection {
  /** Trees to embed, most contested first. */
  trees: number[];
  /** The tree shown first. */
  initialTree: number;
  /** Trees in the forest, for the page's note on what was left out. */
  forestTrees: number;
  /** Why the set is bounded, shown in the page; empty when every tree is embedded. */
  note: string;
}

export interface SelectOptions {
  /** Embed exactly these trees (plus `initialTree`); default: the most contested ones. */
  trees?: readonly number[];
  /** Tree shown first; default the most contested embedded one. Always embedded. */
  initialTree?: number;
  /** At most this many automatically chosen trees. Default 50. */
  maxTrees?: number;
  /** Stop adding automatically chosen trees once this many nodes are embedded. Default 60 000. */
  maxNodes?: number;
}

export const DEFAULT_MAX_TREES = 50;
export const DEFAULT_MAX_NODES = 60_000;

/**
 * Chooses the bounded set of trees a page embeds, so a batch of thousands of trees still gives
 * a page of a few megabytes: the most contested trees (by mean intensity) up to `maxTrees` and
 * `maxNodes`, plus the requested tree wherever it ranks.
 */
export function selectTrees(forest: PackedForest, scores: Scores, options: SelectOptions = {}): TreeSelection {
  const maxTrees = options.maxTrees ?? DEFAULT_MAX_TREES;
  const maxNodes = options.maxNodes ?? DEFAULT_MAX_NODES;
  if (!Number.isInteger(maxTrees) || maxTrees < 1) throw new OptionError(`maxTrees must be an integer >= 1, got ${maxTrees}`);
  if (!(maxNodes >= 1)) throw new OptionError(`maxNodes must be >= 1, got ${maxNodes}`);
  if (forest.treeCount === 0) throw new OptionError('the forest has no trees to draw');
  const checkTree = (t: number, what: string) => {
    if (!Number.isInteger(t) || t < 0 || t >= forest.treeCount) {
      throw new OptionError(`${what} #${t} is not in the forest (it has ${forest.treeCount} trees)`);
    }
  };
  const ranked = rankTreesByContest(forest, scores);
  const rank = new Int32Array(forest.treeCount);
  ranked.forEach((t, r) => { rank[t] = r; });
  const size = (t: number) => forest.treeOffset[t + 1] - forest.treeOffset[t];

  const chosen = new Set<number>();
  if (options.trees !== undefined) {
    for (const t of options.trees) { checkTree(t, 'tree'); chosen.add(t); }
  } else {
    let nodes = 0;
    for (const t of ranked) {
      if (chosen.size >= maxTrees) break;
      if (chosen.size > 0 && nodes + size(t) > maxNodes) break;
      chosen.add(t);
      nodes += size(t);
    }
  }
  const picked = chosen.size;
  if (options.initialTree !== undefined) { checkTree(options.initialTree, 'initialTree'); chosen.add(options.initialTree); }
  if (chosen.size === 0) chosen.add(ranked[0]);
  const requestedExtra = chosen.size > picked && picked > 0;
  const trees = [...chosen].sort((a, b) => rank[a] - rank[b]);
  let note = '';
  if (trees.length < forest.treeCount) {
    note = options.trees !== undefined
      ? `This page holds ${trees.length} of the forest's ${forest.treeCount} trees, as requested.`
      : `This page holds ${trees.length} of the forest's ${forest.treeCount} trees: the ${picked} most contested `
        + `(by mean fork intensity)${requestedExtra ? ' plus the requested one' : ''}. Draw any other tree with --tree ID.`;
  }
  return { trees, initialTree: options.initialTree ?? trees[0], forestTrees: forest.treeCount, note };
}
