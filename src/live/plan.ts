import { isBudget, MAX_WHOLE, resolveAllocateOptions, type AllocateOptions, type ResolvedAllocateOptions, type Rule } from '../allocate/options.js';
import { OptionError } from '../util/errors.js';
import { largestRemainder } from '../allocate/rounding.js';
import { claimOf } from '../allocate/v2.js';
import { ContestFlowScratch, flowContestV3 } from '../allocate/v3.js';
import { describeValue } from '../forest/errors.js';
import type { LiveStore } from './store.js';

/** A tree changed by new scores in more groups than this is re-planned from scratch (see `plan`). */
const PARTIAL_GROUPS = 3;

/** Allocation settings of a live plan: docs/ALGORITHM.md §4, with per-tree budgets keyed by tree id. */
export interface LivePlanOptions extends Omit<AllocateOptions, 'budget'> {
  /** One budget for every tree, or one per tree id (every live tree must be listed). Default 16. */
  budget?: number | Readonly<Record<string, number>>;
}

/** What one `plan()` call did. The allocation itself is read through the live forest. */
/**
 * The settings a live plan used: `resolveAllocateOptions`'s, without `widen` under rule v2
 * (it is v1's kept fraction and has no effect there, so echoing it misled).
 */
export type LivePlanSettings = Omit<ResolvedAllocateOptions, 'widen'> & { readonly widen?: number };

/** The settings to report for `opts`: `widen` only under v1. */
export function reportedSettings(opts: ResolvedAllocateOptions): LivePlanSettings {
  if (opts.rule === 'v1') return opts;
  const { widen: _v1Only, ...settings } = opts;
  return settings;
}

export interface LivePlanSummary {
  readonly options: LivePlanSettings;
  /** Global budget mode: what no live tree could take (all of it when none is live). */
  readonly unallocatedTotal: number;
  /** Trees whose allocation was recomputed by this call, in tree order. */
  readonly replanned: readonly string[];
}

