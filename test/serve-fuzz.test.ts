// Differential fuzz of the live service: random sequences of requests, valid and invalid, sent
// to a LiveSession and applied to a model of the forest written here from docs/PROTOCOL.md (plain
// objects; plans from the library's score + allocate on a snapshot of the model). After every
// request the service's `values` and `stats` equal the model's, every plan equals the model's
// plan, and a refused request leaves both exactly as they were.
//
// FUZZ_SEED=s reproduces a run (the failure message prints it), FUZZ_RUNS=n scales the number of
// sequences (default 60 of 70 requests each: about 2 s).
import { describe, expect, it } from 'vitest';
import { allocate } from '../src/allocate/allocate.js';
import type { AllocateOptions } from '../src/allocate/options.js';
import { planToJson } from '../src/allocate/plan.js';
import { packForest } from '../src/forest/packed.js';
import { LiveSession } from '../src/live/protocol.js';
import { scoreCpu } from '../src/score/cpu.js';
import { Rng } from '../src/util/random.js';
import { PROPERTY_SEED } from './property-seed.js';

const RUNS = Number(process.env.FUZZ_RUNS ?? 60);
const SEED = Number(process.env.FUZZ_SEED ?? PROPERTY_SEED ?? 1 + Math.floor(Math.random() * 1e9));
const STEPS = 70;
/** The session's --max-group-size: small, so that requests over it are easy to make. */
const MAX_GROUP = 4;
const HUGE = 1.7e308;

interface MNode { parent: number; reward: number; visits: number; uncertainty: number; terminal: boolean; embedding: number[] }
interface MTree { id: string; nodes: MNode[] }
type Rule = 'v1' | 'v2' | 'v3' | 'v4' | 'v5';
type Reply = { id: unknown; ok: boolean; result?: any; error?: { code: string; message: string } };

/** The forest as docs/PROTOCOL.md describes it, and the counters `stats` reports. */
class Model {
  exists = false;
  dim = 0;
  trees: MTree[] = [];
  params: { alpha: number; tau: number; rule: Rule } = { alpha: 1, tau: 0.5, rule: 'v5' };
  /** Sibling groups to re-score, as "tree id / parent node". */
  dirty = new Set<string>();
  rescores = 0;
  rescoredGroups = 0;
  plans = 0;

  tree(id: string): MTree | undefined { return this.trees.find((t) => t.id === id); }
  childCount(t: MTree, v: number): number { return t.nodes.filter((n) => n.parent === v).length; }
  mark(t: MTree, parent: number): void { if (parent >= 0) this.dirty.add(`${t.id}/${parent}`); }
  markTree(t: MTree): void { t.nodes.forEach((n) => this.mark(t, n.parent)); }
  /** A re-score (plan, scores, global-shares): every dirty group once. */
  rescore(): void {
    if (this.dirty.size > 0) { this.rescores++; this.rescoredGroups += this.dirty.size; }
    this.dirty.clear();
  }
  remove(id: string): void {
    this.trees = this.trees.filter((t) => t.id !== id);
    for (const key of [...this.dirty]) if (key.startsWith(`${id}/`)) this.dirty.delete(key);
  }
  /** A tree is live unless every node is terminal. */
  liveTrees(): number { return this.trees.filter((t) => t.nodes.some((n) => !n.terminal)).length; }

  stats(): Record<string, unknown> {
    if (!this.exists) return { backend: null, dim: null, trees: 0, nodes: 0, groups: 0, dirtyGroups: 0, params: this.params };
    let groups = 0;
    for (const t of this.trees) groups += new Set(t.nodes.slice(1).map((n) => n.parent)).size;
    return {
      backend: 'cpu', dim: this.dim, trees: this.trees.length, nodes: this.trees.reduce((a, t) => a + t.nodes.length, 0), groups,
      dirtyGroups: this.dirty.size, params: this.params, rescores: this.rescores, rescoredGroups: this.rescoredGroups, plans: this.plans,
    };
  }

  values(): unknown {
    return { trees: this.trees.map((t) => ({
      id: t.id, parent: t.nodes.map((n) => n.parent), reward: t.nodes.map((n) => n.reward), visits: t.nodes.map((n) => n.visits),
      uncertainty: t.nodes.map((n) => n.uncertainty), terminal: t.nodes.map((n) => n.terminal),
    })) };
  }

