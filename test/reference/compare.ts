import type { Plan, PlanAllocation, PlanTree, ReferenceResult, TreeTies } from './spec.js';

/** SPEC §2 precision contract. */
export const TOL_SCORE = 1e-4;
export const TOL_GRAD = 1e-3;
/** ALGORITHM.md "Precision and ties": two float64 implementations, every score field relative to max(1, |value|). */
export const TOL_FLOAT64 = 1e-9;

function gradOk(got: number, want: number): boolean {
  return Math.abs(got - want) <= TOL_GRAD * Math.max(1, Math.abs(want));
}

function float64Ok(got: number, want: number): boolean {
  return Math.abs(got - want) <= TOL_FLOAT64 * Math.max(1, Math.abs(want));
}

function scoreOk(got: number, want: number): boolean {
  return Math.abs(got - want) <= TOL_SCORE;
}

function sameList(a: readonly number[], b: readonly number[]): boolean {
  return a.length === b.length && a.every((v, i) => v === b[i]);
}

function symmetricDifference(a: readonly number[], b: readonly number[]): number[] {
  const sa = new Set(a);
  const sb = new Set(b);
  return [...a.filter((v) => !sb.has(v)), ...b.filter((v) => !sa.has(v))].sort((x, y) => x - y);
}

/** Invariants every plan tree must keep whatever the tie resolution: order, positivity, Σ b_v + unallocated = budget. */
export function checkShape(tree: PlanTree, where: string, out: string[]): void {
  let sum = 0;
  let last = -1;
  for (const a of tree.allocations) {
    if (!(a.node > last)) out.push(`${where}: allocations not in increasing node order at node ${a.node}`);
    if (!(Number.isInteger(a.branches) && a.branches > 0)) out.push(`${where}: node ${a.node} has branches ${a.branches}`);
    if (!(Number.isInteger(a.depth) && a.depth >= 1)) out.push(`${where}: node ${a.node} has depth ${a.depth}`);
    last = a.node;
    sum += a.branches;
  }
  if (sum + tree.unallocated !== tree.budget) out.push(`${where}: Σ branches ${sum} + unallocated ${tree.unallocated} ≠ budget ${tree.budget}`);
  for (let i = 1; i < tree.pruned.length; i++) {
    if (!(tree.pruned[i] > tree.pruned[i - 1])) out.push(`${where}: pruned not sorted: ${JSON.stringify(tree.pruned)}`);
  }
}

function compareAllocations(got: PlanTree, want: PlanTree, ties: TreeTies, depthAll: readonly number[], where: string, out: string[]): void {
  const g = new Map<number, PlanAllocation>(got.allocations.map((a) => [a.node, a]));
  const w = new Map<number, PlanAllocation>(want.allocations.map((a) => [a.node, a]));
  const nodes = [...new Set([...g.keys(), ...w.keys()])].sort((a, b) => a - b);
  for (const v of nodes) {
    const gb = g.get(v)?.branches ?? 0;
    const wb = w.get(v)?.branches ?? 0;
    if (gb !== wb && !(ties.rounding.has(v) && Math.abs(gb - wb) === 1)) {
      out.push(`${where}: node ${v} branches got ${gb}, want ${wb}`);
    }
    const gd = g.get(v)?.depth;
    if (gd !== undefined) {
      const wd = depthAll[v];
      if (gd !== wd && !(ties.depth.has(v) && Math.abs(gd - wd) === 1)) out.push(`${where}: node ${v} depth got ${gd}, want ${wd}`);
    }
  }
}

/**
 * Every way `got` departs from the reference beyond the SPEC tolerances and the reference's
 * own near-ties. Empty when the CLI conforms.
 */
export interface CompareOptions {
  withScores?: boolean;
  /**
   * Hold largest-remainder ties (within nodes and across trees) to the spec's tie rule exactly.
   * Only sound where the tied reals are equal by construction in any implementation, e.g.
   * indistinguishable siblings whose shares are the same expression of the same numbers.
   */
  exactTies?: boolean;
  /**
   * Hold every score field (C, w, gA, gB, I) to 1e-9·max(1, |value|), the float64-to-float64
   * contract, instead of the GPU tolerances.
   */
  float64?: boolean;
}

