import { resolveAllocateOptions, type AllocateOptions, type ResolvedAllocateOptions } from '../allocate/options.js';
import { largestRemainder } from '../allocate/rounding.js';
import { describeValue } from '../forest/errors.js';
import type { LiveStore } from './store.js';

/** Allocation settings of a live plan: SPEC §4, with per-tree budgets keyed by tree id. */
export interface LivePlanOptions extends Omit<AllocateOptions, 'budget'> {
  /** One budget for every tree, or one per tree id (every live tree must be listed). Default 16. */
  budget?: number | Readonly<Record<string, number>>;
}

/** What one `plan()` call did. The allocation itself is read through the live forest. */
export interface LivePlanSummary {
  readonly options: ResolvedAllocateOptions;
  /** Global budget mode: what no live tree could take (all of it when none is live). */
  readonly unallocatedTotal: number;
  /** Trees whose allocation was recomputed by this call, in tree order. */
  readonly replanned: readonly string[];
}

/**
 * Incremental SPEC §4 allocation. Trees are independent given their budget, so a tree is
 * re-planned only when its scores, liveness or budget changed; the global budget split is
 * recomputed every time (O(trees)) because every tree's share depends on all of them.
 *
 * The arithmetic mirrors `allocate` operation for operation (same summation orders, the
 * same `largestRemainder`), so a live plan equals `allocate` on a from-scratch snapshot with
 * the same scores exactly, including rounding ties; the property tests check that.
 */
export class LivePlanner {
  /** Per slot: the budget it was last planned with (NaN: never), unallocated, and cached group stats. */
  private readonly lastBudget: number[] = [];
  private readonly unallocated: number[] = [];
  private readonly groupSum: number[] = [];
  private readonly groupCount: number[] = [];
  private lastKey = '';
  private lastOptions: ResolvedAllocateOptions | undefined;
  private lastUnallocatedTotal = 0;
  private share = new Float64Array(0);
  private budgets = new Float64Array(0);
  private trees = new Int32Array(0);
  private treeScratch = new Int32Array(0);

  constructor(private readonly store: LiveStore) {}

  get options(): ResolvedAllocateOptions | undefined { return this.lastOptions; }
  get unallocatedTotal(): number { return this.lastUnallocatedTotal; }
  budgetOf(slot: number): number { return this.lastBudget[slot]; }
  unallocatedOf(slot: number): number { return this.unallocated[slot]; }

  /** Slots joining the forest start unplanned. */
  forget(slot: number): void {
    this.lastBudget[slot] = NaN;
    this.unallocated[slot] = 0;
  }

  plan(options: LivePlanOptions = {}): LivePlanSummary {
    const store = this.store;
    const order = store.treeOrder;
    const T = order.length;
    const { budget, ...rest } = options;
    const opts = resolveAllocateOptions({ ...rest, budget: typeof budget === 'number' ? budget : undefined });
    const perTree = budget !== undefined && typeof budget === 'object' && budget !== null ? budget : undefined;
    if (budget !== undefined && typeof budget !== 'number' && perTree === undefined) throw new RangeError(`budget must be a number or an object of budgets by tree id, got ${describeValue(budget)}`);
    const key = `${opts.pruneRatio},${opts.widen},${opts.baseDepth},${opts.depthGain},${opts.minDepth},${opts.maxDepth}`;
    if (key !== this.lastKey) for (const slot of order) store.planDirty[slot] = 1;

    // The global split needs every changed tree's statistics first; otherwise each tree is
    // refreshed right before its flow, while its rows are still in cache.
    const global = opts.totalBudget !== undefined;
    if (global) for (const slot of order) if (store.planDirty[slot]) this.refreshTree(slot, opts.pruneRatio);
    if (this.budgets.length < T) {
      const n = Math.max(T, this.budgets.length * 2, 64);
      this.share = new Float64Array(n); this.budgets = new Float64Array(n);
      this.trees = new Int32Array(n); this.treeScratch = new Int32Array(n);
      for (let t = 0; t < n; t++) this.trees[t] = t;
    }
    const budgets = this.budgets.subarray(0, T);
    let unallocatedTotal = 0;
    if (opts.totalBudget !== undefined) {
      unallocatedTotal = this.splitGlobal(opts.totalBudget, opts.minPerTree, budgets);
    } else if (perTree !== undefined) {
      for (let t = 0; t < T; t++) {
        const id = store.slotId[order[t]];
        const b = perTree[id];
        if (b === undefined) throw new RangeError(`budget has no entry for tree ${JSON.stringify(id)}`);
        if (typeof b !== 'number' || !Number.isSafeInteger(b) || b < 0) throw new RangeError(`budget[${JSON.stringify(id)}] must be an integer >= 0, got ${describeValue(b)}`);
        budgets[t] = b;
      }
    } else {
      budgets.fill(opts.budget as number);
    }

    const replanned: string[] = [];
    for (let t = 0; t < T; t++) {
      const slot = order[t];
      const dirty = store.planDirty[slot] === 1;
      if (!dirty && this.lastBudget[slot] === budgets[t]) continue;
      if (dirty && !global) this.refreshTree(slot, opts.pruneRatio);
      this.flowTree(slot, budgets[t], opts);
      store.planDirty[slot] = 0;
      this.lastBudget[slot] = budgets[t];
      replanned.push(store.slotId[slot]);
    }
    this.lastKey = key;
    this.lastOptions = opts;
    this.lastUnallocatedTotal = unallocatedTotal;
    return { options: opts, unallocatedTotal, replanned };
  }

