import { splitTree } from '../allocate/liveness.js';
import { isBudget, MAX_WHOLE, resolveAllocateOptions, type AllocateOptions, type ResolvedAllocateOptions, type Rule } from '../allocate/options.js';
import { pathPriority } from '../allocate/priority.js';
import { OptionError } from '../util/errors.js';
import { largestRemainder } from '../allocate/rounding.js';
import { ruleNamed } from '../allocate/rules/index.js';
import type { AllocationRule } from '../allocate/rules/rule.js';
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
 * The settings a live plan used: `resolveAllocateOptions`'s, without `widen` under a rule that
 * does not read it (it is v1's kept fraction and has no effect elsewhere, so echoing it misled).
 */
export type LivePlanSettings = Omit<ResolvedAllocateOptions, 'widen'> & { readonly widen?: number };

/** The settings to report for `opts`: `widen` only under a rule that reads it (v1). */
export function reportedSettings(opts: ResolvedAllocateOptions): LivePlanSettings {
  if (ruleNamed(opts.rule).defaults.widen !== undefined) return opts;
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
 * Each tree's early stop, signal and mass are its rule's (src/allocate/rules/), run on the
 * store's rows: the very code `allocate` runs on a packed forest. When only a few of a tree's
 * groups were re-scored (the common case: feedback arrives) and the rule can re-flow a subtree
 * alone (`reflowSubtree`: v1), only those groups' kept/pruned splits are redone and only their
 * subtrees re-flowed; ψ, the rounding and depths of the tree are then redone over its rows.
 *
 * The shared arithmetic mirrors `allocate` operation for operation (same summation orders, the
 * same `largestRemainder`), so a live plan equals `allocate` on a from-scratch snapshot with
 * the same scores exactly, including rounding ties; the property tests check that.
 */
export class LivePlanner {
  /** Per slot: the budget it was last planned with (NaN: never), unallocated, and its cached S_t. */
  private readonly lastBudget: number[] = [];
  private readonly unallocated: number[] = [];
  private readonly signal: number[] = [];
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
  /** During `plan`: per slot, the first entry of `resplitRows` to re-flow alone (−1: none), each entry the next of its tree. */
  private readonly reflowFirst: number[] = [];
  private reflowNext = new Int32Array(64);
  /** Per slot: 1 when its cached S_t lags the tree's intensities (refreshed only when a global split needs it). */
  private readonly statsStale: number[] = [];
  /** Per slot: re-scored groups counted during `plan` (0 between calls). */
  private readonly resplitPerTree: number[] = [];

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
      this.reflowNext = new Int32Array(next.length);
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
    const rule = ruleNamed(opts.rule);
    const key = `${opts.rule},${opts.pruneRatio},${opts.widen},${opts.contestGain},${opts.forkKeep},${opts.baseDepth},${opts.depthGain},${opts.minDepth},${opts.maxDepth}`;
    if (key !== this.lastKey) for (const slot of order) store.planDirty[slot] = 1;
    const planDirty = store.planDirty;

    // Trees changed by new scores only: redo the split of the re-scored groups. (Rows of trees
    // removed or re-planned from scratch since are skipped; redoing any group is harmless.)
    // A tree with more than a few such groups is re-planned from scratch instead: one pass
    // over its rows in order beats that many scattered partial ones. So is a tree whose rule
    // cannot re-flow a subtree alone (v2, v3: every claim of a tree shares one normalizer).
    const resplit = this.resplitRows, rowTree = store.rowTree, childCount = store.childCount;
    const groupsOf = this.resplitPerTree, reflowFirst = this.reflowFirst, reflowNext = this.reflowNext;
    const partial = rule.reflowSubtree !== undefined;
    for (const slot of order) reflowFirst[slot] = -1;
    for (let i = 0; i < this.resplitCount; i++) {
      const p = resplit[i], slot = rowTree[p];
      if (slot >= 0 && planDirty[slot] === 2 && childCount[p] > 0) groupsOf[slot] = (groupsOf[slot] ?? 0) + 1;
      else resplit[i] = -1; // no partial re-flow from here either
    }
    for (let i = this.resplitCount - 1; i >= 0; i--) {
      const p = resplit[i];
      if (p < 0) continue;
      const slot = rowTree[p];
      if (planDirty[slot] !== 2) continue;
      if (groupsOf[slot] > PARTIAL_GROUPS || !partial) planDirty[slot] = 1;
      groupsOf[slot] = 0;
      if (planDirty[slot] === 1) continue;
      rule.earlyStop(store, p, p + 1, opts.pruneRatio);
      this.statsStale[slot] = 1;
      reflowNext[i] = reflowFirst[slot] ?? -1;
      reflowFirst[slot] = i;
    }

    // The global split needs every changed tree's statistics first; otherwise each tree is
    // refreshed right before its flow, while its rows are still in cache.
    const global = opts.totalBudget !== undefined;
    if (global) {
      for (const slot of order) {
        if (planDirty[slot] === 1) this.refreshTree(slot, rule, opts.pruneRatio);
        if (this.statsStale[slot]) this.treeSignal(slot, rule);
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

    const replanned: string[] = [];
    for (let t = 0; t < T; t++) {
      const slot = order[t];
      const dirty = planDirty[slot];
      const first = reflowFirst[slot];
      if (dirty === 0 && this.lastBudget[slot] === budgets[t]) continue;
      const lo = store.slotStart[slot], hi = lo + store.slotSize[slot];
      if (dirty === 1 && !global) this.refreshTree(slot, rule, opts.pruneRatio);
      // ψ follows the weights and the tree's shape: a tree whose budget alone changed keeps it.
      if (dirty !== 0) pathPriority(store, lo, hi);
      if (partial && dirty === 2 && this.lastBudget[slot] === budgets[t]) {
        // Scores of a few groups alone changed: re-flow their subtrees (everything else flows as before).
        for (let i = first; i >= 0; i = reflowNext[i]) rule.reflowSubtree!(store, resplit[i], opts);
      } else {
        this.unallocated[slot] = rule.mass(store, lo, hi, budgets[t], opts) ? 0 : budgets[t];
      }
      this.finishTree(slot, budgets[t], opts);
      store.planDirty[slot] = 0;
      this.lastBudget[slot] = budgets[t];
      replanned.push(store.slotId[slot]);
    }
    // Only now: a plan refused on its budgets (above) redoes these groups next time.
    this.resplitCount = 0;
    this.lastKey = key;
    this.lastOptions = opts;
    this.lastUnallocatedTotal = unallocatedTotal;
    return { options: reportedSettings(opts), unallocatedTotal, replanned };
  }

  /** What a tree's plan needs besides its budget and ψ: liveness and its rule's early stop (`splitTree`, as `allocate` runs it). */
  private refreshTree(slot: number, rule: AllocationRule, pruneRatio: number): void {
    const s = this.store;
    const lo = s.slotStart[slot];
    splitTree(rule, s, lo, lo + s.slotSize[slot], pruneRatio);
    this.statsStale[slot] = 1;
  }

  /** The tree's S_t for the global budget split, its rule's `treeSignal` on the store's rows. */
  private treeSignal(slot: number, rule: AllocationRule): void {
    const s = this.store;
    const lo = s.slotStart[slot];
    this.signal[slot] = rule.treeSignal(s, lo, lo + s.slotSize[slot]);
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
      share[t] = treeFloor + this.signal[slot];
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
