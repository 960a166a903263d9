import { resolveAllocateOptions, type AllocateOptions, type Rule } from '../allocate/options.js';
import { shareFingerprint, type ShardShares } from '../allocate/shards.js';
import type { LiveStore } from './store.js';

/** Settings phase 1 reads: q0 only (the rule is the scores'). */
export type ShareOptions = Pick<AllocateOptions, 'treeFloor'>;

/**
 * Phase 1 of the sharded global budget on a live forest whose scores are fresh: per tree in
 * tree order, liveness (a root is live unless every node of its tree is terminal) and Q_t,
 * summed over the tree's groups with k ≥ 2 in parent-row order, as `allocate` and the live
 * planner's global split sum them, so the numbers match a from-scratch plan bit for bit.
 */
export function liveShares(store: LiveStore, rule: Rule, options: ShareOptions = {}): ShardShares {
  const { treeFloor } = resolveAllocateOptions({ ...options, rule });
  const order = store.treeOrder;
  const live: number[] = new Array(order.length);
  const q: number[] = new Array(order.length);
  const sizes: number[] = new Array(order.length);
  const { slotStart, slotSize, terminal, childCount, intensity } = store;
  for (let t = 0; t < order.length; t++) {
    const lo = slotStart[order[t]], hi = lo + slotSize[order[t]];
    sizes[t] = hi - lo;
    let isLive = 0;
    for (let v = lo; v < hi; v++) if (!terminal[v]) { isLive = 1; break; }
    live[t] = isLive;
    if (!isLive) { q[t] = 0; continue; }
    if (rule === 'v3') { q[t] = treeFloor + (childCount[lo] >= 2 ? intensity[lo] : 0); continue; }
    let sum = 0, count = 0;
    for (let p = lo; p < hi; p++) if (childCount[p] >= 2) { sum += intensity[p]; count++; }
    q[t] = treeFloor + (count > 0 ? sum / count : 0);
  }
  const ids = order.map((slot) => store.slotId[slot]);
  return { rule, treeFloor, live, q, fingerprint: shareFingerprint(rule, treeFloor, ids, sizes, live, q) };
}