  /**
   * What a tree's plan needs besides its budget: live(v) for every row, the kept/pruned split
   * of every group, and the intensity statistics of the global budget split. One reverse pass
   * does liveness and the split together: a row's children come after it, so they are settled
   * by the time the pass reaches it.
   */
  private refreshTree(slot: number, pruneRatio: number): void {
    const s = this.store;
    const lo = s.slotStart[slot], hi = lo + s.slotSize[slot];
    const { live, terminal, childStart, childCount, child, weight, kept, pruned, keptWeight, keptCount, intensity } = s;
    for (let v = hi - 1; v >= lo; v--) {
      const k = childCount[v];
      if (k === 0) { live[v] = terminal[v] ? 0 : 1; continue; }
      const start = childStart[v], end = start + k;
      let anyLive = false, wStar = -Infinity;
      for (let q = start; q < end; q++) {
        const c = child[q];
        if (live[c]) { anyLive = true; if (weight[c] > wStar) wStar = weight[c]; }
      }
      live[v] = anyLive || !terminal[v] ? 1 : 0;
      let sum = 0, count = 0;
      if (wStar === -Infinity) {
        for (let q = start; q < end; q++) { const c = child[q]; kept[c] = 0; pruned[c] = 0; }
      } else {
        const threshold = pruneRatio * wStar;
        for (let q = start; q < end; q++) {
          const c = child[q];
          if (!live[c]) { kept[c] = 0; pruned[c] = 0; continue; }
          if (weight[c] >= threshold) { kept[c] = 1; pruned[c] = 0; sum += weight[c]; count++; } else { kept[c] = 0; pruned[c] = 1; }
        }
      }
      keptWeight[v] = sum;
      keptCount[v] = count;
    }
    kept[lo] = 0; pruned[lo] = 0; // the root is in no group
    // Summed in group (parent row) order, as allocate does, so the global split matches it bit for bit.
    let sum = 0, count = 0;
    for (let p = lo; p < hi; p++) if (childCount[p] >= 2) { sum += intensity[p]; count++; }
    this.groupSum[slot] = sum;
    this.groupCount[slot] = count;
  }

  /** SPEC §4 global budget: μ per live tree plus shares of the rest by Q_t, largest remainder across trees. */
  private splitGlobal(total: number, minPerTree: number, out: Float64Array): number {
    const s = this.store;
    const order = s.treeOrder;
    const T = order.length;
    const share = this.share.subarray(0, T);
    let liveTrees = 0, qSum = 0;
    for (let t = 0; t < T; t++) {
      const slot = order[t];
      if (!s.live[s.slotStart[slot]]) { share[t] = 0; continue; }
      liveTrees++;
      const count = this.groupCount[slot];
      share[t] = 1e-3 + (count > 0 ? this.groupSum[slot] / count : 0);
      qSum += share[t];
    }
    if (total < minPerTree * liveTrees) {
      throw new RangeError(`total budget ${total} is below minPerTree ${minPerTree} × ${liveTrees} live trees`);
    }
    out.fill(0);
    if (liveTrees === 0) return total;
    const rest = total - minPerTree * liveTrees;
    for (let t = 0; t < T; t++) if (share[t] > 0) share[t] = minPerTree + (rest * share[t]) / qSum;
    largestRemainder(share, this.trees.subarray(0, T), total, out, this.treeScratch);
    return 0;
  }

