import type { Grower } from '../tree.js';
import type { Allocator } from './types.js';

const PB_C_INIT = 1.25;
const PB_C_BASE = 19652;

/**
 * PUCT with the policy prior, as in mctx's `muzero_action_selection`:
 * argmax_a q̂(s,a) + P(a|s)·√N(s)·(c1 + ln((N(s) + c2 + 1)/c2)) / (1 + N(s,a)), c1 = 1.25,
 * c2 = 19652, with q̂ from `qtransform_by_parent_and_siblings` (an unvisited action takes the
 * parent's value; values min–max normalised over the parent and its visited children).
 * Each simulation descends from the root, expands one new action, and rolls the policy out to
 * the end of the episode (the rollout's nodes join the tree). Children are keyed by action.
 * Unlike a game search, revisiting a finished episode buys nothing here, so subtrees whose
 * episodes have all ended are excluded from selection (otherwise the budget never moves).
 */
export class PuctAllocator implements Allocator {
  readonly name = 'puct';

  grow(g: Grower): void {
    const f = g.forest, A = g.env.actions;
    const childOf = new Map<number, Int32Array>();
    const exhausted = new Set<number>();
    const slot = (v: number) => {
      let s = childOf.get(v);
      if (!s) { s = new Int32Array(A).fill(-1); childOf.set(v, s); }
      return s;
    };
    const register = (v: number) => { slot(f.parent[v])[f.action[v]] = v; };
    let stuck = 0;
    for (let sim = 0; g.remaining() > 0 && stuck < f.roots.length; sim++) {
      const root = f.roots[sim % f.roots.length];
      if (exhausted.has(root)) { stuck++; continue; }
      stuck = 0;
      const path = [root];
      let node = root;
      for (;;) {
        const a = this.select(g, node, slot(node), exhausted);
        if (a < 0) break;
        const child = slot(node)[a];
        if (child >= 0) { node = child; path.push(node); continue; }
        // Expand action a, then roll the policy on to the episode's end: one launch from `node`.
        const before = f.size;
        g.rollout(node, Infinity, a);
        if (f.size === before) break;
        for (let v = before; v < f.size; v++) register(v);
        path.push(before);
        break;
      }
      // Children have larger ids than parents, so one descending pass settles exhaustion bottom-up.
      for (let v = f.size - 1; v >= 0; v--) this.markExhausted(g, v, childOf, exhausted);
    }
  }

  private select(g: Grower, node: number, children: Int32Array, exhausted: Set<number>): number {
    const f = g.forest, A = g.env.actions;
    const prior = g.policy.distribution(f.state[node], new Float64Array(A));
    const parentValue = f.visits[node] > 0 ? f.rewardSum[node] / f.visits[node] : 0;
    let lo = parentValue, hi = parentValue;
    for (let a = 0; a < A; a++) {
      const c = children[a];
      if (c >= 0 && f.visits[c] > 0) { const q = f.rewardSum[c] / f.visits[c]; lo = Math.min(lo, q); hi = Math.max(hi, q); }
    }
    // N(s): the node's own evaluation (mctx counts it) plus the finished simulations below it.
    let nParent = 1;
    for (let a = 0; a < A; a++) if (children[a] >= 0) nParent += f.visits[children[a]];
    const pbC = PB_C_INIT + Math.log((nParent + PB_C_BASE + 1) / PB_C_BASE);
    let best = -1, bestScore = -Infinity;
    for (let a = 0; a < A; a++) {
      const c = children[a];
      if (c >= 0 && exhausted.has(c)) continue;
      const visited = c >= 0 && f.visits[c] > 0;
      const q = visited ? f.rewardSum[c] / f.visits[c] : parentValue;
      const qHat = (q - lo) / Math.max(hi - lo, 1e-8);
      const nChild = c >= 0 ? f.visits[c] : 0;
      const score = qHat + (Math.sqrt(nParent) * pbC * prior[a]) / (nChild + 1);
      // Exact ties (common at fresh nodes with a flat prior) are broken at random.
      if (score > bestScore + 1e-12 || (Math.abs(score - bestScore) <= 1e-12 && g.rng.bernoulli(0.5))) { best = a; bestScore = score; }
    }
    return best;
  }

  private markExhausted(g: Grower, v: number, childOf: Map<number, Int32Array>, exhausted: Set<number>): void {
    const f = g.forest;
    if (exhausted.has(v)) return;
    if (f.terminal[v]) { exhausted.add(v); return; }
    const s = childOf.get(v);
    if (!s) return;
    for (let a = 0; a < s.length; a++) if (s[a] < 0 || !exhausted.has(s[a])) return;
    exhausted.add(v);
  }
}