/**
 * Incremental docs/ALGORITHM.md §4 allocation. Trees are independent given their budget, so a tree is
 * re-planned only when its scores, liveness or budget changed; the global budget split is
 * recomputed every time (O(trees)) because every tree's share depends on all of them.
 * When only a few of a tree's groups were re-scored (the common case: feedback arrives),
 * only those groups' kept/pruned splits are redone and only their subtrees re-flowed; the
 * rounding and depths of the tree are then redone in one pass over its rows.
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
  /** Parent rows re-scored since the last plan (their groups' kept/pruned split is redone). */
  private resplitRows = new Int32Array(64);
  private resplitCount = 0;
  /** Per slot: 1 when groupSum/groupCount lag the tree's intensities (refreshed only when a global split needs them). */
  private readonly statsStale: number[] = [];
  /** Per slot: re-scored groups counted during `plan` (0 between calls). */
  private readonly resplitPerTree: number[] = [];
  /** Per slot: its position in tree order during `plan`. */
  private readonly position: number[] = [];
  /** Depth-first stack of `reflowSubtree`. */
  private stack = new Int32Array(64);
  /** Working memory of v3's flow. */
  private readonly contestScratch = new ContestFlowScratch();

  constructor(private readonly store: LiveStore) {}

  get options(): ResolvedAllocateOptions | undefined { return this.lastOptions; }
  get unallocatedTotal(): number { return this.lastUnallocatedTotal; }
  budgetOf(slot: number): number { return this.lastBudget[slot]; }
  unallocatedOf(slot: number): number { return this.unallocated[slot]; }

  /** Slots joining the forest start unplanned. */
  forget(slot: number): void {
    this.lastBudget[slot] = NaN;
    this.unallocated[slot] = 0;
    this.statsStale[slot] = 1;
  }

  /**
   * Groups just re-scored (by parent row). A tree whose only change since its last plan is
   * new scores (planDirty 2) then redoes the split of these groups alone instead of its
   * whole liveness and split pass: liveness depends on the tree's shape and terminal flags only.
   */
  rescored(parents: ArrayLike<number>, count: number): void {
    if (this.resplitCount + count > Math.max(1 << 16, this.store.capacity)) {
      // Re-scored again and again without a plan: the trees concerned re-plan from scratch instead.
      const { rowTree, planDirty } = this.store;
      for (let i = 0; i < this.resplitCount; i++) {
        const slot = rowTree[this.resplitRows[i]];
        if (slot >= 0 && planDirty[slot] === 2) planDirty[slot] = 1;
      }
      this.resplitCount = 0;
    }
    if (this.resplitCount + count > this.resplitRows.length) {
      const next = new Int32Array(Math.max(this.resplitCount + count, this.resplitRows.length * 2));
      next.set(this.resplitRows.subarray(0, this.resplitCount));
      this.resplitRows = next;
    }
    for (let i = 0; i < count; i++) this.resplitRows[this.resplitCount++] = parents[i];
  }

  /**
   * Checks every setting of `plan(options)` against the forest as it is now and changes
   * nothing: per-tree budgets (one for every live tree, each an integer in [0, 2³¹ − 1]) and,
   * in global mode, the total against `minPerTree` × live trees. `plan` throws exactly when
   * this does, but only after it has started its work.
   */
  check(options: LivePlanOptions = {}, scoredRule?: Rule): void {
    const { opts, perTree } = resolveLiveOptions(options, scoredRule);
    const store = this.store;
    if (perTree !== undefined) for (const slot of store.treeOrder) treeBudget(perTree, store.slotId[slot]);
    if (opts.totalBudget !== undefined && opts.totalBudget < opts.minPerTree * store.treeOrder.length) {
      // A tree is live unless every one of its nodes is terminal (docs/ALGORITHM.md §4 liveness).
      let liveTrees = 0;
      for (const slot of store.treeOrder) {
        const lo = store.slotStart[slot], hi = lo + store.slotSize[slot];
        for (let v = lo; v < hi; v++) if (!store.terminal[v]) { liveTrees++; break; }
      }
      if (opts.totalBudget < opts.minPerTree * liveTrees) throw new OptionError(`total budget ${opts.totalBudget} is below minPerTree ${opts.minPerTree} × ${liveTrees} live trees`);
    }
  }

  /** `scoredRule`: the rule the store's scores were computed with (the plan's rule defaults to it). */
  plan(options: LivePlanOptions = {}, scoredRule?: Rule): LivePlanSummary {
    const store = this.store;
    const order = store.treeOrder;
    const T = order.length;
    const { opts, perTree } = resolveLiveOptions(options, scoredRule);
    const key = `${opts.rule},${opts.pruneRatio},${opts.widen},${opts.contestGain},${opts.forkKeep},${opts.baseDepth},${opts.depthGain},${opts.minDepth},${opts.maxDepth}`;
    const v2 = opts.rule === 'v2', v3 = opts.rule === 'v3';
    if (key !== this.lastKey) for (const slot of order) store.planDirty[slot] = 1;
    const planDirty = store.planDirty;

    // Trees changed by new scores only: redo the split of the re-scored groups. (Rows of trees
    // removed or re-planned from scratch since are skipped; redoing any group is harmless.)
    // A tree with more than a few such groups is re-planned from scratch instead: one pass
    // over its rows in order beats that many scattered partial ones.
    const resplit = this.resplitRows, rowTree = store.rowTree, childCount = store.childCount;
    const groupsOf = this.resplitPerTree;
    for (let i = 0; i < this.resplitCount; i++) {
      const p = resplit[i], slot = rowTree[p];
      if (slot >= 0 && planDirty[slot] === 2 && childCount[p] > 0) groupsOf[slot] = (groupsOf[slot] ?? 0) + 1;
      else resplit[i] = -1; // no partial re-flow from here either
    }
    for (let i = 0; i < this.resplitCount; i++) {
      const p = resplit[i];
      if (p < 0) continue;
      const slot = rowTree[p];
      if (planDirty[slot] !== 2) { resplit[i] = -1; continue; }
      // Under v2 and v3 every claim of a tree shares one normalizer, so a re-scored group changes the whole tree.
      if (groupsOf[slot] > PARTIAL_GROUPS || v2 || v3) planDirty[slot] = 1;
      groupsOf[slot] = 0;
      if (planDirty[slot] === 1) { resplit[i] = -1; continue; }
      this.splitGroup(p, opts.pruneRatio, false);
      this.statsStale[slot] = 1;
    }

    // The global split needs every changed tree's statistics first; otherwise each tree is
    // refreshed right before its flow, while its rows are still in cache.
    const global = opts.totalBudget !== undefined;
    if (global) {
      for (const slot of order) {
        if (planDirty[slot] === 1) this.refreshTree(slot, opts.pruneRatio, v3);
        if (this.statsStale[slot]) this.groupStats(slot, v3);
      }
    }
    if (this.budgets.length < T) {
      const n = Math.max(T, this.budgets.length * 2, 64);
      this.share = new Float64Array(n); this.budgets = new Float64Array(n);
      this.trees = new Int32Array(n); this.treeScratch = new Int32Array(n);
      for (let t = 0; t < n; t++) this.trees[t] = t;
    }
    const budgets = this.budgets.subarray(0, T);
    let unallocatedTotal = 0;
    if (opts.totalBudget !== undefined) {
      unallocatedTotal = this.splitGlobal(opts.totalBudget, opts.minPerTree, opts.treeFloor, budgets);
    } else if (perTree !== undefined) {
      for (let t = 0; t < T; t++) budgets[t] = treeBudget(perTree, store.slotId[order[t]]);
    } else {
      budgets.fill(opts.budget as number);
    }

    // Trees changed by new scores only and keeping their budget: re-flow the re-split groups'
    // subtrees (everything else flows as before). The others flow from scratch below.
    const widen = opts.widen, position = this.position;
    for (let t = 0; t < T; t++) position[order[t]] = t;
    for (let i = 0; i < this.resplitCount; i++) {
      const p = resplit[i];
      if (p < 0) continue;
      const slot = rowTree[p];
      if (this.lastBudget[slot] === budgets[position[slot]]) this.reflowSubtree(p, widen);
    }
    this.resplitCount = 0;

    const replanned: string[] = [];
    for (let t = 0; t < T; t++) {
      const slot = order[t];
      const dirty = planDirty[slot] !== 0;
      if (!dirty && this.lastBudget[slot] === budgets[t]) continue;
      if (planDirty[slot] === 1 && !global) this.refreshTree(slot, opts.pruneRatio, v3);
      if (v3) this.flowTreeV3(slot, budgets[t], opts);
      else if (v2) this.flowTreeV2(slot, budgets[t], opts.contestGain);
      else if (planDirty[slot] !== 2 || this.lastBudget[slot] !== budgets[t]) this.flowTree(slot, budgets[t], widen);
      this.finishTree(slot, budgets[t], opts);
      store.planDirty[slot] = 0;
      this.lastBudget[slot] = budgets[t];
      replanned.push(store.slotId[slot]);
    }
    this.lastKey = key;
    this.lastOptions = opts;
    this.lastUnallocatedTotal = unallocatedTotal;
    return { options: reportedSettings(opts), unallocatedTotal, replanned };
  }

  /**
   * What a tree's plan needs besides its budget: live(v) for every row and the kept/pruned
   * split of every group (the global split's statistics follow in `groupStats`). One reverse pass
   * does liveness and the split together: a row's children come after it, so they are settled
   * by the time the pass reaches it.
   */
  private refreshTree(slot: number, pruneRatio: number, v3: boolean): void {
    const s = this.store;
    const lo = s.slotStart[slot], hi = lo + s.slotSize[slot];
    const { live, terminal, childStart, childCount, child, weight, kept, pruned, visits } = s;
    for (let v = hi - 1; v >= lo; v--) {
      const k = childCount[v];
      if (k === 0) { live[v] = terminal[v] ? 0 : 1; continue; }
      const start = childStart[v], end = start + k;
      let anyLive = false, wStar = -Infinity;
      for (let q = start; q < end; q++) {
        const c = child[q];
        // v3: the bar is set by the live children some finished rollout went through.
        if (live[c]) { anyLive = true; if (weight[c] > wStar && (!v3 || visits[c] > 0)) wStar = weight[c]; }
      }
      live[v] = anyLive || !terminal[v] ? 1 : 0;
      this.markKept(v, start, end, wStar, pruneRatio, v3);
    }
    kept[lo] = 0; pruned[lo] = 0; // the root is in no group
    this.statsStale[slot] = 1;
  }

  /** The kept/pruned split of one group whose children's liveness is settled. */
  private splitGroup(v: number, pruneRatio: number, v3: boolean): void {
    const { live, childStart, childCount, child, weight, visits } = this.store;
    const start = childStart[v], end = start + childCount[v];
    let wStar = -Infinity;
    for (let q = start; q < end; q++) {
      const c = child[q];
      if (live[c] && weight[c] > wStar && (!v3 || visits[c] > 0)) wStar = weight[c];
    }
    this.markKept(v, start, end, wStar, pruneRatio, v3);
  }

  /**
   * Kept/pruned marks of the children `child[start..end)` of `v`, given the bar's best weight
   * `wStar` (v1, v2: over the live children; v3: over the live visited ones, and an unvisited
   * live child is always kept).
   */
  private markKept(v: number, start: number, end: number, wStar: number, pruneRatio: number, v3: boolean): void {
    const { live, child, weight, kept, pruned, keptWeight, keptCount, visits } = this.store;
    let sum = 0, count = 0;
    if (wStar === -Infinity && !v3) {
      for (let q = start; q < end; q++) { const c = child[q]; kept[c] = 0; pruned[c] = 0; }
    } else {
      const threshold = wStar === -Infinity ? -Infinity : pruneRatio * wStar;
      for (let q = start; q < end; q++) {
        const c = child[q];
        if (!live[c]) { kept[c] = 0; pruned[c] = 0; continue; }
        if ((v3 && visits[c] === 0) || weight[c] >= threshold) { kept[c] = 1; pruned[c] = 0; sum += weight[c]; count++; } else { kept[c] = 0; pruned[c] = 1; }
      }
    }
    keptWeight[v] = sum;
    keptCount[v] = count;
  }

  /** Intensity statistics of the global budget split (v3: the root group's intensity alone). */
  private groupStats(slot: number, v3: boolean): void {
    const s = this.store;
    const lo = s.slotStart[slot], hi = lo + s.slotSize[slot];
    const { childCount, intensity } = s;
    if (v3) {
      const contested = childCount[lo] >= 2;
      this.groupSum[slot] = contested ? intensity[lo] : 0;
      this.groupCount[slot] = contested ? 1 : 0;
      this.statsStale[slot] = 0;
      return;
    }
    // Summed in group (parent row) order, as allocate does, so the global split matches it bit for bit.
    let sum = 0, count = 0;
    for (let p = lo; p < hi; p++) if (childCount[p] >= 2) { sum += intensity[p]; count++; }
    this.groupSum[slot] = sum;
    this.groupCount[slot] = count;
    this.statsStale[slot] = 0;
  }

  /** docs/ALGORITHM.md §4 global budget: μ per live tree plus shares of the rest by Q_t, largest remainder across trees. */
  private splitGlobal(total: number, minPerTree: number, treeFloor: number, out: Float64Array): number {
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
      share[t] = treeFloor + (count > 0 ? this.groupSum[slot] / count : 0);
      qSum += share[t];
    }
    if (total < minPerTree * liveTrees) {
      throw new OptionError(`total budget ${total} is below minPerTree ${minPerTree} × ${liveTrees} live trees`);
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
   * forward pass. Every output row is written, so nothing needs clearing first.
   */
  private flowTree(slot: number, budget: number, widen: number): void {
    const s = this.store;
    const lo = s.slotStart[slot], hi = lo + s.slotSize[slot];
    const rootLive = s.live[lo] === 1;
    this.unallocated[slot] = rootLive ? 0 : budget;
    s.inflow[lo] = rootLive ? budget : 0;
    s.priority[lo] = 1;
    for (let v = lo; v < hi; v++) this.flowRow(v, widen);
  }

  /**
   * One tree of `allocate` under rule v2, operation for operation as `flowClaimsV2`: ψ from the
   * parent side, the claims π_v = ψ_v·a_v of rows reached through kept children, and
   * x_v = B·π_v/Σπ. `inflow` holds "reached" (1 or 0) here; v1 keeps its mass there.
   */
  private flowTreeV2(slot: number, budget: number, contestGain: number): void {
    const s = this.store;
    const lo = s.slotStart[slot], hi = lo + s.slotSize[slot];
    const { live, kept, weight, intensity, childStart, childCount, child, terminal, parentRow, inflow: reach, mass, priority } = s;
    priority[lo] = 1;
    let total = 0;
    for (let v = lo; v < hi; v++) {
      const k = childCount[v];
      const pk = priority[v] * k;
      for (let q = childStart[v], end = q + k; q < end; q++) { const c = child[q]; priority[c] = pk * weight[c]; }
      reach[v] = v === lo ? live[v] : reach[parentRow[v]] * kept[v];
      if (reach[v] === 0) { mass[v] = 0; continue; }
      const claim = priority[v] * claimOf(terminal[v] === 0, k, intensity[v], contestGain);
      mass[v] = claim;
      total += claim;
    }
    if (!Number.isFinite(total)) total = this.scaledClaimsV2(lo, hi, contestGain);
    const placed = live[lo] === 1 && total > 0;
    this.unallocated[slot] = placed ? 0 : budget;
    if (!placed) { mass.fill(0, lo, hi); return; }
    const scale = budget / total;
    for (let v = lo; v < hi; v++) mass[v] = scale * mass[v];
  }

  /**
   * v2's claims of a tree whose direct sum overflowed, as exp(ln ψ − M)·a (`scaledClaims` of
   * src/allocate/v2.ts, the same operations in the same order). `inflow` holds reach here; ln ψ
   * is kept in the v3 flow's scratch, which v2 does not otherwise use.
   */
  private scaledClaimsV2(lo: number, hi: number, contestGain: number): number {
    const s = this.store;
    const { childCount, parentRow, weight, terminal, intensity, inflow: reach, mass } = s;
    const scratch = this.contestScratch;
    scratch.ensure(hi - lo);
    const logPsi = scratch.logPsi;
    let top = -Infinity;
    for (let v = lo; v < hi; v++) {
      const p = parentRow[v];
      logPsi[v - lo] = p < 0 ? 0 : logPsi[p - lo] + Math.log(childCount[p] * weight[v]);
      const a = claimOf(terminal[v] === 0, childCount[v], intensity[v], contestGain);
      if (reach[v] && a > 0 && logPsi[v - lo] > top) top = logPsi[v - lo];
    }
    let total = 0;
    for (let v = lo; v < hi; v++) {
      mass[v] = reach[v] ? Math.exp(logPsi[v - lo] - top) * claimOf(terminal[v] === 0, childCount[v], intensity[v], contestGain) : 0;
      total += mass[v];
    }
    return total;
  }

  /**
   * One tree of `allocate` under rule v3: `flowContestV3` on the store's rows (the same function
   * `allocate` runs on a packed forest), then ψ for the depths, from the parent side with the
   * same products as `allocate`.
   */
  private flowTreeV3(slot: number, budget: number, opts: ResolvedAllocateOptions): void {
    const s = this.store;
    const lo = s.slotStart[slot], hi = lo + s.slotSize[slot];
    const placed = flowContestV3(s, lo, hi, budget, s.kept, s.live, { contestGain: opts.contestGain, forkKeep: opts.forkKeep }, this.contestScratch, s.mass);
    this.unallocated[slot] = placed ? 0 : budget;
    const { childStart, childCount, child, weight, priority } = s;
    priority[lo] = 1;
    for (let v = lo; v < hi; v++) {
      const k = childCount[v];
      const pk = priority[v] * k;
      for (let q = childStart[v], end = q + k; q < end; q++) { const c = child[q]; priority[c] = pk * weight[c]; }
    }
  }

  /**
   * Re-flow of the subtree of row p after its group's split changed, in a tree whose budget,
   * liveness and options are as at its last flow: only these rows' inputs changed (p's own
   * inflow and priority did not), and each is recomputed after its parent (depth first from p)
   * with the same steps as `flowTree`, so the numbers are the same. Nested re-split groups are
   * simply re-flowed twice.
   */
  private reflowSubtree(p: number, widen: number): void {
    const { childStart, childCount, child, slotSize, rowTree } = this.store;
    if (this.stack.length < slotSize[rowTree[p]]) this.stack = new Int32Array(Math.max(slotSize[rowTree[p]], this.stack.length * 2));
    const stack = this.stack;
    stack[0] = p;
    let top = 1;
    while (top > 0) {
      const v = stack[--top];
      this.flowRow(v, widen);
      for (let q = childStart[v], end = q + childCount[v]; q < end; q++) stack[top++] = child[q];
    }
  }

  /**
   * Row v's mass, and its children's inflow and priority ψ (ψ_c = ψ_v · k · w_c, the same
   * product `allocate` forms from the child's side).
   */
  private flowRow(v: number, widen: number): void {
    const { kept, keptWeight, keptCount, weight, intensity, childStart, childCount, child, terminal, inflow, mass, priority } = this.store;
    const m = inflow[v];
    const k = childCount[v];
    if (k === 0) { mass[v] = m; return; }
    const pk = priority[v] * k;
    let x = m;
    if (m !== 0 && keptCount[v] !== 0) {
      x = terminal[v] ? 0 : m * widen * intensity[v];
      const share = (m - x) / keptWeight[v];
      for (let q = childStart[v], end = q + k; q < end; q++) {
        const c = child[q], w = weight[c];
        priority[c] = pk * w;
        inflow[c] = kept[c] ? share * w : 0;
      }
    } else {
      for (let q = childStart[v], end = q + k; q < end; q++) { const c = child[q]; priority[c] = pk * weight[c]; inflow[c] = 0; }
    }
    mass[v] = x;
  }

  /** Largest-remainder rounding of the tree's mass, then depths (docs/ALGORITHM.md §4). */
  private finishTree(slot: number, budget: number, opts: ResolvedAllocateOptions): void {
    const s = this.store;
    const lo = s.slotStart[slot], hi = lo + s.slotSize[slot];
    const { mass, branches, depth, priority } = s;
    if (s.live[lo] === 1 && budget !== 0 && this.unallocated[slot] === 0) roundTree(mass, lo, hi, budget, branches, s.identity, s.order);
    else branches.fill(0, lo, hi);

    const { baseDepth, depthGain, minDepth, maxDepth } = opts;
    // ψ^1 is ψ exactly (Math.pow returns x for y = 1), and the default gain is 1: skip the call.
    const linear = depthGain === 1;
    for (let v = lo; v < hi; v++) {
      if (branches[v] > 0) {
        const d = Math.floor(baseDepth * (linear ? priority[v] : Math.pow(priority[v], depthGain)) + 0.5);
        depth[v] = Math.min(maxDepth, Math.max(minDepth, d));
      } else {
        depth[v] = 0;
      }
    }
  }
}

