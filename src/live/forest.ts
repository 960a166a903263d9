import { extendStore, type ExtensionResult, type ForestExtension } from './extend.js';
import { assertFinitePlan, assertFiniteTreePlan, type GroupScore, type NodeAllocation, type NodeScore, type PlanJson, type TreePlan } from '../allocate/plan.js';
import type { NodeInput, TreeInput } from '../forest/input.js';
import type { PackedForest } from '../forest/packed.js';
import { GpuDeviceLostError } from '../gpu/errors.js';
import { resolveParams, type ScoreParams } from '../score/types.js';
import type { LiveBackend } from './backend.js';
import { LivePlanner, reportedSettings, type LivePlanOptions, type LivePlanSummary } from './plan.js';
import { LiveError, LiveStore, type NodeUpdate } from './store.js';
import { checkGathered, splitGathered, StaleSharesError, type ShardShares } from '../allocate/shards.js';
import { DEFAULT_RULE, resolveAllocateOptions } from '../allocate/options.js';
import { OptionError } from '../util/errors.js';
import { liveShares, type ShareOptions } from './shards.js';
import { checkConcurrency, LivePlacements, type Placement } from './placement.js';

export interface LiveStats {
  backend: 'cpu' | 'gpu';
  dim: number;
  trees: number;
  nodes: number;
  groups: number;
  /** Groups waiting to be re-scored. */
  dirtyGroups: number;
  /** Rows reserved (tree slabs with their spare rows, including freed slabs). */
  capacityRows: number;
  params: ScoreParams;
  /** Totals since creation. */
  rescores: number;
  rescoredGroups: number;
  plans: number;
  replannedTrees: number;
}

/** One tree's node fields, each array indexed by node (length: the tree's size). */
export interface TreeValues {
  /** Tree-local parent index, -1 for the root. */
  parent: number[];
  /** Mean reward of the finished rollouts through the node (or the value last set by `update`). */
  reward: number[];
  /** Finished rollouts through the node. */
  visits: number[];
  uncertainty: number[];
  terminal: boolean[];
}

/**
 * A forest that changes while it is being planned: trees join and leave, nodes are appended,
 * rollouts finish and feed rewards back. Each change marks the sibling groups it affects;
 * `rescore()` scores only those, and `plan()` re-allocates only the trees whose scores,
 * liveness or budget changed. Scores and plans always equal a from-scratch `score` +
 * `allocate` of the same forest (within the tolerances of docs/ALGORITHM.md §6 on the GPU).
 *
 * Mutations are synchronous and atomic (validated first, a `LiveError` names the tree, node
 * and field); scoring is asynchronous because the GPU backend is.
 */
export class LiveForest {
  readonly store: LiveStore;
  private readonly planner: LivePlanner;
  private readonly placements: LivePlacements;
  private params: ScoreParams;
  private dirtyScratch = new Int32Array(0);
  private counters = { rescores: 0, rescoredGroups: 0, plans: 0, replannedTrees: 0 };
  /** The rescore in flight, if any. */
  private rescoring: Promise<number> | undefined;
  private planned = false;
  /** Set by `planShard`: the global total and top-level unallocated its plan reports. */
  private sharded: { totalBudget: number; unallocated: number } | undefined;

  private backendNow: LiveBackend;

  /**
   * `fallback`: with `backend: 'auto'`, a backend to finish on when the GPU device is lost
   * (every group is then re-scored there once, and `onNotice` says so). `allowUnknownFields`:
   * trees and nodes may carry fields docs/ALGORITHM.md §1 does not define (ignored); otherwise they are refused.
   */
  constructor(dim: number, backend: LiveBackend, params?: Partial<ScoreParams>, private readonly recovery: { fallback?: () => LiveBackend; onNotice?: (message: string) => void; allowUnknownFields?: boolean } = {}) {
    this.store = new LiveStore(dim, { allowUnknownFields: recovery.allowUnknownFields === true });
    this.planner = new LivePlanner(this.store);
    this.placements = new LivePlacements(this.store);
    this.params = resolveParams(params);
    this.backendNow = backend;
    backend.attach(this.store);
  }

  /** The backend scoring dirty groups now. */
  get backend(): LiveBackend { return this.backendNow; }

