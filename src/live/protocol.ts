import { ForestError, describeValue } from '../forest/errors.js';
import type { NodeInput, TreeInput } from '../forest/input.js';
import { DEFAULT_MAX_GROUP_SIZE } from '../forest/limits.js';
import { packForest } from '../forest/packed.js';
import { DEFAULT_RULE, MAX_WHOLE, resolveAllocateOptions } from '../allocate/options.js';
import { checkGathered, shareFingerprint, splitGathered, StaleSharesError, type ShardShares } from '../allocate/shards.js';
import type { Backend } from '../backend/select.js';
import { resolveParams, type ScoreParams } from '../score/types.js';
import { didYouMean } from '../util/suggest.js';
import { ADD_COLUMNS_FIELDS, announcedBytes, applyBatch, badHeaderReason, decodeBatch, decodeRows, PAYLOAD_OPS } from './columns-op.js';
import type { RolloutInput } from './extend.js';
import { createLiveForest } from './create.js';
import type { LiveForest } from './forest.js';
import type { LivePlanOptions } from './plan.js';
import { LiveError, type NodeUpdate } from './store.js';

/** Error codes of the JSON Lines protocol (docs/PROTOCOL.md). */
export type ProtocolErrorCode =
  | 'parse_error' | 'invalid_request' | 'unknown_op' | 'unknown_tree' | 'unknown_node'
  | 'duplicate_tree' | 'invalid_value' | 'invalid_options' | 'stale_shares' | 'backend_error' | 'request_too_large' | 'internal';

export interface ProtocolError {
  code: ProtocolErrorCode;
  message: string;
  tree?: string;
  node?: number;
  field?: string;
}

export type Response =
  | { id: unknown; ok: true; result: unknown }
  | { id: unknown; ok: false; error: ProtocolError };

class RequestError extends Error {
  constructor(readonly code: ProtocolErrorCode, message: string) { super(message); }
}

export interface SessionOptions {
  backend?: Backend;
  /** Embedding dimension; when omitted, taken from the first tree added. */
  dim?: number;
  params?: Partial<ScoreParams>;
  /** The most children one node may have (default DEFAULT_MAX_GROUP_SIZE, 4096). */
  maxGroupSize?: number;
  /** `createLiveForest`'s: a short line, and its explanation when there is one. */
  onNotice?: (message: string, detail?: string) => void;
  /** Accept (and ignore) fields nodes and trees do not have, as `--allow-unknown-fields` does for files. Default false. */
  allowUnknownFields?: boolean;
  /** CPU threads for large re-scores (`createLiveForest`'s `threads`); default: available parallelism. */
  threads?: number;
  /** The most bytes an `add-columns` `.npz`'s compressed arrays may inflate to (default DEFAULT_MAX_INFLATED_BYTES). */
  maxInflatedBytes?: number;
}

const UPDATE_FIELDS = ['tree', 'node', 'reward', 'visits', 'uncertainty', 'terminal'];
const ROLLOUT_FIELDS = ['tree', 'path', 'leaf', 'reward'];
const PLAN_FIELDS = ['budget', 'totalBudget', 'minPerTree', 'pruneRatio', 'widen', 'contestGain', 'forkKeep', 'treeFloor', 'baseDepth', 'depthGain', 'minDepth', 'maxDepth'] as const;
/** The operations and the fields each takes; a Map so that no request key reaches Object.prototype. */
const FIELDS: ReadonlyMap<string, readonly string[]> = new Map<string, readonly string[]>([
  ['add-tree', ['tree', 'trees']],
  ['add-nodes', ['tree', 'nodes']],
  ['update', ['tree', 'node', 'reward', 'visits', 'uncertainty', 'terminal', 'updates']],
  ['finish-rollout', ['tree', 'path', 'leaf', 'reward']],
  ['remove-tree', ['tree', 'trees']],
  ['plan', [...PLAN_FIELDS, 'scores', 'trees', 'changed']],
  ['place', [...PLAN_FIELDS.filter((k) => k !== 'budget'), 'count', 'release']],
  ['scores', ['trees']],
  ['values', ['trees']],
  ['stats', []],
  ['set-params', ['alpha', 'tau', 'rule']],
  ['add-columns', ADD_COLUMNS_FIELDS],
  ['extend', ['bytes', 'updates', 'rollouts']],
  ['global-shares', ['treeFloor']],
  ['plan-shard', [...PLAN_FIELDS.filter((k) => k !== 'budget'), 'shares', 'shard', 'scores', 'trees']],
]);
const OPS = [...FIELDS.keys()];

