import { describeValue, ForestError, type ForestErrorLocation } from '../forest/errors.js';
import type { NodeInput, TreeInput } from '../forest/input.js';
import { checkGroupSizes, groupSizeError } from '../forest/limits.js';
import { checkKnownFields, NODE_FIELDS, packForest, treeIdOf, type PackedForest } from '../forest/packed.js';
import { grownClass, SlabAllocator, slabClass } from './slab.js';
import { sharedArray } from '../util/shared.js';

/** Which part of a request went wrong, for the protocol's error codes. */
export type LiveErrorCode = 'unknown_tree' | 'unknown_node' | 'duplicate_tree' | 'invalid_value';

/** A rejected live-forest change. Nothing was applied. Names the tree, the node and the field. */
export class LiveError extends ForestError {
  readonly code: LiveErrorCode;
  constructor(code: LiveErrorCode, location: ForestErrorLocation, reason: string) {
    super(location, reason);
    this.name = 'LiveError';
    this.code = code;
  }
}

/** A change to a node's feedback fields (docs/ALGORITHM.md §1); omitted fields stay as they are. */
export interface NodeUpdate {
  tree: string;
  node: number;
  reward?: number;
  visits?: number;
  uncertainty?: number;
  terminal?: boolean;
}

const FLOAT32_MAX = 3.4028234663852886e38;
const UPDATE_FIELDS: readonly string[] = ['tree', 'node', 'reward', 'visits', 'uncertainty', 'terminal'];
const MIN_ROWS = 1024;
/** Sibling groups up to this size keep their pair distances (k(k−1)/2 numbers) between rescores. */
export const MAX_CACHED_GROUP = 256;

/**
 * The storage of a live forest: per-row columns in geometrically growing typed arrays, one
 * contiguous slab of rows per tree (node v at row `start + v`, spare rows after the last
 * node), and per tree a CSR child list in the same row space: the children of row p are
 * `child[childStart[p] .. childStart[p] + childCount[p])`, in node order. Rows never move
 * while their tree keeps its slab, so a device copy can be patched row by row.
 *
 * A sibling group is named by its parent row. Every change marks the groups whose scores it
 * affects (`dirtyGroups`) and the trees whose plan it affects (`planDirty`); scoring and
 * planning live elsewhere and clear those marks.
 */
export class LiveStore {
  readonly dim: number;
  capacity = 0;

  // Forest columns, by row.
  rowTree = new Int32Array(0);
  parentRow = new Int32Array(0);
  reward = new Float64Array(0);
  visits = new Float64Array(0);
  uncertainty = new Float64Array(0);
  terminal = new Uint8Array(0);
  /** Row-major `capacity × dim`, float64 like a packed forest read from input (exactly the numbers given). */
  embedding = new Float64Array(0);
  childStart = new Int32Array(0);
  childCount = new Int32Array(0);
  child = new Int32Array(0);
  /** identity[r] = r: lets the shared rounding code walk a tree's rows as a subarray. */
  identity = new Int32Array(0);

  // Scores, by row; `intensity` sits at the group's parent row.
  contrast = new Float64Array(0);
  weight = new Float64Array(0);
  gradAlpha = new Float64Array(0);
  gradTau = new Float64Array(0);
  intensity = new Float64Array(0);

  // Plan outputs and planner scratch, by row.
  mass = new Float64Array(0);
  inflow = new Float64Array(0);
  priority = new Float64Array(0);
  branches = new Int32Array(0);
  depth = new Int32Array(0);
  pruned = new Uint8Array(0);
  kept = new Uint8Array(0);
  live = new Uint8Array(0);
  keptWeight = new Float64Array(0);
  keptCount = new Int32Array(0);
  order = new Int32Array(0);

  // Change tracking.
  /** 1 when the group whose parent is this row must be re-scored. */
  dirty = new Uint8Array(0);