  get dim(): number { return this.store.dim; }
  get backendKind(): 'cpu' | 'gpu' { return this.backendNow.kind; }
  get treeCount(): number { return this.store.treeCount; }
  get nodeCount(): number { return this.store.nodeTotal; }
  get scoreParams(): ScoreParams { return { ...this.params }; }
  treeIds(): string[] { return this.store.treeOrder.map((slot) => this.store.slotId[slot]); }
  hasTree(id: string): boolean { return this.store.hasTree(id); }

  addTree(tree: TreeInput): string {
    this.checkIdle('add a tree');
    const slot = this.store.addTree(tree);
    this.planner.forget(slot);
    return this.store.slotId[slot];
  }

  /** Adds every tree of a packed forest (e.g. a loaded file or a synthetic batch). */
  addForest(forest: PackedForest): void {
    this.checkIdle('add trees');
    for (const slot of this.store.addForest(forest)) this.planner.forget(slot);
  }

  /**
   * Replaces the live trees that share an id with the forest's (they leave the tree order; the
   * forest's trees join at its end) and adds the others; all or nothing: the whole forest is
   * checked before any live tree is removed. Returns the ids replaced.
   */
  replaceForest(forest: PackedForest): string[] {
    this.checkIdle('replace trees');
    const replaced = forest.treeIds.filter((id) => this.store.hasTree(id));
    this.store.checkForest(forest, new Set(replaced));
    this.store.removeTrees(replaced);
    this.placements.forget(replaced);
    this.addForest(forest);
    return replaced;
  }

  /**
   * A round's growth in one change, all or none: feedback `updates` (nodes that existed before),
   * new nodes for many trees (`rows`), and finished `rollouts` (whose paths may use the new
   * nodes). See `ForestExtension`.
   */
  extend(change: ForestExtension): ExtensionResult {
    this.checkIdle('extend the forest');
    return extendStore(this.store, change);
  }

  /** Appends nodes to a tree; returns the index of the first new node. */
  addNodes(treeId: string, nodes: readonly NodeInput[]): number {
    this.checkIdle('add nodes');
    return this.store.addNodes(treeId, nodes);
  }

  update(updates: NodeUpdate | readonly NodeUpdate[]): void {
    this.checkIdle('update nodes');
    this.store.update(Array.isArray(updates) ? updates : [updates as NodeUpdate]);
  }

  /** Records a finished rollout along `path` (root first) or up to `leaf`. */
  finishRollout(treeId: string, route: { path: readonly number[] } | { leaf: number }, reward: number): void {
    this.checkIdle('record a rollout');
    const path = 'path' in route ? route.path : this.store.pathTo(treeId, route.leaf);
    this.store.finishRollout(treeId, path, reward);
  }

  removeTree(treeId: string): void {
    this.removeTrees([treeId]);
  }

  /** Removes several trees at once (all or none: an unknown id removes nothing); linear in the forest. */
  removeTrees(treeIds: readonly string[]): void {
    this.checkIdle('remove trees');
    this.store.removeTrees(treeIds);
    this.placements.forget(treeIds);
  }

  /** Changes α, τ or the rule: every group's scores change. */
  setParams(params: Partial<ScoreParams>): void {
    this.checkIdle('change the parameters');
    const next = resolveParams({ ...this.params, ...params });
    if (next.alpha === this.params.alpha && next.tau === this.params.tau && next.rule === this.params.rule) return;
    this.params = next;
    this.store.markAllDirty();
  }

  get dirtyGroupCount(): number {
    let n = 0;
    const { dirtyGroups, dirty } = this.store;
    // The list may repeat a row or hold rows freed since; count each marked row once.
    const seen = new Set<number>();
    for (const p of dirtyGroups) if (dirty[p] && !seen.has(p)) { seen.add(p); n++; }
    return n;
  }

  /**
   * Re-scores the dirty groups on the backend; returns how many. Calls in flight at once run
   * one after the other. While one runs (on worker threads or the GPU), the forest refuses
   * changes: they would mix into groups being scored (`await` the rescore or plan first).
   */
  async rescore(): Promise<number> {
    while (this.rescoring !== undefined) await this.rescoring.catch(() => {});
    const run = this.rescoreNow();
    this.rescoring = run;
    try {
      return await run;
    } finally {
      if (this.rescoring === run) this.rescoring = undefined;
    }
  }

  /** Throws if a rescore is in flight (see `rescore`). */
  private checkIdle(change: string): void {
    if (this.rescoring !== undefined) throw new Error(`cannot ${change} while a rescore or plan is in flight: await it first`);
  }