/** Own fields only: a request is parsed JSON, and `in` would also see Object.prototype. */
const has = (o: object, key: string): boolean => Object.hasOwn(o, key);

/** Tree ids are strings; an integer names the tree whose id is its decimal string. */
function idOf(x: unknown): unknown {
  return typeof x === 'number' && Number.isSafeInteger(x) ? String(x) : x;
}

/** A request line that announced a binary payload: the service reads `bytes` raw bytes, then calls `complete`. */
export interface BinaryFrame {
  bytes: number;
  /** The request's `id` (null when it has none), for a response sent without completing the frame. */
  id: unknown;
  /**
   * Handles the request with its payload, which is handed over: an .npz's misaligned arrays are
   * moved within it instead of copied to fresh memory (the service reuses one buffer), so pass a
   * copy of bytes that must stay as they are.
   */
  complete(payload: Uint8Array): Promise<string>;
}

/**
 * One live forest driven by JSON requests, one per line; every request gets exactly one
 * response line, in order. Nothing a client sends can end the session: bad JSON, unknown
 * operations and rejected changes become error responses, and a rejected change leaves the
 * forest as it was.
 */
export class LiveSession {
  private forest: LiveForest | undefined;
  private creating: Promise<LiveForest> | undefined;

  constructor(private readonly options: SessionOptions = {}) {}

  /** Handles one line; returns the response line (without newline), or undefined for a blank line. */
  async handleLine(line: string): Promise<string | undefined> {
    if (line.trim() === '') return undefined;
    let request: unknown;
    try {
      request = JSON.parse(line);
    } catch (err) {
      return JSON.stringify(failure(null, { code: 'parse_error', message: `not a JSON value: ${(err as Error).message}` }));
    }
    return JSON.stringify(await this.handle(request));
  }

  /**
   * When `line` is an `add-columns` header with a valid byte count, the frame to complete with
   * the payload that follows it; otherwise undefined (the line is an ordinary request).
   */
  binaryFrame(line: string): BinaryFrame | undefined {
    if (!PAYLOAD_OPS.some((op) => line.includes(op))) return undefined;
    let request: unknown;
    try {
      request = JSON.parse(line);
    } catch {
      return undefined;
    }
    const bytes = announcedBytes(request);
    if (bytes === undefined) return undefined;
    return { bytes, id: (request as { id?: unknown }).id ?? null, complete: async (payload) => JSON.stringify(await this.handle(request, payload)) };
  }

  async handle(request: unknown, payload?: Uint8Array): Promise<Response> {
    const id = request !== null && typeof request === 'object' && !Array.isArray(request) ? (request as { id?: unknown }).id ?? null : null;
    const before = this.forest;
    try {
      return { id, ok: true, result: await this.dispatch(request, payload) };
    } catch (err) {
      // A refused request changes nothing, so a forest it created goes with it: the first tree
      // fixes the dim, and a refused first batch must not fix it for the trees that follow.
      if (before === undefined && this.forest !== undefined) this.destroy();
      return failure(id, toProtocolError(err));
    }
  }

  /** The live forest, once the first tree fixed its dimension. */
  get live(): LiveForest | undefined { return this.forest; }

  destroy(): void {
    this.forest?.destroy();
    this.forest = undefined;
  }