  // Pair-distance cache of the CPU scorer (`PairDistances`), by parent row: the group's
  // k(k−1)/2 sibling distances at pairValues[pairStart ..], valid while pairKnown is 1.
  // Distances depend on embeddings only, which never change in place: any change to a tree's
  // rows or child lists (rebuildChildren, clearRows) drops its rows' marks. Storage stays with
  // the row (pairCap numbers) for whichever group sits there next.
  pairStart = new Int32Array(0);
  pairCap = new Int32Array(0);
  pairKnown = new Uint8Array(0);
  pairValues = sharedArray(Float64Array, 0);
  private pairTop = 0;
  /** Parent rows marked dirty since the last rescore (may hold stale or repeated rows; `dirty` decides). */
  dirtyGroups: number[] = [];
  /**
   * For a device copy, kept only when `trackChanges`: slot ranges [lo, hi) whose features and
   * embeddings must be re-sent (a tree arrived, grew or moved), and single slots whose
   * features changed. A slot is a position in `child`: the device stores rows in slot order.
   */
  changedSpans: number[] = [];
  changedSlots: number[] = [];
  trackChanges = false;
  /** Position of each row in `child` (its slot), -1 for roots. */
  childSlot = new Int32Array(0);
  /** Bumped whenever capacity grows (a device copy must be reallocated). */
  capacityVersion = 0;

  // Trees, by slot (slots are reused after removal).
  slotId: string[] = [];
  slotStart: number[] = [];
  slotCap: number[] = [];
  slotSize: number[] = [];
  /**
   * Whether the tree's plan must be recomputed: 0 no; 2 only because groups were re-scored
   * (their kept/pruned split is redone group by group); 1 from scratch (nodes, liveness or slab changed).
   */
  planDirty: number[] = [];
  /** Slots in tree order (the order trees were added). */
  treeOrder: number[] = [];
  private readonly bySlotId = new Map<string, number>();
  private readonly freeSlots: number[] = [];
  private readonly slabs = new SlabAllocator();
  /** Bumped when trees join or leave (tree order changed). */
  membershipVersion = 0;
  nodeTotal = 0;

  /** Fields of trees and nodes beyond docs/ALGORITHM.md's input are ignored instead of refused. */
  readonly allowUnknownFields: boolean;
  /** The most children one node may have (add-tree, add-nodes and addForest refuse more); default no cap. */
  maxGroupSize = Infinity;

  constructor(dim: number, options: { allowUnknownFields?: boolean } = {}) {
    if (!Number.isInteger(dim) || dim < 0) throw new ForestError({ field: 'dim' }, `must be an integer >= 0, got ${describeValue(dim)}`);
    this.dim = dim;
    this.allowUnknownFields = options.allowUnknownFields === true;
    this.grow(MIN_ROWS);
  }

  get treeCount(): number { return this.treeOrder.length; }

  /** Slot of a tree id (an integer names the tree whose id is its decimal string), or throws `unknown_tree`. */
  slotOf(treeId: unknown): number {
    if (typeof treeId === 'number' && Number.isSafeInteger(treeId)) treeId = String(treeId);
    if (typeof treeId !== 'string') throw new LiveError('invalid_value', { field: 'tree' }, `must be a tree id (a string), got ${describeValue(treeId)}`);
    const slot = this.bySlotId.get(treeId);
    if (slot === undefined) throw new LiveError('unknown_tree', { field: 'tree' }, `no tree with id ${describeValue(treeId)} in the live forest`);
    return slot;
  }

  hasTree(treeId: string): boolean { return this.bySlotId.has(treeId); }

  /** Row of node `node` of a tree, or throws `unknown_node`. */
  rowOf(treeId: string, node: unknown, field = 'node'): number {
    const slot = this.slotOf(treeId);
    return this.rowInSlot(slot, node, field);
  }

  private rowInSlot(slot: number, node: unknown, field: string): number {
    const n = this.slotSize[slot];
    if (typeof node !== 'number' || !Number.isInteger(node) || node < 0 || node >= n) {
      const at = this.at(slot, typeof node === 'number' && Number.isInteger(node) ? node : undefined, field);
      throw new LiveError('unknown_node', at, `must be a node index in [0, ${n - 1}], got ${describeValue(node)}`);
    }
    return this.slotStart[slot] + node;
  }

  /** Location for errors: tree id and its position in tree order. */
  at(slot: number, node?: number, field?: string): ForestErrorLocation {
    const loc: ForestErrorLocation = { tree: this.treeOrder.indexOf(slot), treeId: this.slotId[slot] };
    if (node !== undefined) loc.node = node;
    if (field !== undefined) loc.field = field;
    return loc;
  }