  private async rescoreNow(): Promise<number> {
    const s = this.store;
    const list = s.dirtyGroups;
    if (this.dirtyScratch.length < list.length) this.dirtyScratch = new Int32Array(Math.max(list.length, this.dirtyScratch.length * 2));
    const parents = this.dirtyScratch;
    let count = 0;
    for (const p of list) {
      if (!s.dirty[p]) continue;
      s.dirty[p] = 0;
      if (s.rowTree[p] >= 0 && s.childCount[p] > 0) parents[count++] = p;
    }
    s.dirtyGroups = [];
    if (count === 0) return 0;
    try {
      await this.backendNow.score(s, this.params, parents, count);
    } catch (err) {
      // Keep the work: a later rescore retries these groups.
      for (let i = 0; i < count; i++) s.markGroup(parents[i]);
      const fallback = this.recovery.fallback;
      if (fallback === undefined || !(err instanceof GpuDeviceLostError)) throw err;
      // The host holds the whole forest: carry on with the fallback from a full re-score.
      this.backendNow.destroy();
      this.backendNow = fallback();
      s.trackChanges = false;
      s.changedSpans = [];
      s.changedSlots = [];
      this.backendNow.attach(s);
      this.recovery.onNotice?.(`live forest: ${err.message}; re-scoring on the ${this.backendNow.kind} from now on`);
      s.markAllDirty();
      return this.rescoreNow();
    }
    this.checkScoresFinite(parents, count);
    this.planner.rescored(parents, count);
    this.counters.rescores++;
    this.counters.rescoredGroups += count;
    return count;
  }

  /**
   * No plan is ever built from a NaN or infinite score: the inputs are finite and the scorers
   * keep them so, and if a group still scored to a non-finite value, it stays dirty (every
   * later plan, `scores` or `global-shares` fails the same way) and the call fails naming the
   * tree, the node and the field, the counters untouched.
   */
  private checkScoresFinite(parents: Int32Array, count: number): void {
    const s = this.store;
    const { childStart, childCount, child, contrast, weight, gradAlpha, gradTau, intensity } = s;
    for (let q = 0; q < count; q++) {
      const p = parents[q];
      let bad: { row: number; field: string } | undefined = Number.isFinite(intensity[p]) ? undefined : { row: p, field: 'intensity' };
      for (let i = childStart[p], end = i + childCount[p]; bad === undefined && i < end; i++) {
        const c = child[i];
        if (!Number.isFinite(contrast[c])) bad = { row: c, field: 'contrast' };
        else if (!Number.isFinite(weight[c])) bad = { row: c, field: 'weight' };
        else if (!Number.isFinite(gradAlpha[c])) bad = { row: c, field: 'gradAlpha' };
        else if (!Number.isFinite(gradTau[c])) bad = { row: c, field: 'gradTau' };
      }
      if (bad === undefined) continue;
      for (let i = 0; i < count; i++) s.markGroup(parents[i]);
      const slot = s.rowTree[bad.row];
      throw new LiveError('invalid_value', s.at(slot, bad.row - s.slotStart[slot], bad.field), 'scored to a non-finite value from finite inputs; nothing was planned (please report the forest)');
    }
  }

  /** Re-scores what changed, then re-allocates what changed (docs/ALGORITHM.md §4). */
  async plan(options: LivePlanOptions = {}): Promise<LivePlanSummary> {
    this.planner.check(options, this.params.rule); // a rejected plan must not re-score or count anything
    await this.rescore();
    const summary = this.planner.plan(options, this.params.rule);
    this.placements.replanned(summary.replanned);
    this.planned = true;
    this.sharded = undefined;
    this.counters.plans++;
    this.counters.replannedTrees += summary.replanned.length;
    return summary;
  }