function resolveLiveOptions(options: LivePlanOptions, scoredRule?: Rule): { opts: ResolvedAllocateOptions; perTree: Readonly<Record<string, number>> | undefined } {
  const { budget, ...rest } = options;
  const opts = resolveAllocateOptions({ ...rest, budget: typeof budget === 'number' ? budget : undefined }, scoredRule);
  const perTree = budget !== undefined && typeof budget === 'object' && budget !== null && !Array.isArray(budget) ? budget : undefined;
  if (budget !== undefined && typeof budget !== 'number' && perTree === undefined) throw new OptionError(`budget must be a number or an object of budgets by tree id, got ${describeValue(budget)}`);
  return { opts, perTree };
}

/** A live tree's entry of a per-tree budget object (own keys only: ids are untrusted). */
function treeBudget(perTree: Readonly<Record<string, number>>, id: string): number {
  if (!Object.hasOwn(perTree, id)) throw new OptionError(`budget has no entry for tree ${JSON.stringify(id)}`);
  const b = perTree[id];
  if (!isBudget(b)) throw new OptionError(`budget[${JSON.stringify(id)}] must be an integer in [0, ${MAX_WHOLE}], got ${describeValue(b)}`);
  return b;
}

/** Buffer of `roundTree`: the best rows so far by (larger fractional part, then smaller row). */
const BEST_MAX = 64;
const bestFrac = new Float64Array(BEST_MAX);
const bestRow = new Int32Array(BEST_MAX);