  /**
   * One tree of `allocate` given its split (`refreshTree`): mass flow and priorities in one
   * forward pass, largest-remainder rounding, depths. Every output row is written, so
   * nothing needs clearing first.
   */
  private flowTree(slot: number, budget: number, opts: ResolvedAllocateOptions): void {
    const s = this.store;
    const lo = s.slotStart[slot], hi = lo + s.slotSize[slot];
    const { live, kept, keptWeight, keptCount, weight, intensity, childStart, childCount, child, terminal, inflow, mass, branches, depth, priority, parentRow } = s;
    const widen = opts.widen;
    const rootLive = live[lo] === 1;
    this.unallocated[slot] = rootLive ? 0 : budget;
    inflow[lo] = rootLive ? budget : 0;
    for (let v = lo; v < hi; v++) {
      const p = parentRow[v];
      priority[v] = p < 0 ? 1 : priority[p] * childCount[p] * weight[v];
      const m = inflow[v];
      const k = childCount[v];
      let x = m;
      if (m !== 0 && k !== 0 && keptCount[v] !== 0) {
        x = terminal[v] ? 0 : m * widen * intensity[v];
        const share = (m - x) / keptWeight[v];
        for (let q = childStart[v], end = q + k; q < end; q++) { const c = child[q]; inflow[c] = kept[c] ? share * weight[c] : 0; }
      } else {
        for (let q = childStart[v], end = q + k; q < end; q++) inflow[child[q]] = 0;
      }
      mass[v] = x;
    }
    if (rootLive && budget !== 0) roundTree(mass, lo, hi, budget, branches, s.identity, s.order, inflow);
    else branches.fill(0, lo, hi);

    const { baseDepth, depthGain, minDepth, maxDepth } = opts;
    for (let v = lo; v < hi; v++) {
      if (branches[v] > 0) {
        const d = Math.floor(baseDepth * Math.pow(priority[v], depthGain) + 0.5);
        depth[v] = Math.min(maxDepth, Math.max(minDepth, d));
      } else {
        depth[v] = 0;
      }
    }
  }
}

/**
 * `largestRemainder` over rows [lo, hi), specialised for the common case of a few leftover
 * units among many eligible rows: one pass keeps the best `remaining` rows by (larger
 * fractional part, then smaller row) in a small sorted buffer, instead of sorting every row
 * with a comparator, which dominated re-planning time. The order is the same strict total
 * order, so the result is identical; every other case goes to the shared `largestRemainder`.
 * `frac` is scratch (the caller's inflow column, spent by then); `order` holds the buffer.
 */
export function roundTree(x: Float64Array, lo: number, hi: number, total: number, out: Int32Array, identity: Int32Array, order: Int32Array, frac: Float64Array): void {
  let floorSum = 0, eligible = 0;
  for (let v = lo; v < hi; v++) {
    const whole = Math.floor(x[v]);
    out[v] = whole;
    floorSum += whole;
    frac[v] = x[v] - whole;
    if (x[v] > 0) eligible++;
  }
  const remaining = total - floorSum;
  if (remaining === 0 || eligible === 0) return;
  if (remaining < 0 || remaining > eligible || remaining > 64) {
    largestRemainder(x, identity.subarray(lo, hi), total, out, order.subarray(lo, hi));
    return;
  }
  // Rows arrive in increasing order, so a row never beats a kept row with an equal fraction.
  let kept = 0;
  for (let v = lo; v < hi; v++) {
    if (!(x[v] > 0)) continue;
    const f = frac[v];
    if (kept === remaining && !(f > frac[order[lo + kept - 1]])) continue;
    let i = kept < remaining ? kept++ : kept - 1;
    while (i > 0 && f > frac[order[lo + i - 1]]) { order[lo + i] = order[lo + i - 1]; i--; }
    order[lo + i] = v;
  }
  for (let i = 0; i < remaining; i++) out[order[lo + i]] += 1;
}
