// Shared by the live-forest tests (cpu and gpu): random change sequences and the from-scratch check.
import { expect } from 'vitest';
import { allocate } from '../src/allocate/allocate.js';
import type { AllocateOptions } from '../src/allocate/options.js';
import type { NodeInput, TreeInput } from '../src/forest/input.js';
import { scoreCpu } from '../src/score/cpu.js';
import type { Scores } from '../src/score/types.js';
import type { LiveForest } from '../src/live/forest.js';
import type { LivePlanOptions } from '../src/live/plan.js';
import { liveScoresOn, snapshotLive } from '../src/live/snapshot.js';
import type { Rng } from '../src/util/random.js';

export interface LiveOp {
  name: string;
  apply: () => void | Promise<void>;
  /** When set, plan with these options and compare against a from-scratch score + allocate. */
  check?: LivePlanOptions;
}

function randomNode(rng: Rng, parent: number | undefined, dim: number, parentEmbedding: number[] | undefined): NodeInput & { embedding: number[] } {
  const pick = rng.next();
  const embedding = Array.from({ length: dim }, () => rng.normal());
  if (parentEmbedding && pick < 0.25) for (let d = 0; d < dim; d++) embedding[d] = parentEmbedding[d] + rng.normal() * 1e-3; // near-duplicate
  else if (parentEmbedding && pick < 0.35) embedding.splice(0, dim, ...parentEmbedding); // identical
  else if (pick < 0.42) embedding.fill(0); // zero norm
  const visits = rng.bernoulli(0.25) ? 0 : rng.int(1, 6);
  const node: NodeInput & { embedding: number[] } = {
    reward: rng.bernoulli(0.5) ? rng.int(0, 2) / 2 : rng.next(),
    visits,
    uncertainty: rng.bernoulli(0.3) ? 0 : rng.next(),
    terminal: rng.bernoulli(0.15),
    embedding,
  };
  if (parent !== undefined) node.parent = parent;
  return node;
}

function randomTree(rng: Rng, id: string, dim: number): TreeInput {
  const n = rng.int(1, 14);
  const nodes: (NodeInput & { embedding: number[] })[] = [];
  for (let v = 0; v < n; v++) {
    const p = v === 0 ? undefined : rng.bernoulli(0.5) ? v - 1 : rng.int(0, v - 1);
    nodes.push(randomNode(rng, p === undefined ? undefined : p, dim, p === undefined ? undefined : nodes[p].embedding));
  }
  nodes[0].parent = -1;
  return { id, nodes };
}

function randomPlanOptions(rng: Rng, live: LiveForest): LivePlanOptions {
  const opts: LivePlanOptions = {};
  const mode = rng.next();
  if (mode < 0.4) opts.budget = rng.int(0, 24);
  else if (mode < 0.6) opts.budget = Object.fromEntries(live.treeIds().map((id) => [id, rng.int(0, 12)]));
  else {
    opts.minPerTree = rng.int(0, 2);
    opts.totalBudget = opts.minPerTree * live.treeCount + rng.int(0, 40);
  }
  if (rng.bernoulli(0.3)) opts.pruneRatio = rng.next() * 0.9;
  if (rng.bernoulli(0.3)) opts.widen = rng.next();
  if (rng.bernoulli(0.2)) opts.baseDepth = rng.int(1, 6);
  if (rng.bernoulli(0.2)) opts.depthGain = rng.next() * 2;
  return opts;
}

/** Random changes, each generated from the forest as the previous ones left it. */
export function* randomOps(live: LiveForest, rng: Rng, steps: number): Generator<LiveOp> {
  const dim = live.dim;
  let next = 0;
  let lastOptions: LivePlanOptions | undefined;
  const someTree = () => { const ids = live.treeIds(); return ids[rng.int(0, ids.length - 1)]; };
  const sizeOf = (id: string) => live.store.slotSize[live.store.slotOf(id)];
  for (let i = 0; i < 1 + rng.int(0, 3); i++) {
    const tree = randomTree(rng, `n${next++}`, dim);
    yield { name: 'add-tree', apply: () => { live.addTree(tree); } };
  }
  for (let step = 0; step < steps; step++) {
    const r = rng.next();
    if (live.treeCount === 0 || r < 0.1) {
      const tree = randomTree(rng, `n${next++}`, dim);
      yield { name: 'add-tree', apply: () => { live.addTree(tree); } };
    } else if (r < 0.3) {
      const id = someTree();
      const n0 = sizeOf(id);
      const nodes: NodeInput[] = [];
      const count = rng.int(1, 6);
      for (let i = 0; i < count; i++) nodes.push(randomNode(rng, rng.int(0, n0 + i - 1), dim, undefined));
      yield { name: 'add-nodes', apply: () => { live.addNodes(id, nodes); } };
    } else if (r < 0.5) {
      const updates = Array.from({ length: rng.int(1, 4) }, () => {
        const id = someTree();
        const u: { tree: string; node: number; reward?: number; visits?: number; uncertainty?: number; terminal?: boolean } = { tree: id, node: rng.int(0, sizeOf(id) - 1) };
        if (rng.bernoulli(0.5)) u.reward = rng.next();
        if (rng.bernoulli(0.5)) u.visits = rng.int(0, 5);
        if (rng.bernoulli(0.4)) u.uncertainty = rng.next();
        if (rng.bernoulli(0.3)) u.terminal = rng.bernoulli(0.5);
        return u;
      });
      yield { name: 'update', apply: () => live.update(updates) };
    } else if (r < 0.65) {
      const id = someTree();
      const leaf = rng.int(0, sizeOf(id) - 1);
      const reward = rng.int(0, 1);
      yield { name: 'finish-rollout', apply: () => live.finishRollout(id, { leaf }, reward) };
    } else if (r < 0.7) {
      // A branch stops (or resumes): only liveness, and so only the plan, changes.
      const id = someTree();
      const stop = { tree: id, node: rng.int(0, sizeOf(id) - 1), terminal: rng.bernoulli(0.8) };
      yield { name: 'stop', apply: () => live.update(stop) };
    } else if (r < 0.75) {
      const id = someTree();
      yield { name: 'remove-tree', apply: () => live.removeTree(id) };
    } else if (r < 0.78) {
      const params = { alpha: 0.1 + rng.next() * 4, tau: 0.05 + rng.next() * 2 };
      yield { name: 'set-params', apply: () => live.setParams(params) };
    } else {
      // Mostly re-plan with the same settings, as a trainer does: a stale tree plan shows only then.
      if (lastOptions === undefined || rng.bernoulli(0.35)) lastOptions = randomPlanOptions(rng, live);
      if (lastOptions.budget !== undefined && typeof lastOptions.budget !== 'number') lastOptions.budget = { ...Object.fromEntries(live.treeIds().map((id) => [id, 3])), ...lastOptions.budget };
      yield { name: 'plan', apply: () => {}, check: lastOptions };
    }
  }
}