  /** One finished rollout along `path`: each node one more visit, its mean moved toward `reward` without overflowing. */
  rollout(t: MTree, path: number[], reward: number): void {
    for (const v of path) {
      const node = t.nodes[v];
      const n = node.visits + 1;
      node.visits = n;
      const step = reward - node.reward;
      node.reward = Number.isFinite(step) ? node.reward + step / n : node.reward * ((n - 1) / n) + reward / n;
      this.mark(t, node.parent);
    }
  }

  /** The plan of `trace-alloc score` on this forest with these settings (docs/PROTOCOL.md, `plan`). */
  plan(settings: Record<string, unknown>, includeScores: boolean, trees: string[] | undefined): unknown {
    const forest = packForest({ dim: this.dim, trees: this.trees.map((t) => ({ id: t.id, nodes: t.nodes.map((n) => ({ ...n, embedding: [...n.embedding] })) })) });
    const scores = scoreCpu(forest, this.params);
    const { budget, ...rest } = settings;
    const options: AllocateOptions = { ...rest, rule: this.params.rule };
    if (typeof budget === 'number') options.budget = budget;
    else if (budget !== undefined) options.budget = this.trees.map((t) => (budget as Record<string, number>)[t.id]);
    const plan = planToJson(forest, scores, allocate(forest, scores, options), { includeScores }) as { trees: Array<{ id: string }> };
    if (trees !== undefined) plan.trees = trees.map((id) => plan.trees.find((p) => p.id === id)!);
    return JSON.parse(JSON.stringify(plan));
  }
}

/** A request, whether docs/PROTOCOL.md accepts it, what it does to the model when it does, and its result (from the model after `apply`). */
interface Step { name: string; request: Record<string, unknown>; valid: boolean; apply?: () => void; expect?: () => unknown }

