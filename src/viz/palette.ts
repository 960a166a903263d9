import type { TreeColumns } from './model.js';

/** What the nodes can be coloured by. */
export type ColorMetric = 'weight' | 'contrast' | 'reward' | 'uncertainty';
export const COLOR_METRICS: readonly ColorMetric[] = ['weight', 'contrast', 'reward', 'uncertainty'];

export const METRIC_LABEL: Readonly<Record<ColorMetric, string>> = {
  weight: "priority weight w (share of the parent's budget)",
  contrast: 'contrast C',
  reward: 'reward r',
  uncertainty: 'uncertainty u',
};

/**
 * Sequential heat scale, pale (low) to deep red-purple (high). Every stop is dark or saturated
 * enough to show on white next to the grey of pruned branches, so "where the contrast is" reads
 * at a glance. Interpolated linearly in sRGB between stops.
 */
export const PALETTE: readonly string[] = ['#fbefc4', '#fcd77f', '#f9a64a', '#ec6c2f', '#c83832', '#8e1a45', '#4f0f4d'];

/** Fill of nodes that have no value for the metric (the root's w and C, unvisited rewards). */
export const NO_VALUE_FILL = '#ffffff';
/** Fill of nodes in a pruned branch. */
export const PRUNED_FILL = '#c9ccd1';

export function colorAt(t: number): string {
  const u = Math.min(1, Math.max(0, Number.isFinite(t) ? t : 0)) * (PALETTE.length - 1);
  const i = Math.min(PALETTE.length - 2, Math.floor(u));
  const f = u - i;
  const a = parseHex(PALETTE[i]), b = parseHex(PALETTE[i + 1]);
  const mix = (k: number) => Math.round(a[k] + (b[k] - a[k]) * f).toString(16).padStart(2, '0');
  return `#${mix(0)}${mix(1)}${mix(2)}`;
}

function parseHex(hex: string): [number, number, number] {
  return [parseInt(hex.slice(1, 3), 16), parseInt(hex.slice(3, 5), 16), parseInt(hex.slice(5, 7), 16)];
}

/**
 * The metric's value at node `v`, or undefined where it means nothing: the root belongs to no
 * sibling group (w = 1 and C = 0 by convention), and a node without visits has no reward.
 */
export function metricValue(tree: TreeColumns, metric: ColorMetric, v: number): number | undefined {
  switch (metric) {
    case 'weight': return v === 0 ? undefined : tree.weight[v];
    case 'contrast': return v === 0 ? undefined : tree.contrast[v];
    case 'reward': return tree.visits[v] > 0 ? tree.reward[v] : undefined;
    case 'uncertainty': return tree.uncertainty[v];
  }
}

/**
 * Colour domain of a metric over one tree. Weights, contrasts and uncertainties start at 0 so
 * a pale node really is near zero; rewards span what the tree holds. Degenerate ranges widen
 * so every node still gets a colour.
 */
export function metricDomain(tree: TreeColumns, metric: ColorMetric): [number, number] {
  let lo = Infinity, hi = -Infinity;
  for (let v = 0; v < tree.parent.length; v++) {
    const x = metricValue(tree, metric, v);
    if (x === undefined) continue;
    lo = Math.min(lo, x);
    hi = Math.max(hi, x);
  }
  if (lo === Infinity) return [0, 1];
  if (metric !== 'reward') lo = Math.min(0, lo);
  if (hi - lo < 1e-12) hi = lo + 1;
  return [lo, hi];
}

/** Node fill for a metric: pruned branches grey, missing values white, else the heat scale. */
export function nodeFill(tree: TreeColumns, metric: ColorMetric, domain: readonly [number, number], v: number, greyed: boolean): string {
  if (greyed) return PRUNED_FILL;
  const x = metricValue(tree, metric, v);
  if (x === undefined) return NO_VALUE_FILL;
  return colorAt((x - domain[0]) / (domain[1] - domain[0]));
}