  /**
   * Continuous placement (docs/ALGORITHM.md, "Continuous placement"): releases the slots of
   * the rollouts that ended (`release`, their tickets), plans the round of
   * `options.totalBudget` rollouts (the driver's concurrency) with the evidence now, and
   * returns `count` new rollouts, each at the node where that plan wants the most rollouts
   * beyond those running there. Every part is checked before anything changes.
   */
  async place(count: number, options: LivePlanOptions, release?: unknown): Promise<{ placements: Placement[]; summary: LivePlanSummary; inFlight: number }> {
    checkConcurrency(options.totalBudget);
    if (!Number.isInteger(count) || count < 0 || count > 0x7fffffff) throw new OptionError(`"count" must be an integer in [0, 2147483647], got ${String(count)}`);
    const tickets = this.placements.checkRelease(release);
    const summary = await this.plan(options);
    this.placements.release(tickets);
    const placements = this.placements.place(count);
    return { placements, summary, inFlight: this.placements.inFlight };
  }

  /** Rollouts placed by `place` and not yet released. */
  get inFlight(): number { return this.placements.inFlight; }

  /**
   * Phase 1 of a global budget over sharded forests (docs/PROTOCOL.md, "Many shards"):
   * re-scores what changed, then returns each tree's liveness and weight Q_t.
   */
  async globalShares(options: ShareOptions = {}): Promise<ShardShares> {
    resolveAllocateOptions({ ...options, rule: this.params.rule }); // a bad q0 re-scores nothing
    await this.rescore();
    const shares = liveShares(this.store, this.params.rule ?? DEFAULT_RULE, options);
    const t = shares.q.findIndex((q) => !Number.isFinite(q));
    if (t >= 0) throw new Error(`global-shares: tree ${JSON.stringify(this.treeIds()[t])} has a non-finite weight ${shares.q[t]}`);
    return shares;
  }

  /**
   * Phase 2: given every shard's phase-1 data in the global order and this shard's index,
   * plans this forest's trees with the budgets a single process holding all shards would give
   * them under `options.totalBudget` (identical plans). Refuses shares that no longer match
   * this forest (trees or scores changed since phase 1) with `StaleSharesError`; every check
   * runs before anything changes.
   */
  async planShard(gathered: readonly ShardShares[], shardIndex: number, options: LivePlanOptions): Promise<LivePlanSummary> {
    const { budget: _ignored, ...rest } = options;
    const opts = resolveAllocateOptions(rest, this.params.rule);
    if (opts.totalBudget === undefined) throw new OptionError('a sharded plan needs totalBudget');
    checkGathered(gathered);
    if (!Number.isInteger(shardIndex) || shardIndex < 0 || shardIndex >= gathered.length) throw new OptionError(`shard index must be an integer in [0, ${gathered.length - 1}], got ${String(shardIndex)}`);
    const entry = gathered[shardIndex];
    const now = liveShares(this.store, this.params.rule ?? DEFAULT_RULE, options);
    if (this.dirtyGroupCount > 0 || entry.fingerprint !== now.fingerprint) {
      throw new StaleSharesError(`shares[${shardIndex}] do not match this shard's trees as they are now (fingerprint ${String(entry.fingerprint)}, now ${this.dirtyGroupCount > 0 ? 'changed, scores pending' : now.fingerprint}): the trees changed after phase 1; run phase 1 again`);
    }
    const { budgets, unallocatedTotal } = splitGathered(gathered, opts.totalBudget, opts.minPerTree);
    let offset = 0;
    for (let i = 0; i < shardIndex; i++) offset += gathered[i].q.length;
    const ids = this.treeIds();
    const perTree = Object.fromEntries(ids.map((id, t) => [id, budgets[offset + t]]));
    const { totalBudget: _total, ...settings } = rest;
    const summary = await this.plan({ ...settings, budget: perTree });
    this.sharded = { totalBudget: opts.totalBudget, unallocated: unallocatedTotal };
    return { ...summary, options: reportedSettings(opts), unallocatedTotal };
  }

  /** docs/ALGORITHM.md §5 plan of one tree, from the last `plan()`. */
  treePlan(treeId: string, options: { includeScores?: boolean } = {}): TreePlan {
    if (!this.planned) throw new Error('no plan yet: call plan() first');
    const s = this.store;
    const slot = s.slotOf(treeId);
    if (Number.isNaN(this.planner.budgetOf(slot))) throw new Error(`tree ${JSON.stringify(s.slotId[slot])} joined after the last plan(): call plan() first`);
    const lo = s.slotStart[slot], hi = lo + s.slotSize[slot];
    const allocations: NodeAllocation[] = [];
    const pruned: number[] = [];
    for (let v = lo; v < hi; v++) {
      if (s.branches[v] > 0) allocations.push({ node: v - lo, branches: s.branches[v], depth: s.depth[v] });
      if (s.pruned[v]) pruned.push(v - lo);
    }
    const tree: TreePlan = { id: treeId, budget: this.planner.budgetOf(slot), unallocated: this.planner.unallocatedOf(slot), allocations, pruned };
    if (options.includeScores) Object.assign(tree, this.treeScores(treeId));
    return assertFiniteTreePlan(tree);
  }