  /** Adds a tree at the end of the tree order; all its groups become dirty. Returns its slot. */
  addTree(tree: TreeInput): number {
    const position = this.treeOrder.length;
    if (tree === null || typeof tree !== 'object' || Array.isArray(tree)) {
      throw new LiveError('invalid_value', { tree: position }, `a tree must be an object, got ${describeValue(tree)}`);
    }
    const id = treeIdOf(tree.id, position);
    if (this.bySlotId.has(id)) throw new LiveError('duplicate_tree', { tree: position, treeId: id, field: 'id' }, 'a tree with this id is already in the live forest');
    // packForest holds the one copy of the node validation rules; re-locate its errors to this tree.
    let packed;
    try {
      packed = packForest({ dim: this.dim, trees: [{ ...tree, id }] }, { allowUnknownFields: this.allowUnknownFields, maxGroupSize: this.maxGroupSize });
    } catch (err) {
      if (err instanceof ForestError) throw new LiveError('invalid_value', { ...err.location, tree: position, treeId: id }, err.reason);
      throw err;
    }
    return this.placeTree(packed, 0, id);
  }

  /**
   * Throws what `addForest` would throw for this forest once the live trees `replacing` are
   * removed (dim, ids, group sizes), changing nothing: a batch that replaces trees is checked
   * whole before any of them goes.
   */
  checkForest(forest: PackedForest, replacing: ReadonlySet<string> = new Set()): void {
    if (forest.dim !== this.dim) throw new LiveError('invalid_value', { field: 'dim' }, `the forest has dim ${forest.dim}, the live forest ${this.dim}`);
    const base = this.treeOrder.length - [...replacing].filter((id) => this.bySlotId.has(id)).length;
    const ids = new Set<string>();
    for (let t = 0; t < forest.treeCount; t++) {
      const id = forest.treeIds[t];
      if ((this.bySlotId.has(id) && !replacing.has(id)) || ids.has(id)) throw new LiveError('duplicate_tree', { tree: base + t, treeId: id, field: 'id' }, 'a tree with this id is already in the live forest');
      ids.add(id);
    }
    try {
      checkGroupSizes(forest, this.maxGroupSize);
    } catch (err) {
      if (err instanceof ForestError) throw new LiveError('invalid_value', { ...err.location, tree: base + err.location.tree! }, err.reason);
      throw err;
    }
  }

  /** Adds every tree of an already validated packed forest (atomic: ids are checked first). */
  addForest(forest: PackedForest): number[] {
    this.checkForest(forest);
    // Room for the whole batch at once: growing tree by tree doubles the columns a dozen times
    // on a W1-sized batch, each time copying every column (the embeddings too) — that was more
    // than half of add-columns. Slab padding at device chunk boundaries may still need one more.
    // Trees that freed slabs of their size class will take cost no new rows.
    const perClass = new Map<number, number>();
    for (let t = 0; t < forest.treeCount; t++) {
      const c = slabClass(forest.treeOffset[t + 1] - forest.treeOffset[t]);
      perClass.set(c, (perClass.get(c) ?? 0) + 1);
    }
    let rows = 0;
    for (const [c, n] of perClass) rows += c * Math.max(0, n - this.slabs.freeSlabs(c));
    const needed = this.slabs.top + rows;
    // At least doubling, as tree by tree: batch after batch must not copy the columns every time.
    if (needed > this.capacity) this.grow(Math.max(needed + (this.slabs.boundary > 0 ? needed >> 3 : 0), this.capacity * 2));
    const slots: number[] = [];
    for (let t = 0; t < forest.treeCount; t++) slots.push(this.placeTree(forest, t, forest.treeIds[t]));
    return slots;
  }