/** SPEC §2 tolerances between two scorings. */
export function expectScoresClose(actual: Scores, expected: Scores, rows: number): void {
  for (let i = 0; i < rows; i++) {
    expect(Math.abs(actual.contrast[i] - expected.contrast[i])).toBeLessThanOrEqual(1e-4);
    expect(Math.abs(actual.weight[i] - expected.weight[i])).toBeLessThanOrEqual(1e-4);
    expect(Math.abs(actual.gradAlpha[i] - expected.gradAlpha[i])).toBeLessThanOrEqual(1e-3 * Math.max(1, Math.abs(expected.gradAlpha[i])));
    expect(Math.abs(actual.gradTau[i] - expected.gradTau[i])).toBeLessThanOrEqual(1e-3 * Math.max(1, Math.abs(expected.gradTau[i])));
  }
  for (let g = 0; g < expected.intensity.length; g++) expect(Math.abs(actual.intensity[g] - expected.intensity[g])).toBeLessThanOrEqual(1e-4);
}

/**
 * Plans the live forest and checks it against a from-scratch snapshot: scores against the
 * float64 reference (bit for bit when `exact`, SPEC tolerances otherwise), and the plan
 * against `allocate` run on the snapshot with the same scores the live plan used — so the
 * incremental planner must match exactly, rounding ties included.
 */
export async function checkLiveAgainstScratch(live: LiveForest, options: LivePlanOptions, how: { exact: boolean }): Promise<void> {
  const snapBefore = snapshotLive(live);
  const allocOptions: AllocateOptions = { ...options, budget: undefined };
  if (typeof options.budget === 'number') allocOptions.budget = options.budget;
  else if (options.budget !== undefined) {
    const map = options.budget;
    allocOptions.budget = snapBefore.forest.treeIds.map((id) => map[id]);
  }
  let refError: unknown;
  try {
    allocate(snapBefore.forest, scoreCpu(snapBefore.forest, live.scoreParams), allocOptions);
  } catch (err) {
    refError = err;
  }
  if (refError !== undefined) {
    await expect(live.plan(options)).rejects.toThrow((refError as Error).message);
    return;
  }
  const summary = await live.plan(options);
  const snap = snapshotLive(live);
  expect(snap.forest).toEqual(snapBefore.forest);
  const { forest, liveRow } = snap;
  const ref = scoreCpu(forest, live.scoreParams);
  const got = liveScoresOn(live, snap);
  if (how.exact) {
    expect(got.contrast).toEqual(ref.contrast);
    expect(got.weight).toEqual(ref.weight);
    expect(got.gradAlpha).toEqual(ref.gradAlpha);
    expect(got.gradTau).toEqual(ref.gradTau);
    expect(got.intensity).toEqual(ref.intensity);
  } else {
    expectScoresClose(got, ref, forest.nodeCount);
  }
  const alloc = allocate(forest, got, allocOptions);
  const s = live.store;
  const n = forest.nodeCount;
  const pick = (col: Int32Array | Uint8Array) => Array.from({ length: n }, (_, i) => col[liveRow[i]]);
  expect(pick(s.branches)).toEqual(Array.from(alloc.branches));
  expect(pick(s.depth)).toEqual(Array.from(alloc.depth));
  expect(pick(s.pruned)).toEqual(Array.from(alloc.pruned));
  const plan = live.planJson();
  expect(plan.trees.map((t) => t.budget)).toEqual(Array.from(alloc.treeBudget));
  expect(plan.trees.map((t) => t.unallocated)).toEqual(Array.from(alloc.unallocated));
  if (options.totalBudget !== undefined) expect(summary.unallocatedTotal).toBe(alloc.unallocatedTotal);
}