/**
 * `largestRemainder` over rows [lo, hi), specialised for the common case of a few leftover
 * units among many eligible rows: one pass sums the floors, a second keeps the best
 * `remaining` rows by (larger fractional part, then smaller row) in a small sorted buffer,
 * instead of sorting every row with a comparator, which dominated re-planning time. The order
 * is the same strict total order, so the result is identical; every other case goes to the
 * shared `largestRemainder`. `order` is scratch for that fallback.
 */
export function roundTree(x: Float64Array, lo: number, hi: number, total: number, out: Int32Array, identity: Int32Array, order: Int32Array): void {
  let floorSum = 0, eligible = 0;
  for (let v = lo; v < hi; v++) {
    const xv = x[v];
    const whole = Math.floor(xv);
    out[v] = whole;
    floorSum += whole;
    if (xv > 0) eligible++;
  }
  const remaining = total - floorSum;
  if (remaining === 0 || eligible === 0) return;
  if (remaining < 0 || remaining > eligible || remaining > BEST_MAX) {
    largestRemainder(x, identity.subarray(lo, hi), total, out, order.subarray(lo, hi));
    return;
  }
  // Rows arrive in increasing order, so a row never beats a kept row with an equal fraction.
  let kept = 0;
  for (let v = lo; v < hi; v++) {
    const xv = x[v];
    if (!(xv > 0)) continue;
    const f = xv - Math.floor(xv);
    if (kept === remaining) { if (!(f > bestFrac[kept - 1])) continue; } else kept++;
    let i = kept - 1;
    while (i > 0 && f > bestFrac[i - 1]) { bestFrac[i] = bestFrac[i - 1]; bestRow[i] = bestRow[i - 1]; i--; }
    bestFrac[i] = f;
    bestRow[i] = v;
  }
  for (let i = 0; i < remaining; i++) out[bestRow[i]] += 1;
}