  /** Copies tree `t` of a packed forest into a fresh slab at the end of the tree order. */
  private placeTree(packed: PackedForest, t: number, id: string): number {
    const lo = packed.treeOffset[t];
    const n = packed.treeOffset[t + 1] - lo;
    const cap = slabClass(n);
    const start = this.takeSlab(cap);
    const slot = this.freeSlots.length > 0 ? this.freeSlots.pop()! : this.slotId.length;
    this.slotId[slot] = id;
    this.slotStart[slot] = start;
    this.slotCap[slot] = cap;
    this.slotSize[slot] = n;
    this.planDirty[slot] = 1;
    this.bySlotId.set(id, slot);
    this.treeOrder.push(slot);
    this.membershipVersion++;
    this.nodeTotal += n;
    const delta = start - lo;
    for (let v = 0; v < n; v++) {
      const row = start + v, src = lo + v;
      this.rowTree[row] = slot;
      this.parentRow[row] = v === 0 ? -1 : packed.parentRow[src] + delta;
      this.reward[row] = packed.reward[src];
      this.visits[row] = packed.visits[src];
      this.uncertainty[row] = packed.uncertainty[src];
      this.terminal[row] = packed.terminal[src];
      this.resetScores(row);
    }
    const dim = this.dim;
    this.embedding.set(packed.embedding.subarray(lo * dim, (lo + n) * dim), start * dim);
    this.rebuildChildren(slot);
    for (let v = 0; v < n; v++) if (this.childCount[start + v] > 0) this.markGroup(start + v);
    this.noteChanged(start, start + cap);
    return slot;
  }

  /** Refuses an add-nodes that would give some node more than `maxGroupSize` children. */
  private checkAddedChildren(slot: number, n0: number, parents: Int32Array): void {
    if (this.maxGroupSize === Infinity) return;
    const start = this.slotStart[slot];
    const added = new Map<number, number>();
    for (const p of parents) added.set(p, (added.get(p) ?? 0) + 1);
    for (const [p, extra] of added) {
      const k = (p < n0 ? this.childCount[start + p] : 0) + extra;
      if (k > this.maxGroupSize) {
        const err = groupSizeError(this.at(slot, p), k, this.maxGroupSize);
        throw new LiveError('invalid_value', err.location, err.reason);
      }
    }
  }

  /**
   * Appends nodes to a tree (node indices continue from the tree's size; a node's parent may
   * be one added earlier in the same call). Validates everything before changing anything.
   * Returns the index of the first new node.
   */
  addNodes(treeId: string, nodes: readonly NodeInput[]): number {
    const slot = this.slotOf(treeId);
    const parents = this.checkNodes(slot, nodes);
    return this.appendNodes(slot, nodes, parents);
  }

  /** Throws what `addNodes` would for these nodes, changing nothing; returns their parents. */
  checkNodes(slot: number, nodes: readonly NodeInput[]): Int32Array {
    if (!Array.isArray(nodes)) throw new LiveError('invalid_value', this.at(slot, undefined, 'nodes'), `must be an array, got ${describeValue(nodes)}`);
    const n0 = this.slotSize[slot];
    const dim = this.dim;
    const parents = new Int32Array(nodes.length);
    for (let i = 0; i < nodes.length; i++) {
      const v = n0 + i;
      const node = nodes[i];
      if (node === null || typeof node !== 'object' || Array.isArray(node)) throw new LiveError('invalid_value', this.at(slot, v), `a node must be an object, got ${describeValue(node)}`);
      if (!this.allowUnknownFields) this.relocated(() => checkKnownFields(node, NODE_FIELDS, 'node', this.at(slot, v)));
      const p = node.parent;
      if (typeof p !== 'number' || !Number.isInteger(p) || p < 0 || p >= v) {
        throw new LiveError('invalid_value', this.at(slot, v, 'parent'), `must be a node index in [0, ${v - 1}] (parents come before children), got ${describeValue(p)}`);
      }
      parents[i] = p;
      this.checkFields(slot, v, node);
      const e = node.embedding;
      if (dim > 0 || e !== undefined) {
        if (e === undefined || e === null) throw new LiveError('invalid_value', this.at(slot, v, 'embedding'), `is required when dim > 0 (dim = ${dim})`);
        if (!Array.isArray(e) && !(ArrayBuffer.isView(e) && !(e instanceof DataView))) {
          throw new LiveError('invalid_value', this.at(slot, v, 'embedding'), `must be an array of ${dim} numbers, got ${describeValue(e)}`);
        }
        const values = e as ArrayLike<unknown>;
        if (values.length !== dim) throw new LiveError('invalid_value', this.at(slot, v, 'embedding'), `must have ${dim} numbers (dim), got ${values.length}`);
        for (let d = 0; d < dim; d++) {
          const x = values[d];
          if (typeof x !== 'number' || !Number.isFinite(x)) throw new LiveError('invalid_value', this.at(slot, v, `embedding[${d}]`), `must be a finite number, got ${describeValue(x)}`);
          if (Math.abs(x) > FLOAT32_MAX) throw new LiveError('invalid_value', this.at(slot, v, `embedding[${d}]`), `is beyond the float32 range embeddings are stored in, got ${x}`);
        }
      }
    }
    if (nodes.length > 0) this.checkAddedChildren(slot, n0, parents);
    return parents;
  }