export function comparePlans(got: Plan, ref: Pick<ReferenceResult, 'plan' | 'ties' | 'depth'>, options: CompareOptions = {}): string[] {
  const withScores = options.withScores ?? true;
  const near = options.float64 ? float64Ok : scoreOk;
  const nearGrad = options.float64 ? float64Ok : gradOk;
  const out: string[] = [];
  const want = ref.plan;
  if (got.params?.alpha !== want.params.alpha || got.params?.tau !== want.params.tau) {
    out.push(`params got ${JSON.stringify(got.params)}, want ${JSON.stringify(want.params)}`);
  }
  if (!Array.isArray(got.trees) || got.trees.length !== want.trees.length) {
    out.push(`tree count got ${got.trees?.length}, want ${want.trees.length}`);
    return out;
  }
  want.trees.forEach((wt, t) => {
    const gt = got.trees[t];
    const where = `tree #${t} (${wt.id})`;
    const ties = options.exactTies ? { ...ref.ties[t], rounding: new Set<number>(), budget: false } : ref.ties[t];
    if (gt.id !== wt.id) out.push(`${where}: id got ${JSON.stringify(gt.id)}`);
    checkShape(gt, where, out);

    if (withScores) {
      const gs = gt.scores ?? [];
      const ws = wt.scores ?? [];
      if (gs.length !== ws.length) out.push(`${where}: ${gs.length} scores, want ${ws.length}`);
      ws.forEach((s, i) => {
        const o = gs[i];
        if (!o || o.node !== s.node) {
          out.push(`${where}: score #${i} is for node ${o?.node}, want ${s.node}`);
          return;
        }
        const at = `${where} node ${s.node}`;
        if (!near(o.contrast, s.contrast)) out.push(`${at}: contrast got ${o.contrast}, want ${s.contrast}`);
        if (!near(o.weight, s.weight)) out.push(`${at}: weight got ${o.weight}, want ${s.weight}`);
        if (!nearGrad(o.gradAlpha, s.gradAlpha)) out.push(`${at}: gradAlpha got ${o.gradAlpha}, want ${s.gradAlpha}`);
        if (!nearGrad(o.gradTau, s.gradTau)) out.push(`${at}: gradTau got ${o.gradTau}, want ${s.gradTau}`);
      });
      const gg = gt.groups ?? [];
      const wg = wt.groups ?? [];
      if (!sameList(gg.map((x) => x.parent), wg.map((x) => x.parent))) {
        out.push(`${where}: group parents got ${JSON.stringify(gg.map((x) => x.parent))}, want ${JSON.stringify(wg.map((x) => x.parent))}`);
      } else {
        wg.forEach((x, i) => {
          if (!near(gg[i].intensity, x.intensity)) out.push(`${where} group ${x.parent}: intensity got ${gg[i].intensity}, want ${x.intensity}`);
        });
      }
    } else if (gt.scores !== undefined || gt.groups !== undefined) {
      out.push(`${where}: scores/groups present without --scores`);
    }

    if (gt.budget !== wt.budget) {
      if (!(ties.budget && Math.abs(gt.budget - wt.budget) === 1)) out.push(`${where}: budget got ${gt.budget}, want ${wt.budget}`);
      return; // a different (tied) budget changes every allocation; the shape check above still holds
    }
    if (gt.unallocated !== wt.unallocated) out.push(`${where}: unallocated got ${gt.unallocated}, want ${wt.unallocated}`);

    if (!sameList(gt.pruned, wt.pruned)) {
      const diff = symmetricDifference(gt.pruned, wt.pruned);
      if (!diff.every((v) => ties.prune.has(v))) {
        out.push(`${where}: pruned got ${JSON.stringify(gt.pruned)}, want ${JSON.stringify(wt.pruned)}`);
      }
      return; // a prune near-tie resolved the other way reroutes the flow below it
    }
    compareAllocations(gt, wt, ties, ref.depth[t], where, out);
  });
  return out;
}
