/**
 * Holds a CLI plan made under rule v3 to the independent reference (v3.ts) — or under v4, whose
 * allocation is v3's on gated scores, to v4.ts: `ref` carries the rule and its scores.
 *
 * Scores: |Δ| ≤ 1e−9·max(1, |value|) for C, w, gA, gB and I (docs/ALGORITHM.md, "Precision, ties
 * and refusals"). Plans: every budget, `unallocated`, `pruned` and {node, branches, depth} exactly,
 * except at a decision the document calls tied. There the reference does not give up on the
 * tree: it takes the CLI's side of the tie and recomputes what follows from it, so everything
 * downstream of a tied decision is still compared exactly —
 *  - a global budget at a tied cut across trees (±1): the tree is re-allocated with the CLI's budget;
 *  - a visited child's weight tied with its group's bar ρ·w*: the reference re-runs the tree with
 *    the CLI's keep/prune decision for exactly those children;
 *  - a largest-remainder cut inside a tree: the nodes at the tied cut may differ by one unit;
 *  - a depth at a tied .5 edge: it may differ by one.
 */
import { checkShape } from './compare.js';
import type { PlanAllocation, PlanTree, SpecForest } from './spec.js';
import { allocateTreeV3, treeId, type TreeAllocationV3, type V3Params, type V3Plan, type V3Result } from './v3.js';

export const TOL_FLOAT64 = 1e-9;
const close = (got: number, want: number) => Math.abs(got - want) <= TOL_FLOAT64 * Math.max(1, Math.abs(want));

/** How often the comparison took the CLI's side of a documented tie (reported by the tests). */
export interface TiesFollowed {
  budget: number;
  prune: number;
  rounding: number;
  depth: number;
}

export interface V3Comparison {
  problems: string[];
  followed: TiesFollowed;
}

function compareScores(got: PlanTree, want: PlanTree, where: string, out: string[]): void {
  const gs = got.scores ?? [];
  const ws = want.scores ?? [];
  if (gs.length !== ws.length) out.push(`${where}: ${gs.length} scores, want ${ws.length}`);
  ws.forEach((s, i) => {
    const o = gs[i];
    if (o?.node !== s.node) {
      out.push(`${where}: score #${i} is for node ${o?.node}, want ${s.node}`);
      return;
    }
    for (const key of ['contrast', 'weight', 'gradAlpha', 'gradTau'] as const) {
      if (!close(o[key], s[key])) out.push(`${where} node ${s.node}: ${key} got ${o[key]}, want ${s[key]}`);
    }
  });
  const gg = got.groups ?? [];
  const wg = want.groups ?? [];
  if (JSON.stringify(gg.map((g) => g.parent)) !== JSON.stringify(wg.map((g) => g.parent))) {
    out.push(`${where}: group parents got ${JSON.stringify(gg.map((g) => g.parent))}, want ${JSON.stringify(wg.map((g) => g.parent))}`);
    return;
  }
  wg.forEach((g, i) => {
    if (!close(gg[i].intensity, g.intensity)) out.push(`${where} group ${g.parent}: intensity got ${gg[i].intensity}, want ${g.intensity}`);
  });
}

function compareAllocations(got: PlanTree, ref: TreeAllocationV3, where: string, out: string[], followed: TiesFollowed): void {
  const g = new Map<number, PlanAllocation>(got.allocations.map((a) => [a.node, a]));
  const w = new Map<number, PlanAllocation>(ref.tree.allocations.map((a) => [a.node, a]));
  const nodes = [...new Set([...g.keys(), ...w.keys()])].sort((a, b) => a - b);
  let roundingFollowed = false;
  for (const v of nodes) {
    const gb = g.get(v)?.branches ?? 0;
    const wb = w.get(v)?.branches ?? 0;
    if (gb !== wb) {
      if (ref.ties.rounding.has(v) && Math.abs(gb - wb) === 1) roundingFollowed = true;
      else out.push(`${where}: node ${v} branches got ${gb}, want ${wb} (x = ${ref.mass[v]})`);
    }
    const gd = g.get(v)?.depth;
    if (gd !== undefined && gd !== ref.depth[v]) {
      if (ref.ties.depth.has(v) && Math.abs(gd - ref.depth[v]) === 1) followed.depth++;
      else out.push(`${where}: node ${v} depth got ${gd}, want ${ref.depth[v]} (ln ψ = ${ref.lnPsi[v]})`);
    }
  }
  if (roundingFollowed) followed.rounding++;
}

