import type { AllocationRule, ForestRows, RuleSettings } from './rule.js';

/**
 * Rule v1 (docs/ALGORITHM.md, "v1: flow with a kept fraction"), kept exactly for
 * reproducibility: the root gets mass B; a node with mass m and kept children keeps
 * x = m·λ·I (0 if terminal) and passes m − x to its kept children in proportion to their
 * weights; a node with no kept child keeps all of m. Its early stop and its S_t are v2's too.
 */
export const v1: AllocationRule = {
  name: 'v1',
  defaults: { widen: 0.5 },
  treeFloor: { default: 1e-3, fixed: true },
  earlyStop: splitByWeightBar,
  treeSignal: meanForkIntensity,
  mass: flowV1,
  reflowSubtree: reflowV1,
};

/**
 * The early stop of v1 and v2 (docs/ALGORITHM.md, "Early stop") for the groups headed by rows
 * [from, to): the live children with w ≥ ρ·w* are kept, w* the largest weight among the live
 * children; the other live children are pruned. A group with no live child keeps nothing.
 */
export function splitByWeightBar(rows: ForestRows, from: number, to: number, pruneRatio: number): void {
  const { live, childStart, childCount, child, weight, kept, pruned, keptWeight, keptCount } = rows;
  for (let v = from; v < to; v++) {
    const k = childCount[v];
    if (k === 0) continue;
    const start = childStart[v], end = start + k;
    let wStar = -Infinity;
    for (let q = start; q < end; q++) {
      const c = child[q];
      if (live[c] && weight[c] > wStar) wStar = weight[c];
    }
    const threshold = pruneRatio * wStar; // −∞ with no live child: nothing below is live
    let sum = 0, count = 0;
    for (let q = start; q < end; q++) {
      const c = child[q];
      if (!live[c]) { kept[c] = 0; pruned[c] = 0; continue; }
      if (weight[c] >= threshold) { kept[c] = 1; pruned[c] = 0; sum += weight[c]; count++; } else { kept[c] = 0; pruned[c] = 1; }
    }
    keptWeight[v] = sum;
    keptCount[v] = count;
  }
}

/** S_t of v1 and v2: the mean intensity of the tree's groups with k ≥ 2 (0 without one), summed in row order. */
export function meanForkIntensity(rows: ForestRows, lo: number, hi: number): number {
  const { childCount, intensity } = rows;
  let sum = 0, count = 0;
  for (let v = lo; v < hi; v++) if (childCount[v] >= 2) { sum += intensity[v]; count++; }
  return count > 0 ? sum / count : 0;
}

/** v1's flow over the tree at rows [lo, hi): every row's mass, and its children's inflow. */
function flowV1(rows: ForestRows, lo: number, hi: number, budget: number, settings: RuleSettings): boolean {
  const rootLive = rows.live[lo] === 1;
  rows.inflow[lo] = rootLive ? budget : 0;
  for (let v = lo; v < hi; v++) flowRow(rows, v, settings.widen);
  return rootLive;
}

/** Per-thread stack of `reflowV1`'s depth-first walk. */
let stack = new Int32Array(64);

/**
 * The flow of the subtree of p again, each row after its parent (depth first from p), with the
 * same steps as `flowV1`: p's own inflow did not change, so the numbers are those a whole flow
 * would give. Nested re-split groups are simply re-flowed twice.
 */
function reflowV1(rows: ForestRows, p: number, settings: RuleSettings): void {
  const { childStart, childCount, child } = rows;
  stack[0] = p;
  let top = 1;
  while (top > 0) {
    const v = stack[--top];
    flowRow(rows, v, settings.widen);
    const k = childCount[v];
    if (top + k > stack.length) { const grown = new Int32Array(Math.max(top + k, stack.length * 2)); grown.set(stack.subarray(0, top)); stack = grown; }
    for (let q = childStart[v], end = q + k; q < end; q++) stack[top++] = child[q];
  }
}

/** Row v's mass from its inflow m, and its children's inflow (0 for children not kept). */
function flowRow(rows: ForestRows, v: number, widen: number): void {
  const { kept, keptWeight, keptCount, weight, intensity, childStart, childCount, child, terminal, inflow, mass } = rows;
  const m = inflow[v];
  const k = childCount[v];
  if (k === 0) { mass[v] = m; return; }
  let x = m;
  if (m !== 0 && keptCount[v] !== 0) {
    x = terminal[v] ? 0 : m * widen * intensity[v];
    const share = (m - x) / keptWeight[v];
    for (let q = childStart[v], end = q + k; q < end; q++) { const c = child[q]; inflow[c] = kept[c] ? share * weight[c] : 0; }
  } else {
    for (let q = childStart[v], end = q + k; q < end; q++) inflow[child[q]] = 0;
  }
  mass[v] = x;
}