  /** Appends nodes checked by `checkNodes` (with the parents it returned); returns the index of the first. */
  appendNodes(slot: number, nodes: readonly NodeInput[], parents: Int32Array): number {
    const n0 = this.slotSize[slot];
    const dim = this.dim;
    if (nodes.length === 0) return n0;
    const n1 = n0 + nodes.length;
    if (n1 > this.slotCap[slot]) this.relocate(slot, grownClass(this.slotCap[slot], n1));
    const start = this.slotStart[slot];
    for (let i = 0; i < nodes.length; i++) {
      const node = nodes[i];
      const row = start + n0 + i;
      this.rowTree[row] = slot;
      this.parentRow[row] = start + parents[i];
      this.reward[row] = node.reward ?? 0;
      this.visits[row] = node.visits ?? 0;
      this.uncertainty[row] = node.uncertainty ?? 0;
      this.terminal[row] = node.terminal ? 1 : 0;
      this.resetScores(row);
      if (dim > 0) this.embedding.set(node.embedding as ArrayLike<number>, row * dim);
      this.markGroup(start + parents[i]);
    }
    this.slotSize[slot] = n1;
    this.nodeTotal += nodes.length;
    this.rebuildChildren(slot);
    this.planDirty[slot] = 1;
    this.noteChanged(start, start + this.slotCap[slot]);
    return n0;
  }

  /** Applies feedback changes atomically: all are validated first. */
  update(updates: readonly NodeUpdate[]): void {
    this.applyUpdates(updates, this.checkUpdates(updates));
  }

  /** Throws what `update` would for these changes, changing nothing; returns the rows they change. */
  checkUpdates(updates: readonly NodeUpdate[]): Int32Array {
    const rows = new Int32Array(updates.length);
    for (let i = 0; i < updates.length; i++) {
      const u = updates[i];
      if (u === null || typeof u !== 'object') throw new LiveError('invalid_value', {}, `an update must be an object, got ${describeValue(u)}`);
      const slot = this.slotOf(u.tree);
      if (!this.allowUnknownFields) this.relocated(() => checkKnownFields(u, UPDATE_FIELDS, 'update', this.at(slot, typeof u.node === 'number' ? u.node : undefined)));
      rows[i] = this.rowInSlot(slot, u.node, 'node');
      this.checkFields(slot, u.node, u);
    }
    return rows;
  }

  /** Applies updates checked by `checkUpdates` (with the rows it returned). */
  applyUpdates(updates: readonly NodeUpdate[], rows: Int32Array): void {
    for (let i = 0; i < updates.length; i++) {
      const u = updates[i];
      const row = rows[i];
      let scored = false;
      if (u.reward !== undefined && u.reward !== this.reward[row]) { this.reward[row] = u.reward; scored = true; }
      if (u.visits !== undefined && u.visits !== this.visits[row]) { this.visits[row] = u.visits; scored = true; }
      if (u.uncertainty !== undefined && u.uncertainty !== this.uncertainty[row]) { this.uncertainty[row] = u.uncertainty; scored = true; }
      if (u.terminal !== undefined) this.terminal[row] = u.terminal ? 1 : 0;
      // Feedback of a node enters only the scores of its own sibling group; terminal only the plan.
      if (scored && this.parentRow[row] >= 0) {
        this.markGroup(this.parentRow[row]);
        if (this.trackChanges) this.changedSlots.push(this.childSlot[row]);
      }
      const slot = this.rowTree[row];
      if (u.terminal !== undefined) this.planDirty[slot] = 1;
      else if (this.planDirty[slot] === 0) this.planDirty[slot] = 2;
    }
  }

