import type { AllocationRule, ForestRows } from './rules/rule.js';

/**
 * live(v) = open(v) or some child of v is live (docs/ALGORITHM.md, "Common to all rules"), for
 * the tree at rows [lo, hi), into `rows.live`. Children come after their parent, so one reverse
 * pass settles every row.
 */
export function settleLiveness(rows: Pick<ForestRows, 'terminal' | 'childStart' | 'childCount' | 'child' | 'live'>, lo: number, hi: number): void {
  const { terminal, childStart, childCount, child, live } = rows;
  for (let v = hi - 1; v >= lo; v--) {
    let isLive = terminal[v] === 0;
    for (let q = childStart[v], end = q + childCount[v]; !isLive && q < end; q++) if (live[child[q]]) isLive = true;
    live[v] = isLive ? 1 : 0;
  }
}

/**
 * What the plan of the tree at rows [lo, hi) needs besides its budget and ψ: liveness, then the
 * rule's early stop (the kept/pruned split) of every group.
 */
export function splitTree(rule: AllocationRule, rows: ForestRows, lo: number, hi: number, pruneRatio: number): void {
  settleLiveness(rows, lo, hi);
  rule.earlyStop(rows, lo, hi, pruneRatio);
  rows.kept[lo] = 0; rows.pruned[lo] = 0; // the root is in no group
}