export interface CompareV3Options {
  /**
   * Trees whose scores are compared but not their allocation (nor its shape): trees that hit a
   * known disagreement of the CLI with the document in their allocation (reference/known-v3.ts).
   */
  scoresOnly?: ReadonlySet<number>;
  /** Trees compared for their plan shape only (a known disagreement in their scores). */
  shapeOnly?: ReadonlySet<number>;
}

/** Every departure of `got` from the reference beyond the document's tolerance and ties; empty when the CLI conforms. */
export function compareV3(got: V3Plan, forest: SpecForest, params: V3Params, ref: V3Result, options: CompareV3Options = {}): V3Comparison {
  const out: string[] = [];
  const followed: TiesFollowed = { budget: 0, prune: 0, rounding: 0, depth: 0 };
  if (got.params?.alpha !== params.alpha || got.params?.tau !== params.tau || got.params?.rule !== ref.plan.params.rule) {
    out.push(`params got ${JSON.stringify(got.params)}, want ${JSON.stringify(ref.plan.params)}`);
  }
  if (params.budget.kind === 'global') {
    if (got.totalBudget !== params.budget.total) out.push(`totalBudget got ${got.totalBudget}, want ${params.budget.total}`);
    if (got.unallocated !== ref.plan.unallocated) out.push(`top-level unallocated got ${got.unallocated}, want ${ref.plan.unallocated}`);
  } else if (got.totalBudget !== undefined || got.unallocated !== undefined) {
    out.push('per-tree budget: top-level totalBudget/unallocated present');
  }
  if (!Array.isArray(got.trees) || got.trees.length !== forest.trees.length) {
    out.push(`tree count got ${got.trees?.length}, want ${forest.trees.length}`);
    return { problems: out, followed };
  }
  forest.trees.forEach((tree, t) => {
    const gt = got.trees[t];
    const id = treeId(tree, t);
    const where = `tree #${t} (${id})`;
    if (gt.id !== id) out.push(`${where}: id got ${JSON.stringify(gt.id)}`);
    if (options.scoresOnly?.has(t)) {
      compareScores(gt, ref.plan.trees[t], where, out); // its allocation may break even Σ b = B
      return;
    }
    checkShape(gt, where, out);
    if (options.shapeOnly?.has(t)) return;
    compareScores(gt, ref.plan.trees[t], where, out);

    let alloc = ref.trees[t];
    if (gt.budget !== alloc.tree.budget) {
      if (!(ref.budgetTies.has(t) && Math.abs(gt.budget - alloc.tree.budget) === 1)) {
        out.push(`${where}: budget got ${gt.budget}, want ${alloc.tree.budget}`);
        return;
      }
      followed.budget++;
      alloc = allocateTreeV3(tree, id, ref.scores[t], gt.budget, params);
    }
    if (JSON.stringify(gt.pruned) !== JSON.stringify(alloc.tree.pruned)) {
      const cliPruned = new Set(gt.pruned);
      const differing = [...new Set([...gt.pruned, ...alloc.tree.pruned])].filter((v) => cliPruned.has(v) !== alloc.tree.pruned.includes(v));
      if (!differing.every((v) => alloc.ties.prune.has(v))) {
        out.push(`${where}: pruned got ${JSON.stringify(gt.pruned)}, want ${JSON.stringify(alloc.tree.pruned)}`);
        return;
      }
      followed.prune++;
      const follow = new Map<number, boolean>([...alloc.ties.prune].map((v) => [v, !cliPruned.has(v)]));
      alloc = allocateTreeV3(tree, id, ref.scores[t], gt.budget, params, follow);
    }
    if (gt.unallocated !== alloc.tree.unallocated) out.push(`${where}: unallocated got ${gt.unallocated}, want ${alloc.tree.unallocated}`);
    compareAllocations(gt, alloc, where, out, followed);
  });
  return { problems: out, followed };
}