function generator(rng: Rng, model: Model): () => Step {
  let next = 0;
  const pick = <T>(xs: readonly T[]): T => xs[rng.int(0, xs.length - 1)];
  const some = () => pick(model.trees);
  const emb = (dim = model.dim) => Array.from({ length: dim }, () => Math.round(rng.normal() * 100) / 100);
  const reward = () => (rng.bernoulli(0.08) ? pick([HUGE, -HUGE]) : rng.bernoulli(0.5) ? rng.int(0, 1) : Math.round(rng.next() * 100) / 100);
  const freshId = () => (rng.bernoulli(0.05) ? pick(['__proto__', 'constructor', 'toString']) : `t${next++}`);
  const newTree = (dim: number): MTree => {
    const n = rng.int(1, 7);
    const nodes: MNode[] = [];
    const kids = new Array<number>(n).fill(0);
    for (let v = 0; v < n; v++) {
      let parent = -1;
      if (v > 0) { do parent = rng.bernoulli(0.5) ? v - 1 : rng.int(0, v - 1); while (kids[parent] >= MAX_GROUP); kids[parent]++; }
      nodes.push({ parent, reward: reward(), visits: rng.int(0, 3), uncertainty: rng.bernoulli(0.5) ? 0 : Math.round(rng.next() * 100) / 100, terminal: rng.bernoulli(0.15), embedding: emb(dim) });
    }
    return { id: freshId(), nodes };
  };
  const asInput = (t: MTree) => ({ id: t.id, nodes: t.nodes.map((n, v) => (v === 0 ? { ...n, parent: -1 } : { ...n })) });
  const openSlot = (t: MTree) => { const ok = t.nodes.map((_, v) => v).filter((v) => model.childCount(t, v) < MAX_GROUP); return ok.length > 0 ? pick(ok) : undefined; };
  const pathTo = (t: MTree, leaf: number) => { const path: number[] = []; for (let v = leaf; v >= 0; v = t.nodes[v].parent) path.push(v); return path.reverse(); };

  const addTree = (): Step => {
    const dim = model.exists ? model.dim : rng.int(0, 3);
    const trees = Array.from({ length: rng.int(1, 3) }, () => newTree(dim));
    const ids = new Set(model.trees.map((t) => t.id));
    let valid = trees.every((t) => !ids.has(t.id)) && new Set(trees.map((t) => t.id)).size === trees.length;
    const inputs: unknown[] = trees.map(asInput);
    const defect = rng.next();
    if (defect < 0.1 && trees[0].nodes.length > 1) { (inputs[0] as { nodes: Array<Record<string, unknown>> }).nodes[1].parent = 5; valid = false; }
    else if (defect < 0.16) { (inputs[0] as { nodes: Array<Record<string, unknown>> }).nodes[0].rewards = 1; valid = false; }
    else if (defect < 0.22 && model.trees.length > 0) { (inputs[0] as { id: string }).id = some().id; valid = false; }
    else if (defect < 0.28) { (inputs[0] as { nodes: unknown[] }).nodes.push(...Array.from({ length: MAX_GROUP + 1 }, () => ({ parent: 0, embedding: emb(dim) }))); valid = false; }
    else if (defect < 0.32) { (inputs[0] as { nodes: Array<Record<string, unknown>> }).nodes[0].visits = -1; valid = false; }
    else if (defect < 0.36 && model.exists) { (inputs[0] as { nodes: Array<Record<string, unknown>> }).nodes[0].embedding = emb(model.dim + 1); valid = false; }
    const single = trees.length === 1 && rng.bernoulli(0.5);
    return {
      name: 'add-tree', request: single ? { op: 'add-tree', tree: inputs[0] } : { op: 'add-tree', trees: inputs }, valid,
      apply: () => {
        if (!model.exists) { model.exists = true; model.dim = dim; }
        for (const t of trees) { model.trees.push(t); model.markTree(t); }
      },
    };
  };

  const addNodes = (): Step => {
    if (model.trees.length === 0) return { name: 'add-nodes', request: { op: 'add-nodes', tree: 'nope', nodes: [{ parent: 0, embedding: emb() }] }, valid: false };
    const t = some();
    const count = rng.int(1, 3);
    const nodes: MNode[] = [];
    const kids = t.nodes.map((_, v) => model.childCount(t, v));
    let valid = true;
    for (let i = 0; i < count; i++) {
      const open = kids.map((k, v) => (k < MAX_GROUP ? v : -1)).filter((v) => v >= 0);
      if (open.length === 0) { valid = false; break; }
      const parent = pick(open);
      kids[parent]++;
      kids.push(0);
      nodes.push({ parent, reward: reward(), visits: rng.int(0, 2), uncertainty: 0, terminal: rng.bernoulli(0.1), embedding: emb() });
    }
    const inputs: Array<Record<string, unknown>> = nodes.map((n) => ({ ...n }));
    const defect = rng.next();
    if (defect < 0.1) { inputs.push({ parent: t.nodes.length + inputs.length + 3, embedding: emb() }); valid = false; }
    else if (defect < 0.15) { inputs.push({ parent: 0, embedding: emb(model.dim + 1) }); valid = false; }
    else if (defect < 0.2) { inputs.push(...Array.from({ length: MAX_GROUP + 1 }, () => ({ parent: 0, embedding: emb() }))); valid = false; }
    else if (defect < 0.23) return { name: 'add-nodes', request: { op: 'add-nodes', tree: `${t.id}-missing`, nodes: inputs }, valid: false };
    return {
      name: 'add-nodes', request: { op: 'add-nodes', tree: t.id, nodes: inputs }, valid,
      apply: () => { for (const n of nodes) { t.nodes.push(n); model.mark(t, n.parent); } },
      expect: () => ({ tree: t.id, first: t.nodes.length - nodes.length, nodes: t.nodes.length }),
    };
  };

  const updates = (): { list: Array<Record<string, unknown>>; valid: boolean; apply: () => void } => {
    const list: Array<Record<string, unknown>> = [];
    const changes: Array<() => void> = [];
    for (let i = rng.int(1, 3); i > 0; i--) {
      const t = some(), v = rng.int(0, t.nodes.length - 1);
      const u: Record<string, unknown> = { tree: t.id, node: v };
      if (rng.bernoulli(0.5)) u.reward = rng.bernoulli(0.1) ? pick([1e308, -1e308]) : reward();
      if (rng.bernoulli(0.4)) u.visits = rng.int(0, 4);
      if (rng.bernoulli(0.3)) u.uncertainty = Math.round(rng.next() * 100) / 100;
      if (rng.bernoulli(0.3)) u.terminal = rng.bernoulli(0.5);
      list.push(u);
      changes.push(() => {
        const node = t.nodes[v];
        let scored = false;
        for (const k of ['reward', 'visits', 'uncertainty'] as const) if (u[k] !== undefined && u[k] !== node[k]) { node[k] = u[k] as number; scored = true; }
        if (u.terminal !== undefined) node.terminal = u.terminal as boolean;
        if (scored) model.mark(t, node.parent);
      });
    }
    let valid = true;
    const defect = rng.next();
    if (defect < 0.08) { list.push({ tree: list[0].tree, node: 999 }); valid = false; }
    else if (defect < 0.14) { list.push({ tree: list[0].tree, node: 0, visits: 1.5 }); valid = false; }
    else if (defect < 0.18) { list.push({ tree: list[0].tree, node: 0, uncertainty: -1 }); valid = false; }
    else if (defect < 0.21) { list.push({ tree: 'nope', node: 0, reward: 1 }); valid = false; }
    return { list, valid, apply: () => changes.forEach((c) => c()) };
  };

  const update = (): Step => {
    if (model.trees.length === 0) return { name: 'update', request: { op: 'update', tree: 'nope', node: 0, reward: 1 }, valid: false };
    const u = updates();
    if (u.list.length === 1 && rng.bernoulli(0.5)) return { name: 'update', request: { op: 'update', ...u.list[0] }, valid: u.valid, apply: u.apply, expect: () => ({ updated: 1 }) };
    if (rng.bernoulli(0.05)) return { name: 'update', request: { op: 'update', updates: [{ ...u.list[0], rewrd: 1 }] }, valid: false };
    return { name: 'update', request: { op: 'update', updates: u.list }, valid: u.valid, apply: u.apply, expect: () => ({ updated: u.list.length }) };
  };

  const rollouts = (count: number): { list: Array<Record<string, unknown>>; valid: boolean; apply: () => void } => {
    const list: Array<Record<string, unknown>> = [];
    const runs: Array<() => void> = [];
    for (let i = count; i > 0; i--) {
      const t = some(), leaf = rng.int(0, t.nodes.length - 1), r = reward();
      list.push(rng.bernoulli(0.5) ? { tree: t.id, leaf, reward: r } : { tree: t.id, path: pathTo(t, leaf), reward: r });
      runs.push(() => model.rollout(t, pathTo(t, leaf), r));
    }
    let valid = true;
    const defect = rng.next();
    if (defect < 0.08) { list[0] = { tree: list[0].tree, path: [1, 0], reward: 1 }; valid = false; }
    else if (defect < 0.13) { list[0] = { ...list[0], reward: 'high' }; valid = false; }
    else if (defect < 0.17) { list[0] = { tree: list[0].tree, leaf: 0, path: [0], reward: 1 }; valid = false; }
    else if (defect < 0.2) { list[0] = { tree: list[0].tree, leaf: 99, reward: 1 }; valid = false; }
    return { list, valid, apply: () => runs.forEach((r) => r()) };
  };

  const finishRollout = (): Step => {
    if (model.trees.length === 0) return { name: 'finish-rollout', request: { op: 'finish-rollout', tree: 'nope', leaf: 0, reward: 1 }, valid: false };
    const r = rollouts(1);
    return { name: 'finish-rollout', request: { op: 'finish-rollout', ...r.list[0] }, valid: r.valid, apply: r.apply };
  };

  const extend = (): Step => {
    if (model.trees.length === 0) return { name: 'extend', request: { op: 'extend', rollouts: [{ tree: 'nope', leaf: 0, reward: 1 }] }, valid: false };
    const u = rng.bernoulli(0.6) ? updates() : { list: [], valid: true, apply: () => {} };
    const r = rng.bernoulli(0.7) ? rollouts(rng.int(1, 3)) : { list: [], valid: true, apply: () => {} };
    return {
      name: 'extend', request: { op: 'extend', updates: u.list, rollouts: r.list }, valid: u.valid && r.valid,
      apply: () => { u.apply(); r.apply(); },
      expect: () => ({ added: 0, first: {}, updated: u.list.length, rollouts: r.list.length }),
    };
  };

  const removeTree = (): Step => {
    if (model.trees.length === 0) return { name: 'remove-tree', request: { op: 'remove-tree', tree: 'nope' }, valid: false };
    const ids = [...new Set(Array.from({ length: rng.int(1, Math.min(3, model.trees.length)) }, () => some().id))];
    const defect = rng.next();
    if (defect < 0.1) return { name: 'remove-tree', request: { op: 'remove-tree', trees: [...ids, 'nope'] }, valid: false };
    if (defect < 0.16) return { name: 'remove-tree', request: { op: 'remove-tree', trees: [ids[0], ids[0]] }, valid: false };
    const single = ids.length === 1 && rng.bernoulli(0.5);
    return {
      name: 'remove-tree', request: single ? { op: 'remove-tree', tree: ids[0] } : { op: 'remove-tree', trees: ids }, valid: true,
      apply: () => ids.forEach((id) => model.remove(id)), expect: () => ({ removed: ids.length, trees: model.trees.length }),
    };
  };

  const setParams = (): Step => {
    const defect = rng.next();
    if (defect < 0.15) return { name: 'set-params', request: { op: 'set-params', ...pick([{ alpha: 0 }, { tau: -1 }, { rule: 'v9' }, { alpha: 'x' }, { tau: 1e301 }]) }, valid: false };
    const change: Record<string, unknown> = {};
    if (rng.bernoulli(0.6)) change.alpha = pick([model.params.alpha, 0.5, 1, 2, 3.25]);
    if (rng.bernoulli(0.6)) change.tau = pick([model.params.tau, 0.25, 0.5, 1.5]);
    if (rng.bernoulli(0.3)) change.rule = pick(['v1', 'v2', 'v3', 'v4', 'v5']);
    return {
      name: 'set-params', request: { op: 'set-params', ...change }, valid: true,
      apply: () => {
        const next = { ...model.params, ...change } as Model['params'];
        const changed = next.alpha !== model.params.alpha || next.tau !== model.params.tau || next.rule !== model.params.rule;
        model.params = next;
        if (changed && model.exists) model.trees.forEach((t) => model.markTree(t));
      },
      expect: () => ({ params: model.params }),
    };
  };

  const treeList = (): { trees: string[] | undefined; valid: boolean } => {
    const r = rng.next();
    if (r < 0.6 || model.trees.length === 0) return { trees: undefined, valid: true };
    if (r < 0.8) return { trees: [...new Set(Array.from({ length: rng.int(1, 3) }, () => some().id))], valid: true };
    if (r < 0.9) return { trees: [some().id, 'nope'], valid: false };
    const id = some().id;
    return { trees: [id, id], valid: false };
  };

  const plan = (): Step => {
    const settings: Record<string, unknown> = {};
    const mode = rng.next();
    let valid = true;
    if (mode < 0.4) settings.budget = rng.int(0, 24);
    else if (mode < 0.6) settings.budget = Object.fromEntries(model.trees.map((t) => [t.id, rng.int(0, 12)]));
    else if (mode < 0.9) {
      settings.minPerTree = rng.int(0, 2);
      settings.totalBudget = (settings.minPerTree as number) * model.liveTrees() + rng.int(0, 40);
    }
    if (rng.bernoulli(0.25)) settings.pruneRatio = Math.round(rng.next() * 90) / 100;
    if (rng.bernoulli(0.2)) settings.baseDepth = rng.int(1, 6);
    if (rng.bernoulli(0.15)) settings.depthGain = Math.round(rng.next() * 200) / 100;
    if (model.params.rule !== 'v1' && rng.bernoulli(0.2)) settings.contestGain = pick([0, 1, 4, 9]);
    const defect = rng.next();
    if (defect < 0.05) { settings.budget = -1; delete settings.totalBudget; delete settings.minPerTree; valid = false; }
    else if (defect < 0.09) { settings.pruneRatio = 1; valid = false; }
    else if (defect < 0.12 && model.liveTrees() > 0) { settings.totalBudget = model.liveTrees() - 1; settings.minPerTree = 1; delete settings.budget; valid = false; }
    else if (defect < 0.15 && model.trees.length > 0) { settings.budget = {}; delete settings.totalBudget; delete settings.minPerTree; valid = false; }
    else if (defect < 0.17) { settings.baseDepth = 2147483647; delete settings.maxDepth; valid = false; }
    const list = treeList();
    const scores = rng.bernoulli(0.3);
    return {
      name: 'plan', request: { op: 'plan', ...settings, ...(scores ? { scores } : {}), ...(list.trees ? { trees: list.trees } : {}) }, valid: valid && list.valid,
      apply: () => { if (model.exists) { model.rescore(); model.plans++; } },
      expect: () => (model.exists ? model.plan(settings, scores, list.trees) : undefined),
    };
  };

  const read = (op: 'scores' | 'values'): Step => {
    const list = treeList();
    return {
      name: op, request: { op, ...(list.trees ? { trees: list.trees } : {}) }, valid: list.valid,
      apply: () => { if (op === 'scores' && model.exists) model.rescore(); },
    };
  };

  const globalShares = (): Step => {
    if (rng.bernoulli(0.15)) return { name: 'global-shares', request: { op: 'global-shares', treeFloor: pick([0, -1, 'x', 1e7]) }, valid: false };
    // treeFloor is fixed under v1 (docs/PROTOCOL.md, "Many shards").
    const floor = model.params.rule !== 'v1' && rng.bernoulli(0.3) ? { treeFloor: 0.5 } : {};
    return { name: 'global-shares', request: { op: 'global-shares', ...floor }, valid: true, apply: () => { if (model.exists) model.rescore(); } };
  };

  const junk = (): Step => pick([
    { name: 'junk', request: { op: 'nope' }, valid: false },
    { name: 'junk', request: { op: 'plan', budgte: 3 }, valid: false },
    { name: 'junk', request: { op: '__proto__' }, valid: false },
    { name: 'junk', request: { op: 'stats' }, valid: true },
    { name: 'junk', request: { op: 'add-nodes', tree: 'x', nodes: 'no' }, valid: false },
  ]);

  return () => {
    if (!model.exists || model.trees.length === 0) return rng.bernoulli(0.75) ? addTree() : pick([plan, globalShares, junk, () => read('values'), setParams])();
    const r = rng.next();
    if (r < 0.12) return addTree();
    if (r < 0.24) return addNodes();
    if (r < 0.38) return update();
    if (r < 0.5) return finishRollout();
    if (r < 0.56) return extend();
    if (r < 0.62) return removeTree();
    if (r < 0.66) return setParams();
    if (r < 0.84) return plan();
    if (r < 0.88) return read('scores');
    if (r < 0.92) return read('values');
    if (r < 0.95) return globalShares();
    return junk();
  };
}