  /** The whole docs/ALGORITHM.md §5 plan (or the listed trees), from the last `plan()`. */
  planJson(options: { includeScores?: boolean; trees?: readonly string[] } = {}): PlanJson {
    const ids = options.trees ?? this.treeIds();
    const plan: PlanJson = { params: { ...this.params }, trees: ids.map((id) => this.treePlan(id, options)) };
    const opts = this.planner.options;
    if (opts?.totalBudget !== undefined) {
      plan.totalBudget = opts.totalBudget;
      plan.unallocated = this.planner.unallocatedTotal;
    } else if (this.sharded !== undefined) {
      plan.totalBudget = this.sharded.totalBudget;
      plan.unallocated = this.sharded.unallocated;
    }
    return assertFinitePlan(plan);
  }

  /** Current scores of one tree (call `rescore()` or `plan()` first for them to be fresh). */
  treeScores(treeId: string): { scores: NodeScore[]; groups: GroupScore[] } {
    const s = this.store;
    const slot = s.slotOf(treeId);
    const lo = s.slotStart[slot], hi = lo + s.slotSize[slot];
    const scores: NodeScore[] = [];
    const groups: GroupScore[] = [];
    for (let v = lo + 1; v < hi; v++) {
      scores.push({ node: v - lo, contrast: s.contrast[v], weight: s.weight[v], gradAlpha: s.gradAlpha[v], gradTau: s.gradTau[v] });
    }
    for (let p = lo; p < hi; p++) {
      if (s.childCount[p] > 0) groups.push({ parent: p - lo, intensity: s.childCount[p] > 1 ? s.intensity[p] : 0 });
    }
    assertFiniteTreePlan({ id: treeId, budget: 0, unallocated: 0, allocations: [], pruned: [], scores, groups });
    return { scores, groups };
  }

  /**
   * The node fields of one tree as they are now, one entry per node in node order (no
   * embeddings): `reward` is the mean reward backed up by `finishRollout` (or set by `update`),
   * `visits` the finished rollouts through the node. A trainer reads its values back here
   * instead of keeping a second copy of every tree.
   */
  treeValues(treeId: string): TreeValues {
    const s = this.store;
    const slot = s.slotOf(treeId);
    const lo = s.slotStart[slot], n = s.slotSize[slot];
    const parent: number[] = new Array(n), reward: number[] = new Array(n), visits: number[] = new Array(n);
    const uncertainty: number[] = new Array(n), terminal: boolean[] = new Array(n);
    for (let i = 0; i < n; i++) {
      const r = lo + i;
      parent[i] = s.parentRow[r] < 0 ? -1 : s.parentRow[r] - lo;
      reward[i] = s.reward[r];
      visits[i] = s.visits[r];
      uncertainty[i] = s.uncertainty[r];
      terminal[i] = s.terminal[r] === 1;
      // Inputs are finite and means stay finite (`runningMean`); a NaN here would go out as null.
      if (!Number.isFinite(reward[i]) || !Number.isFinite(visits[i]) || !Number.isFinite(uncertainty[i])) {
        throw new Error(`tree ${JSON.stringify(treeId)}, node ${i}: a non-finite value (reward ${reward[i]}, visits ${visits[i]}, uncertainty ${uncertainty[i]})`);
      }
    }
    return { parent, reward, visits, uncertainty, terminal };
  }

  stats(): LiveStats {
    const s = this.store;
    let groups = 0;
    for (const slot of s.treeOrder) {
      const lo = s.slotStart[slot];
      for (let r = lo; r < lo + s.slotSize[slot]; r++) if (s.childCount[r] > 0) groups++;
    }
    return {
      backend: this.backendNow.kind, dim: s.dim, trees: s.treeCount, nodes: s.nodeTotal, groups,
      dirtyGroups: this.dirtyGroupCount, capacityRows: s.usedRows, params: { ...this.params }, ...this.counters,
    };
  }

  destroy(): void {
    this.backendNow.destroy();
  }
}