  /**
   * A rollout finished along `path` (node 0 first, each node a child of the one before) with
   * reward `reward`: every node on the path gets one more visit and its mean reward moves
   * toward `reward`.
   */
  finishRollout(treeId: string, path: readonly number[], reward: number): void {
    const slot = this.slotOf(treeId);
    if (!Array.isArray(path) || path.length === 0) throw new LiveError('invalid_value', this.at(slot, undefined, 'path'), `must be a non-empty array of node indices from the root, got ${describeValue(path)}`);
    this.checkRolloutReward(slot, reward);
    const rows = new Int32Array(path.length);
    for (let i = 0; i < path.length; i++) {
      rows[i] = this.rowInSlot(slot, path[i], `path[${i}]`);
      const expected = i === 0 ? -1 : rows[i - 1];
      if (this.parentRow[rows[i]] !== expected) {
        const why = i === 0 ? 'the path must start at the root (node 0)' : `node ${path[i]} is not a child of node ${path[i - 1]}`;
        throw new LiveError('invalid_value', this.at(slot, path[i], `path[${i}]`), why);
      }
    }
    for (const row of rows) {
      const n = this.visits[row] + 1;
      this.visits[row] = n;
      this.reward[row] = runningMean(this.reward[row], reward, n);
      if (this.parentRow[row] >= 0) {
        this.markGroup(this.parentRow[row]);
        if (this.trackChanges) this.changedSlots.push(this.childSlot[row]);
      }
    }
    if (this.planDirty[slot] === 0) this.planDirty[slot] = 2; // scores only (its groups are marked)
  }

  /** A rollout's reward must be a finite number. */
  checkRolloutReward(slot: number, reward: unknown): void {
    if (typeof reward !== 'number' || !Number.isFinite(reward)) throw new LiveError('invalid_value', this.at(slot, undefined, 'reward'), `must be a finite number, got ${describeValue(reward)}`);
  }

  /** The path root → node, as node indices. */
  pathTo(treeId: string, node: unknown): number[] {
    const row = this.rowOf(treeId, node, 'leaf');
    const start = this.slotStart[this.rowTree[row]];
    const path: number[] = [];
    for (let r = row; r >= 0; r = this.parentRow[r]) path.push(r - start);
    return path.reverse();
  }

  removeTree(treeId: string): void {
    this.removeTrees([treeId]);
  }

  /**
   * Removes several trees in one pass over the tree order (all are looked up first, so an
   * unknown id removes none). Removing them one by one would splice the order once per tree:
   * quadratic in the forest's size for a request that empties it.
   */
  removeTrees(treeIds: readonly string[]): void {
    const slots = treeIds.map((id) => this.slotOf(id));
    const gone = new Set<number>();
    for (const slot of slots) {
      if (gone.has(slot)) continue;
      gone.add(slot);
      const start = this.slotStart[slot], cap = this.slotCap[slot];
      this.clearRows(start, start + cap);
      this.slabs.give(start, cap);
      this.bySlotId.delete(this.slotId[slot]);
      this.nodeTotal -= this.slotSize[slot];
      this.slotSize[slot] = 0;
      this.slotId[slot] = '';
      this.planDirty[slot] = 0;
      this.freeSlots.push(slot);
    }
    if (gone.size === 0) return;
    this.treeOrder = this.treeOrder.filter((slot) => !gone.has(slot));
    this.membershipVersion++;
  }

  /** Marks every group dirty (after α or τ changed). */
  markAllDirty(): void {
    for (const slot of this.treeOrder) {
      const start = this.slotStart[slot];
      for (let r = start; r < start + this.slotSize[slot]; r++) if (this.childCount[r] > 0) this.markGroup(r);
      this.planDirty[slot] = 1;
    }
  }

  markGroup(parent: number): void {
    if (this.dirty[parent]) return;
    this.dirty[parent] = 1;
    this.dirtyGroups.push(parent);
    const slot = this.rowTree[parent];
    if (this.planDirty[slot] === 0) this.planDirty[slot] = 2;
  }

  /** Rows a device copy has to cover: every slab ever handed out. */
  get usedRows(): number { return this.slabs.top; }

  /** Keeps every slab inside one block of `rows` rows (set by a device backend before any tree arrives). */
  setSlabBoundary(rows: number): void {
    if (this.slabs.top > 0 && rows > 0) throw new Error('the slab boundary must be set before the first tree');
    this.slabs.boundary = rows;
  }