/** Stats without the fields the model does not follow (storage, and how many trees the incremental planner redid). */
function comparable(stats: Record<string, unknown>): Record<string, unknown> {
  const { capacityRows: _rows, replannedTrees: _replanned, ...rest } = stats;
  return rest;
}

async function runSequence(seed: number): Promise<void> {
  const rng = new Rng(seed);
  const model = new Model();
  const session = new LiveSession({ backend: 'cpu', threads: 1, maxGroupSize: MAX_GROUP });
  const send = async (request: unknown) => JSON.parse((await session.handleLine(JSON.stringify(request)))!) as Reply;
  const nextStep = generator(rng, model);
  const log: string[] = [];
  try {
    for (let i = 0; i < STEPS; i++) {
      const step = nextStep();
      log.push(JSON.stringify(step.request).slice(0, 300));
      const where = () => `seed ${seed}, request ${i} (${step.name}): ${log[log.length - 1]}\nearlier:\n${log.slice(-8, -1).join('\n')}`;
      const statsBefore = (await send({ op: 'stats' })).result;
      const valuesBefore = (await send({ op: 'values' })).result;
      const reply = await send({ id: i, ...step.request });
      expect(reply.id, where()).toBe(i);
      expect(reply.ok, `${where()}\n${JSON.stringify(reply.error)}`).toBe(step.valid);
      if (reply.ok) {
        step.apply?.();
        const expected = step.expect?.();
        if (expected !== undefined) {
          const got = step.name === 'plan' ? (({ replanned: _, ...rest }) => rest)(reply.result) : reply.result;
          expect(got, where()).toEqual(expected);
        }
      } else {
        // A refused request changes nothing: not the forest, not a counter.
        expect((await send({ op: 'stats' })).result, where()).toEqual(statsBefore);
        expect((await send({ op: 'values' })).result, where()).toEqual(valuesBefore);
      }
      expect(comparable((await send({ op: 'stats' })).result), where()).toEqual(model.stats());
      expect((await send({ op: 'values' })).result, where()).toEqual(model.values());
    }
  } finally {
    session.destroy();
  }
}

describe(`serve: request sequences against a model of the forest (FUZZ_SEED=${SEED}, FUZZ_RUNS=${RUNS})`, () => {
  it('values, stats and plans equal the model after every request; refused requests change nothing', async () => {
    for (let run = 0; run < RUNS; run++) {
      const seed = SEED + run;
      try {
        await runSequence(seed);
      } catch (err) {
        (err as Error).message = `FUZZ_SEED=${seed} FUZZ_RUNS=1 reproduces this failure\n${(err as Error).message}`;
        throw err;
      }
    }
  });
});