  private async dispatch(request: unknown, payload?: Uint8Array): Promise<unknown> {
    if (request === null || typeof request !== 'object' || Array.isArray(request)) throw new RequestError('invalid_request', `a request must be a JSON object, got ${describeValue(request)}`);
    const req = withIds(request as Record<string, unknown>);
    const op = req.op;
    if (typeof op !== 'string') throw new RequestError('invalid_request', `"op" must be a string naming the operation, got ${describeValue(op)}`);
    const allowed = FIELDS.get(op);
    if (allowed === undefined) throw new RequestError('unknown_op', `unknown op ${JSON.stringify(op)}${didYouMean(op, OPS)} (one of: ${OPS.join(', ')})`);
    for (const key of Object.keys(req)) {
      if (key !== 'id' && key !== 'op' && !allowed.includes(key)) throw new RequestError('invalid_request', `op ${JSON.stringify(op)} takes no field ${JSON.stringify(key)}${didYouMean(key, allowed)} (fields: ${allowed.join(', ') || 'none'})`);
    }
    switch (op) {
      case 'add-tree': return this.addTrees(req);
      case 'add-columns': return this.addColumns(req, payload);
      case 'extend': return this.extend(req, payload);
      case 'add-nodes': {
        const live = this.need(req.tree);
        const tree = req.tree as string;
        const first = live.addNodes(tree, req.nodes as NodeInput[]);
        return { tree, first, nodes: live.store.slotSize[live.store.slotOf(tree)] };
      }
      case 'update': {
        const single = UPDATE_FIELDS.some((k) => has(req, k));
        if (single === has(req, 'updates')) throw new RequestError('invalid_request', 'give either "updates" (an array) or one update ("tree", "node" and the fields to set)');
        const updates = single ? [req as unknown as NodeUpdate] : req.updates;
        if (!Array.isArray(updates)) throw new RequestError('invalid_request', `"updates" must be an array, got ${describeValue(updates)}`);
        for (const u of updates) {
          if (u === null || typeof u !== 'object' || Array.isArray(u)) throw new RequestError('invalid_request', `an update must be an object, got ${describeValue(u)}`);
          for (const key of Object.keys(u)) if (!single && !UPDATE_FIELDS.includes(key)) throw new RequestError('invalid_request', `an update takes no field ${JSON.stringify(key)}${didYouMean(key, UPDATE_FIELDS)} (fields: ${UPDATE_FIELDS.join(', ')})`);
        }
        if (updates.length === 0) return { updated: 0 };
        this.need((updates[0] as { tree?: unknown } | null)?.tree).update(updates.map((u) => single ? pickUpdate(u as NodeUpdate) : u) as NodeUpdate[]);
        return { updated: updates.length };
      }
      case 'finish-rollout': {
        const live = this.need(req.tree);
        const tree = req.tree as string;
        if (has(req, 'path') === has(req, 'leaf')) throw new RequestError('invalid_request', 'give either "path" (node indices from the root) or "leaf" (a node index)');
        const path = has(req, 'path') ? req.path as number[] : live.store.pathTo(tree, req.leaf);
        live.finishRollout(tree, { path }, req.reward as number);
        return { tree, path };
      }
      case 'remove-tree': {
        if (has(req, 'tree') === has(req, 'trees') || (has(req, 'trees') && !Array.isArray(req.trees))) throw new RequestError('invalid_request', 'give either "tree" (an id) or "trees" (an array of ids)');
        const ids = has(req, 'trees') ? req.trees as unknown[] : [req.tree];
        if (ids.length === 0) return { removed: 0, trees: this.forest?.treeCount ?? 0 };
        const live = this.need(ids[0]);
        for (const id of ids) live.store.slotOf(id); // all or nothing
        checkDistinct(ids);
        live.removeTrees(ids as string[]);
        return { removed: ids.length, trees: live.treeCount };
      }
      case 'plan': return this.plan(req);
      case 'place': return this.place(req);
      case 'global-shares': {
        if (req.treeFloor !== undefined && typeof req.treeFloor !== 'number') throw new RequestError('invalid_options', `"treeFloor" must be a number, got ${describeValue(req.treeFloor)}`);
        const options = req.treeFloor === undefined ? {} : { treeFloor: req.treeFloor as number };
        const live = this.forest;
        if (live === undefined) {
          const rule = this.params().rule ?? DEFAULT_RULE;
          const { treeFloor } = resolveAllocateOptions({ ...options, rule });
          return { rule, treeFloor, live: [], q: [], fingerprint: shareFingerprint(rule, treeFloor, [], [], [], []) };
        }
        return live.globalShares(options);
      }
      case 'plan-shard': return this.planShard(req);
      case 'scores': {
        const live = this.forest;
        if (live === undefined) {
          this.treeList(undefined, req.trees);
          return { params: this.params(), trees: [] };
        }
        const ids = this.treeList(live, req.trees); // before the re-score: a refused request re-scores nothing
        await live.rescore();
        return { params: live.scoreParams, trees: ids.map((tree) => ({ id: tree, ...live.treeScores(tree) })) };
      }
      case 'values': {
        const live = this.forest;
        const ids = this.treeList(live, req.trees);
        return { trees: live === undefined ? [] : ids.map((tree) => ({ id: tree, ...live.treeValues(tree) })) };
      }
      case 'stats': {
        const live = this.forest;
        if (live === undefined) return { backend: null, dim: this.options.dim ?? null, trees: 0, nodes: 0, groups: 0, dirtyGroups: 0, params: this.params() };
        return live.stats();
      }
      case 'set-params': {
        let next = { ...this.params() };
        for (const k of ['alpha', 'tau'] as const) {
          if (req[k] === undefined) continue;
          if (typeof req[k] !== 'number') throw new RequestError('invalid_options', `"${k}" must be a number, got ${describeValue(req[k])}`);
          next[k] = req[k] as number;
        }
        if (req.rule !== undefined) {
          if (req.rule !== 'v1' && req.rule !== 'v2' && req.rule !== 'v3') throw new RequestError('invalid_options', `"rule" must be "v1", "v2" or "v3", got ${describeValue(req.rule)}`);
          next.rule = req.rule;
        }
        next = resolveParams(next);
        this.options.params = next;
        this.forest?.setParams(next);
        return { params: next };
      }
    }
    throw new RequestError('unknown_op', `unknown op ${JSON.stringify(op)}`);
  }