  /**
   * Makes room for `need` more pair-distance numbers in `pairValues` (the array may be replaced,
   * so callers take offsets only after this). Growing first compacts: only known groups keep
   * their storage, so what was dropped with removed trees or outgrown groups is reclaimed.
   */
  reservePairs(need: number): void {
    if (this.pairTop + need <= this.pairValues.length) return;
    const { pairStart, pairCap, pairKnown } = this;
    let used = 0;
    for (let r = 0; r < this.capacity; r++) if (pairKnown[r]) used += pairCap[r];
    const next = sharedArray(Float64Array, Math.max(1024, 2 * (used + need)));
    let top = 0;
    for (let r = 0; r < this.capacity; r++) {
      const cap = pairCap[r];
      if (cap === 0) continue;
      if (pairKnown[r]) {
        next.set(this.pairValues.subarray(pairStart[r], pairStart[r] + cap), top);
        pairStart[r] = top;
        top += cap;
      } else {
        pairStart[r] = -1;
        pairCap[r] = 0;
      }
    }
    this.pairValues = next;
    this.pairTop = top;
  }

  /** Offset of row `parent`'s pair storage for `count` numbers (room reserved with `reservePairs`). */
  pairSpace(parent: number, count: number): number {
    if (this.pairCap[parent] >= count) return this.pairStart[parent];
    const at = this.pairTop;
    this.pairTop += count;
    this.pairStart[parent] = at;
    this.pairCap[parent] = count;
    return at;
  }

  /** Runs a check whose `ForestError` becomes a `LiveError` (invalid_value) at the same place. */
  private relocated(check: () => void): void {
    try {
      check();
    } catch (err) {
      if (err instanceof ForestError && !(err instanceof LiveError)) throw new LiveError('invalid_value', err.location, err.reason);
      throw err;
    }
  }

  private checkFields(slot: number, node: number, f: { reward?: unknown; visits?: unknown; uncertainty?: unknown; terminal?: unknown }): void {
    const r = f.reward, n = f.visits, u = f.uncertainty, t = f.terminal;
    if (r !== undefined && (typeof r !== 'number' || !Number.isFinite(r))) throw new LiveError('invalid_value', this.at(slot, node, 'reward'), `must be a finite number, got ${describeValue(r)}`);
    if (n !== undefined && (typeof n !== 'number' || !Number.isInteger(n) || n < 0)) throw new LiveError('invalid_value', this.at(slot, node, 'visits'), `must be an integer >= 0, got ${describeValue(n)}`);
    if (u !== undefined && (typeof u !== 'number' || !Number.isFinite(u) || u < 0)) throw new LiveError('invalid_value', this.at(slot, node, 'uncertainty'), `must be a finite number >= 0, got ${describeValue(u)}`);
    if (t !== undefined && typeof t !== 'boolean') throw new LiveError('invalid_value', this.at(slot, node, 'terminal'), `must be true or false, got ${describeValue(t)}`);
  }

  private resetScores(row: number): void {
    this.contrast[row] = 0; this.weight[row] = 1; this.gradAlpha[row] = 0; this.gradTau[row] = 0; this.intensity[row] = 0;
    this.dirty[row] = 0;
  }

  /** Rebuilds a tree's child lists (node order within each group); O(tree size). */
  private rebuildChildren(slot: number): void {
    const start = this.slotStart[slot], n = this.slotSize[slot];
    const { childStart, childCount, child, parentRow } = this;
    this.pairKnown.fill(0, start, start + n);
    for (let r = start; r < start + n; r++) childCount[r] = 0;
    for (let r = start + 1; r < start + n; r++) childCount[parentRow[r]]++;
    let at = start;
    for (let r = start; r < start + n; r++) { childStart[r] = at; at += childCount[r]; }
    for (let r = start; r < start + n; r++) childCount[r] = 0;
    this.childSlot[start] = -1;
    for (let r = start + 1; r < start + n; r++) {
      const p = parentRow[r];
      const q = childStart[p] + childCount[p]++;
      child[q] = r;
      this.childSlot[r] = q;
    }
  }

