import { describeValue } from '../forest/errors.js';
import type { NodeRows } from '../forest/columnar.js';
import type { NodeInput } from '../forest/input.js';
import { LiveError, type LiveStore, type NodeUpdate } from './store.js';

/**
 * One round of a training step's growth, applied to a live forest all or none: new nodes for
 * many trees (columns, one row per node naming its tree), feedback updates, and the rollouts
 * that finished. A trainer's round — a few new agent steps and finished rollouts in a tenth of
 * the trees — is one request instead of one `add-nodes` per tree and one `finish-rollout` per
 * rollout, and the new nodes travel as arrays rather than JSON numbers.
 *
 * Order: updates (which name nodes that existed before the round), then the new nodes (row
 * order kept within each tree; a parent may be an existing node or a new row of the same tree
 * before it), then the rollouts (whose paths may run through the new nodes). Everything is
 * checked against the forest as it will be before anything changes.
 */
export interface ForestExtension {
  rows?: NodeRows;
  updates?: readonly NodeUpdate[];
  rollouts?: readonly RolloutInput[];
}

/** A finished rollout: along `path` (node indices from the root) or up to `leaf`, with its reward. */
export type RolloutInput = { tree: string; reward: number; path?: readonly number[]; leaf?: number };

export interface ExtensionResult {
  /** Nodes added. */
  added: number;
  /** Per tree that got nodes: the index of its first new node (no prototype: any id, `__proto__` too, is a key). */
  first: Record<string, number>;
  updated: number;
  rollouts: number;
}

interface TreeRows { slot: number; id: string; nodes: NodeInput[]; parents: Int32Array }

export function extendStore(store: LiveStore, change: ForestExtension): ExtensionResult {
  const rows = change.rows;
  const updates = change.updates ?? [];
  const rollouts = change.rollouts ?? [];
  const trees = rows === undefined ? [] : treesOfRows(store, rows);
  for (const t of trees) t.parents = store.checkNodes(t.slot, t.nodes);
  const updateRows = store.checkUpdates(updates);
  const paths = rollouts.map((r, i) => rolloutPath(store, r, i, trees));

  // Updates first: their rows are read before new nodes may move a tree's slab.
  store.applyUpdates(updates, updateRows);
  const first = Object.create(null) as Record<string, number>;
  let added = 0;
  for (const t of trees) {
    first[t.id] = store.appendNodes(t.slot, t.nodes, t.parents);
    added += t.nodes.length;
  }
  rollouts.forEach((r, i) => store.finishRollout(r.tree, paths[i], r.reward));
  return { added, first, updated: updates.length, rollouts: rollouts.length };
}

/** The rows grouped by tree, in the order trees first appear; nodes keep their row order. */
function treesOfRows(store: LiveStore, rows: NodeRows): TreeRows[] {
  if (rows.treeIds.length > 0 && rows.dim !== store.dim) {
    throw new LiveError('invalid_value', { field: 'embedding' }, `the new nodes have dim ${rows.dim}, the live forest ${store.dim}`);
  }
  const bySlot = new Map<number, TreeRows>();
  const dim = rows.dim;
  for (let r = 0; r < rows.treeIds.length; r++) {
    const id = rows.treeIds[r];
    if (!store.hasTree(id)) throw new LiveError('unknown_tree', { field: 'tree_id' }, `row ${r} names ${describeValue(id)}, which is not a tree of the live forest`);
    const slot = store.slotOf(id);
    let t = bySlot.get(slot);
    if (t === undefined) bySlot.set(slot, (t = { slot, id, nodes: [], parents: new Int32Array(0) }));
    t.nodes.push({
      parent: rows.parent[r], reward: rows.reward[r], visits: rows.visits[r], uncertainty: rows.uncertainty[r],
      terminal: rows.terminal[r] === 1, embedding: rows.embedding.subarray(r * dim, (r + 1) * dim),
    });
  }
  return [...bySlot.values()];
}

/**
 * The checked path of rollout `i` over the forest as it will be (existing nodes and the round's
 * new ones): from `leaf` up to the root, or `path` checked step by step.
 */
function rolloutPath(store: LiveStore, r: RolloutInput, i: number, trees: TreeRows[]): number[] {
  const where = (field: string, node?: number) => ({ ...(node === undefined ? {} : { node }), field: `rollouts[${i}].${field}` });
  if (r === null || typeof r !== 'object') throw new LiveError('invalid_value', where('tree'), `a rollout must be an object, got ${describeValue(r)}`);
  const slot = store.slotOf(r.tree);
  const at = (field: string, node?: number) => ({ ...store.at(slot), ...where(field, node) });
  store.checkRolloutReward(slot, r.reward);
  const added = trees.find((t) => t.slot === slot);
  const n0 = store.slotSize[slot];
  const size = n0 + (added?.nodes.length ?? 0);
  const start = store.slotStart[slot];
  const parentOf = (v: number) => (v < n0 ? (v === 0 ? -1 : store.parentRow[start + v] - start) : added!.parents[v - n0]);
  const isNode = (v: unknown): v is number => typeof v === 'number' && Number.isInteger(v) && v >= 0 && v < size;
  if ((r.path === undefined) === (r.leaf === undefined)) throw new LiveError('invalid_value', at('path'), 'give either "path" (node indices from the root) or "leaf" (a node index)');
  if (r.leaf !== undefined) {
    if (!isNode(r.leaf)) throw new LiveError('unknown_node', at('leaf'), `must be a node index in [0, ${size - 1}], got ${describeValue(r.leaf)}`);
    const path: number[] = [];
    for (let v = r.leaf; v >= 0; v = parentOf(v)) path.push(v);
    return path.reverse();
  }
  const path = r.path;
  if (!Array.isArray(path) || path.length === 0) throw new LiveError('invalid_value', at('path'), `must be a non-empty array of node indices from the root, got ${describeValue(path)}`);
  path.forEach((v, k) => {
    if (!isNode(v)) throw new LiveError('unknown_node', at(`path[${k}]`), `must be a node index in [0, ${size - 1}], got ${describeValue(v)}`);
    if (parentOf(v) !== (k === 0 ? -1 : path[k - 1])) {
      throw new LiveError('invalid_value', at(`path[${k}]`, v), k === 0 ? 'the path must start at the root (node 0)' : `node ${v} is not a child of node ${path[k - 1]}`);
    }
  });
  return [...path];
}