  private params(): ScoreParams {
    return resolveParams(this.options.params);
  }

  private get allowUnknownFields(): boolean { return this.options.allowUnknownFields === true; }

  /** The first trees fix the dimension: every check `add-tree` makes (group sizes too) runs before the forest exists. */
  private checkFirst(trees: TreeInput[]): void {
    const withIds = trees.map((t, i) => (t !== null && typeof t === 'object' && !Array.isArray(t) && t.id === undefined ? { ...t, id: String(i) } : t));
    packForest({ dim: this.options.dim ?? inferDim(trees), trees: withIds }, { allowUnknownFields: this.allowUnknownFields, maxGroupSize: this.options.maxGroupSize ?? DEFAULT_MAX_GROUP_SIZE });
  }

  private async addTrees(req: Record<string, unknown>): Promise<unknown> {
    if (has(req, 'tree') === has(req, 'trees')) throw new RequestError('invalid_request', 'give either "tree" (one tree object) or "trees" (an array of them)');
    if (has(req, 'tree')) {
      const tree = req.tree as TreeInput;
      // The first tree fixes the dimension: a bad one must not create the forest.
      if (this.forest === undefined) this.checkFirst([tree]);
      const live = await this.ensure([tree]);
      const id = live.addTree(tree);
      return { tree: id, nodes: live.store.slotSize[live.store.slotOf(id)], trees: live.treeCount };
    }
    const trees = req.trees;
    if (!Array.isArray(trees)) throw new RequestError('invalid_request', `"trees" must be an array, got ${describeValue(trees)}`);
    if (this.forest === undefined) this.checkFirst(trees as TreeInput[]);
    const live = await this.ensure(trees as TreeInput[]);
    const base = live.treeCount;
    // Default ids continue the live forest's positions, as if the trees were added one by one.
    const withIds = trees.map((t, i) => (t !== null && typeof t === 'object' && !Array.isArray(t) && (t as TreeInput).id === undefined ? { ...(t as TreeInput), id: String(base + i) } : t)) as TreeInput[];
    let packed;
    try {
      packed = packForest({ dim: live.dim, trees: withIds }, { allowUnknownFields: this.allowUnknownFields });
    } catch (err) {
      if (err instanceof ForestError && err.location.tree !== undefined) throw new LiveError('invalid_value', { ...err.location, tree: base + err.location.tree }, err.reason);
      throw err;
    }
    live.addForest(packed);
    return { trees: live.treeCount, added: packed.treeIds };
  }