  /** Moves a tree to a bigger slab, carrying its rows, scores and dirty marks. */
  private relocate(slot: number, cap: number): void {
    const from = this.slotStart[slot], n = this.slotSize[slot], oldCap = this.slotCap[slot];
    const to = this.takeSlab(cap);
    const delta = to - from;
    for (const col of [this.rowTree, this.reward, this.visits, this.uncertainty, this.terminal, this.contrast, this.weight, this.gradAlpha, this.gradTau, this.intensity]) {
      col.copyWithin(to, from, from + n);
    }
    this.embedding.copyWithin(to * this.dim, from * this.dim, (from + n) * this.dim);
    for (let v = 0; v < n; v++) {
      const p = this.parentRow[from + v];
      this.parentRow[to + v] = p < 0 ? -1 : p + delta;
      this.dirty[to + v] = 0;
      if (this.dirty[from + v]) this.markGroup(to + v);
    }
    this.slotStart[slot] = to;
    this.slotCap[slot] = cap;
    this.rebuildChildren(slot);
    this.clearRows(from, from + oldCap);
    this.slabs.give(from, oldCap);
    this.noteChanged(to, to + cap);
  }

  private clearRows(lo: number, hi: number): void {
    this.rowTree.fill(-1, lo, hi);
    this.childCount.fill(0, lo, hi);
    this.dirty.fill(0, lo, hi);
    this.branches.fill(0, lo, hi);
    this.pairKnown.fill(0, lo, hi);
  }

  private takeSlab(size: number): number {
    const start = this.slabs.take(size);
    if (start + size > this.capacity) this.grow(Math.max(start + size, this.capacity * 2));
    return start;
  }

  private noteChanged(lo: number, hi: number): void {
    if (this.trackChanges) this.changedSpans.push(lo, hi);
  }

  /** Geometric growth of every row column (amortised O(1) per appended row). */
  private grow(rows: number): void {
    const cap = Math.max(rows, MIN_ROWS);
    // Columns live in shared memory, so the CPU backend's worker threads score in place.
    const f64 = (a: Float64Array, fill = 0) => { const b = sharedArray(Float64Array, cap).fill(fill); b.set(a); return b; };
    const i32 = (a: Int32Array, fill = 0) => { const b = sharedArray(Int32Array, cap).fill(fill); b.set(a); return b; };
    const u8 = (a: Uint8Array) => { const b = sharedArray(Uint8Array, cap); b.set(a); return b; };
    this.rowTree = i32(this.rowTree, -1);
    this.parentRow = i32(this.parentRow, -1);
    this.reward = f64(this.reward);
    this.visits = f64(this.visits);
    this.uncertainty = f64(this.uncertainty);
    this.terminal = u8(this.terminal);
    const e = sharedArray(Float64Array, cap * this.dim); e.set(this.embedding); this.embedding = e;
    this.childStart = i32(this.childStart);
    this.childCount = i32(this.childCount);
    this.child = i32(this.child);
    this.childSlot = i32(this.childSlot, -1);
    const id = new Int32Array(cap); for (let r = 0; r < cap; r++) id[r] = r; this.identity = id;
    this.contrast = f64(this.contrast);
    this.weight = f64(this.weight, 1);
    this.gradAlpha = f64(this.gradAlpha);
    this.gradTau = f64(this.gradTau);
    this.intensity = f64(this.intensity);
    this.mass = f64(this.mass);
    this.inflow = f64(this.inflow);
    this.priority = f64(this.priority);
    this.branches = i32(this.branches);
    this.depth = i32(this.depth);
    this.pruned = u8(this.pruned);
    this.kept = u8(this.kept);
    this.live = u8(this.live);
    this.keptWeight = f64(this.keptWeight);
    this.keptCount = i32(this.keptCount);
    this.order = new Int32Array(cap);
    this.dirty = u8(this.dirty);
    this.pairStart = i32(this.pairStart, -1);
    this.pairCap = i32(this.pairCap);
    this.pairKnown = u8(this.pairKnown);
    this.capacity = cap;
    this.capacityVersion++;
  }
}

/**
 * The mean after one more value `x`, the n-th (n ≥ 1): `mean + (x − mean)/n`. For finite
 * inputs that form overflows when `x` and `mean` are far apart with opposite signs (−1.7e308
 * and 1.7e308: the difference is infinite, the next mean NaN); then the weighted form
 * `mean·(n−1)/n + x/n` is used, whose two terms have opposite signs, so their sum is finite.
 */
export function runningMean(mean: number, x: number, n: number): number {
  const step = x - mean;
  return Number.isFinite(step) ? mean + step / n : mean * ((n - 1) / n) + x / n;
}
