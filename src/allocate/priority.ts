import type { ForestRows } from './rules/rule.js';

/**
 * ψ_v for the tree at rows [lo, hi) (docs/ALGORITHM.md, "Path priority"): ψ_root = 1,
 * ψ_c = ψ_p·k_p·w_c, into `rows.priority`. Every rule's depths read it; v2's claims too.
 */
export function pathPriority(rows: Pick<ForestRows, 'parentRow' | 'childCount' | 'weight' | 'priority'>, lo: number, hi: number): void {
  const { parentRow, childCount, weight, priority } = rows;
  for (let v = lo; v < hi; v++) {
    const p = parentRow[v];
    priority[v] = p < 0 ? 1 : priority[p] * childCount[p] * weight[v];
  }
}