  private async addColumns(req: Record<string, unknown>, payload: Uint8Array | undefined): Promise<unknown> {
    if (payload === undefined || announcedBytes(req) === undefined) throw new RequestError('invalid_request', badHeaderReason(req));
    if (req.replace !== undefined && typeof req.replace !== 'boolean') throw new RequestError('invalid_request', `"replace" must be true or false, got ${describeValue(req.replace)}`);
    const batch = decodeBatch(payload, req.bytes as number, this.forest?.treeCount ?? 0, this.forest?.dim ?? this.options.dim,
      this.options.maxInflatedBytes !== undefined ? { maxInflatedBytes: this.options.maxInflatedBytes } : {});
    const live = await this.ensure([], batch.dim);
    return applyBatch(live, batch, req.replace === true);
  }

  /** A round's growth in one request (docs/PROTOCOL.md, `extend`): all or none. */
  private async extend(req: Record<string, unknown>, payload: Uint8Array | undefined): Promise<unknown> {
    if (has(req, 'bytes') && (payload === undefined || announcedBytes(req) === undefined)) throw new RequestError('invalid_request', badHeaderReason(req));
    const updates = req.updates ?? [];
    if (!Array.isArray(updates)) throw new RequestError('invalid_request', `"updates" must be an array, got ${describeValue(updates)}`);
    for (const u of updates) {
      if (u === null || typeof u !== 'object' || Array.isArray(u)) throw new RequestError('invalid_request', `an update must be an object, got ${describeValue(u)}`);
      for (const key of Object.keys(u)) if (!UPDATE_FIELDS.includes(key)) throw new RequestError('invalid_request', `an update takes no field ${JSON.stringify(key)}${didYouMean(key, UPDATE_FIELDS)} (fields: ${UPDATE_FIELDS.join(', ')})`);
    }
    const rollouts = req.rollouts ?? [];
    if (!Array.isArray(rollouts)) throw new RequestError('invalid_request', `"rollouts" must be an array, got ${describeValue(rollouts)}`);
    for (const r of rollouts) {
      if (r === null || typeof r !== 'object' || Array.isArray(r)) throw new RequestError('invalid_request', `a rollout must be an object, got ${describeValue(r)}`);
      for (const key of Object.keys(r)) if (!ROLLOUT_FIELDS.includes(key)) throw new RequestError('invalid_request', `a rollout takes no field ${JSON.stringify(key)}${didYouMean(key, ROLLOUT_FIELDS)} (fields: ${ROLLOUT_FIELDS.join(', ')})`);
    }
    const rows = payload === undefined || payload.length === 0 && req.bytes === 0 ? undefined
      : decodeRows(payload, req.bytes as number, this.options.maxInflatedBytes !== undefined ? { maxInflatedBytes: this.options.maxInflatedBytes } : {});
    const empty = (rows === undefined || rows.treeIds.length === 0) && updates.length === 0 && rollouts.length === 0;
    if (empty) return { added: 0, first: {}, updated: 0, rollouts: 0 };
    const firstTree = rows?.treeIds[0] ?? (updates[0] as { tree?: unknown } | undefined)?.tree ?? (rollouts[0] as { tree?: unknown } | undefined)?.tree;
    return this.need(firstTree).extend({
      ...(rows === undefined ? {} : { rows }),
      updates: updates as NodeUpdate[],
      rollouts: (rollouts as Record<string, unknown>[]).map((r) => ({ ...r, tree: idOf(r.tree) }) as RolloutInput),
    });
  }

