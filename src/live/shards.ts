import { resolveAllocateOptions, type AllocateOptions, type Rule } from '../allocate/options.js';
import { ruleNamed } from '../allocate/rules/index.js';
import { shareFingerprint, type ShardShares } from '../allocate/shards.js';
import type { LiveStore } from './store.js';

/** Settings phase 1 reads: q0 only (the rule is the scores'). */
export type ShareOptions = Pick<AllocateOptions, 'treeFloor'>;

/**
 * Phase 1 of the sharded global budget on a live forest whose scores are fresh: per tree in
 * tree order, liveness (a root is live unless every node of its tree is terminal) and
 * Q_t = q0 + S_t, S_t the rule's `treeSignal` on the store's rows as `allocate` and the live
 * planner's global split compute it, so the numbers match a from-scratch plan bit for bit.
 */
export function liveShares(store: LiveStore, rule: Rule, options: ShareOptions = {}): ShardShares {
  const { treeFloor } = resolveAllocateOptions({ ...options, rule });
  const order = store.treeOrder;
  const live: number[] = new Array(order.length);
  const q: number[] = new Array(order.length);
  const sizes: number[] = new Array(order.length);
  const { slotStart, slotSize, terminal } = store;
  const spec = ruleNamed(rule);
  for (let t = 0; t < order.length; t++) {
    const lo = slotStart[order[t]], hi = lo + slotSize[order[t]];
    sizes[t] = hi - lo;
    let isLive = 0;
    for (let v = lo; v < hi; v++) if (!terminal[v]) { isLive = 1; break; }
    live[t] = isLive;
    q[t] = isLive ? treeFloor + spec.treeSignal(store, lo, hi) : 0;
  }
  const ids = order.map((slot) => store.slotId[slot]);
  return { rule, treeFloor, live, q, fingerprint: shareFingerprint(rule, treeFloor, ids, sizes, live, q) };
}