  /** Every part of the request is checked before the plan runs: a rejected plan changes nothing. */
  private async plan(req: Record<string, unknown>): Promise<unknown> {
    const options: LivePlanOptions = {};
    for (const k of PLAN_FIELDS) {
      const v = req[k];
      if (v === undefined) continue;
      if (k === 'budget' ? (typeof v !== 'number' && (v === null || typeof v !== 'object' || Array.isArray(v))) : typeof v !== 'number') {
        throw new RequestError('invalid_options', `"${k}" must be a number${k === 'budget' ? ' or an object of budgets by tree id' : ''}, got ${describeValue(v)}`);
      }
      (options as Record<string, unknown>)[k] = v;
    }
    checkDefaultMaxDepth(options);
    if (req.changed !== undefined && typeof req.changed !== 'boolean') throw new RequestError('invalid_request', `"changed" must be true or false, got ${describeValue(req.changed)}`);
    if (req.scores !== undefined && typeof req.scores !== 'boolean') throw new RequestError('invalid_request', `"scores" must be true or false, got ${describeValue(req.scores)}`);
    const live = this.forest;
    if (live === undefined) {
      const { budget, ...rest } = options;
      resolveAllocateOptions({ ...rest, ...(typeof budget === 'number' ? { budget } : {}) });
      if (req.trees !== undefined) this.treeList(undefined, req.trees);
      if (options.totalBudget !== undefined) return { params: this.params(), totalBudget: options.totalBudget, unallocated: options.totalBudget, trees: [], replanned: [] };
      return { params: this.params(), trees: [], replanned: [] };
    }
    let trees = req.trees === undefined ? undefined : this.treeList(live, req.trees);
    const summary = await live.plan(options); // checks the settings before it re-scores anything
    if (req.changed === true) trees = trees === undefined ? [...summary.replanned] : trees.filter((id) => summary.replanned.includes(id));
    const plan = live.planJson({ includeScores: req.scores === true, ...(trees !== undefined ? { trees } : {}) });
    return { ...plan, replanned: summary.replanned };
  }

  /** Continuous placement: release ended rollouts, plan the round of `totalBudget`, place `count`. */
  private async place(req: Record<string, unknown>): Promise<unknown> {
    const options: LivePlanOptions = {};
    for (const k of PLAN_FIELDS) {
      const v = req[k];
      if (v === undefined || k === 'budget') continue;
      if (typeof v !== 'number') throw new RequestError('invalid_options', `"${k}" must be a number, got ${describeValue(v)}`);
      (options as Record<string, unknown>)[k] = v;
    }
    if (options.totalBudget === undefined) throw new RequestError('invalid_options', '"totalBudget" is required: the number of rollouts the driver keeps running (the round a plan is made for)');
    checkDefaultMaxDepth(options);
    const count = req.count ?? 1;
    if (typeof count !== 'number' || !Number.isInteger(count) || count < 0) throw new RequestError('invalid_options', `"count" must be an integer >= 0, got ${describeValue(count)}`);
    const live = this.forest;
    if (live === undefined) {
      resolveAllocateOptions({ ...options, budget: undefined });
      if (req.release !== undefined && (!Array.isArray(req.release) || req.release.length > 0)) throw new RequestError('invalid_options', `release: no rollout is running (the live forest is empty), got ${describeValue(req.release)}`);
      return { placements: [], inFlight: 0, replanned: [] };
    }
    const { placements, summary, inFlight } = await live.place(count, options, req.release);
    return { placements, inFlight, replanned: summary.replanned };
  }

  /** Phase 2 of a sharded global budget; every field is checked before anything runs. */
  private async planShard(req: Record<string, unknown>): Promise<unknown> {
    const options: LivePlanOptions = {};
    for (const k of PLAN_FIELDS) {
      const v = req[k];
      if (v === undefined) continue;
      if (typeof v !== 'number') throw new RequestError('invalid_options', `"${k}" must be a number, got ${describeValue(v)}`);
      (options as Record<string, unknown>)[k] = v;
    }
    if (options.totalBudget === undefined) throw new RequestError('invalid_options', '"totalBudget" is required: plan-shard splits one global budget');
    checkDefaultMaxDepth(options);
    if (!Array.isArray(req.shares)) throw new RequestError('invalid_request', `"shares" must be the array of every shard's global-shares result, got ${describeValue(req.shares)}`);
    if (typeof req.shard !== 'number') throw new RequestError('invalid_request', `"shard" must be this shard's index in "shares", got ${describeValue(req.shard)}`);
    if (req.scores !== undefined && typeof req.scores !== 'boolean') throw new RequestError('invalid_request', `"scores" must be true or false, got ${describeValue(req.scores)}`);
    const gathered = req.shares as ShardShares[];
    const live = this.forest;
    if (live === undefined) {
      // No trees here: the shard's entry must say so; the split still checks the total.
      resolveAllocateOptions({ ...options, budget: undefined });
      checkGathered(gathered);
      const shard = req.shard;
      if (!Number.isInteger(shard) || shard < 0 || shard >= gathered.length) throw new RequestError('invalid_options', `shard index must be an integer in [0, ${gathered.length - 1}], got ${String(shard)}`);
      if (gathered[shard].q.length !== 0) throw new StaleSharesError(`shares[${shard}] lists ${gathered[shard].q.length} trees; this shard has none`);
      if (req.trees !== undefined) this.treeList(undefined, req.trees);
      const { unallocatedTotal } = splitGathered(gathered, options.totalBudget, options.minPerTree ?? 1);
      return { params: this.params(), totalBudget: options.totalBudget, unallocated: unallocatedTotal, trees: [], replanned: [] };
    }
    const trees = req.trees === undefined ? undefined : this.treeList(live, req.trees);
    const summary = await live.planShard(gathered, req.shard, options);
    const plan = live.planJson({ includeScores: req.scores === true, ...(trees !== undefined ? { trees } : {}) });
    return { ...plan, replanned: summary.replanned };
  }

  private treeList(live: LiveForest | undefined, trees: unknown): string[] {
    if (trees === undefined) return live?.treeIds() ?? [];
    if (!Array.isArray(trees)) throw new RequestError('invalid_request', `"trees" must be an array of tree ids, got ${describeValue(trees)}`);
    if (live === undefined) {
      if (trees.length > 0) this.need(trees[0]);
      return [];
    }
    for (const id of trees) live.store.slotOf(id);
    checkDistinct(trees);
    return trees as string[];
  }

  /** The forest, for an op that names a tree: with no forest yet, every tree is unknown. */
  private need(tree: unknown): LiveForest {
    if (this.forest === undefined) {
      if (typeof tree !== 'string') throw new LiveError('invalid_value', { field: 'tree' }, `must be a tree id (a string), got ${describeValue(tree)}`);
      throw new LiveError('unknown_tree', { field: 'tree' }, `no tree with id ${describeValue(tree)} in the live forest`);
    }
    return this.forest;
  }

  private async ensure(trees: readonly TreeInput[], knownDim?: number): Promise<LiveForest> {
    if (this.forest) return this.forest;
    if (this.creating === undefined) {
      const dim = this.options.dim ?? knownDim ?? inferDim(trees);
      this.creating = createLiveForest({
        dim, backend: this.options.backend ?? 'auto', params: this.params(), allowUnknownFields: this.allowUnknownFields,
        maxGroupSize: this.options.maxGroupSize ?? DEFAULT_MAX_GROUP_SIZE,
        ...(this.options.threads !== undefined ? { threads: this.options.threads } : {}),
        ...(this.options.onNotice ? { onNotice: this.options.onNotice } : {}),
      });
    }
    try {
      this.forest = await this.creating;
    } finally {
      this.creating = undefined;
    }
    return this.forest;
  }
}

/** Ids listed twice are refused, as `remove-tree` refuses them: a plan or a read would list the tree twice. */
function checkDistinct(ids: readonly unknown[]): void {
  if (ids.length < 2) return;
  const seen = new Set<unknown>();
  for (const id of ids) {
    if (seen.has(id)) throw new RequestError('invalid_request', `"trees" lists the tree ${describeValue(id)} twice`);
    seen.add(id);
  }
}

/**
 * A default `maxDepth` of 4 × `baseDepth` past 2³¹ − 1 would be refused by a message about
 * `maxDepth`, a setting the request did not give: name the one it gave.
 */
function checkDefaultMaxDepth(options: LivePlanOptions): void {
  const base = options.baseDepth;
  if (options.maxDepth !== undefined || base === undefined || !Number.isInteger(base) || base < 1 || base > MAX_WHOLE || 4 * base <= MAX_WHOLE) return;
  throw new RequestError('invalid_options', `"baseDepth" ${base} makes the default "maxDepth" (4 × baseDepth = ${4 * base}) larger than ${MAX_WHOLE}: give "maxDepth" too, or a "baseDepth" of at most ${Math.floor(MAX_WHOLE / 4)}`);
}

/** The request with integer tree ids (in `tree`, `trees` of ids and `updates`) as their decimal strings. */
function withIds(req: Record<string, unknown>): Record<string, unknown> {
  const out = { ...req };
  if (has(out, 'tree')) out.tree = idOf(out.tree);
  if (Array.isArray(out.trees) && req.op !== 'add-tree') out.trees = out.trees.map(idOf);
  if (Array.isArray(out.updates)) out.updates = out.updates.map((u: unknown) => (u !== null && typeof u === 'object' && !Array.isArray(u) && has(u, 'tree') ? { ...u, tree: idOf((u as { tree: unknown }).tree) } : u));
  return out;
}

function pickUpdate(u: NodeUpdate): NodeUpdate {
  const { tree, node, reward, visits, uncertainty, terminal } = u;
  return { tree, node, reward, visits, uncertainty, terminal };
}

function inferDim(trees: readonly TreeInput[]): number {
  for (const tree of trees) {
    const nodes = (tree as { nodes?: unknown } | null)?.nodes;
    if (!Array.isArray(nodes)) continue;
    for (const node of nodes) {
      const e = (node as { embedding?: unknown } | null)?.embedding;
      if (Array.isArray(e)) return e.length;
    }
  }
  return 0;
}

function failure(id: unknown, error: ProtocolError): Response {
  return { id, ok: false, error };
}

/** Maps any thrown value to a protocol error; never throws. */
export function toProtocolError(err: unknown): ProtocolError {
  if (err instanceof RequestError) return { code: err.code, message: err.message };
  if (err instanceof ForestError) {
    const e: ProtocolError = { code: err instanceof LiveError ? err.code : 'invalid_value', message: err.message };
    if (err.location.treeId !== undefined) e.tree = err.location.treeId;
    if (err.location.node !== undefined) e.node = err.location.node;
    if (err.location.field !== undefined) e.field = err.location.field;
    return e;
  }
  if (err instanceof StaleSharesError) return { code: 'stale_shares', message: err.message };
  if (err instanceof RangeError) return { code: 'invalid_options', message: err.message };
  if (err instanceof Error && /^Gpu/.test(err.name)) return { code: 'backend_error', message: err.message };
  return { code: 'internal', message: err instanceof Error ? err.message : String(err) };
}
