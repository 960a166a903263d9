import { describeValue } from '../forest/errors.js';
import { isBudget, MAX_WHOLE } from '../allocate/options.js';
import { OptionError } from '../util/errors.js';
import type { LiveStore } from './store.js';

/** One rollout to start now: where, its fork horizon, and the ticket that releases its slot. */
export interface Placement {
  /** The tree's id. */
  readonly tree: string;
  /** Tree-local index of the node the rollout starts from (0: the prompt, a fresh chain). */
  readonly node: number;
  /** The plan's depth at that node (docs/ALGORITHM.md, "Depth"). */
  readonly depth: number;
  /** Identifies the running rollout; give it back (`release`) when the rollout has ended or was dropped. */
  readonly ticket: number;
}

/** Where one tree most wants its next rollout: its best node by deficit, or none (node −1). */
interface TreeBest {
  node: number;
  /** b_v − f_v: planned branches minus rollouts running from the node. */
  deficit: number;
  /** x_v − f_v: the same against the unrounded mass (ties of `deficit`). */
  massDeficit: number;
}

const NONE: TreeBest = Object.freeze({ node: -1, deficit: -Infinity, massDeficit: -Infinity });

/**
 * Continuous placement (docs/ALGORITHM.md, "Continuous placement"): the rollouts running now,
 * by tree and start node, and the choice of the next starts. The plan it follows is the round
 * plan of the driver's whole concurrency made with the evidence now (the caller plans first);
 * each new rollout goes to the node where that plan wants the most rollouts beyond those
 * already running there. With nothing finished between them, placing a round's rollouts one at
 * a time gives exactly the round's plan.
 *
 * Only trees whose plan or running set changed are looked at again: per call O(trees) plus the
 * rows of those trees.
 */
export class LivePlacements {
  private nextTicket = 1;
  /** ticket → (tree id, node). */
  private readonly tickets = new Map<number, { tree: string; node: number }>();
  /** tree id → node → rollouts running from it. */
  private readonly running = new Map<string, Map<number, number>>();
  /** tree id → its best node, while its plan and running set are as when it was computed. */
  private readonly best = new Map<string, TreeBest>();

  constructor(private readonly store: LiveStore) {}

  /** Rollouts running now (tickets not yet released). */
  get inFlight(): number { return this.tickets.size; }

  /** Running rollouts per tree id and node, for `stats` and tests. */
  runningOf(treeId: string): ReadonlyMap<number, number> {
    return this.running.get(treeId) ?? new Map();
  }

  /** Refuses (changing nothing) tickets that are not running, or listed twice. */
  checkRelease(tickets: unknown): number[] {
    if (tickets === undefined) return [];
    if (!Array.isArray(tickets)) throw new OptionError(`"release" must be an array of tickets, got ${describeValue(tickets)}`);
    const seen = new Set<number>();
    tickets.forEach((t, i) => {
      if (typeof t !== 'number' || !this.tickets.has(t)) throw new OptionError(`release[${i}]: no running rollout has ticket ${describeValue(t)}`);
      if (seen.has(t)) throw new OptionError(`release[${i}]: ticket ${t} is listed twice`);
      seen.add(t);
    });
    return tickets as number[];
  }

  /** Ends the listed rollouts' slots (checked by `checkRelease`). */
  release(tickets: readonly number[]): void {
    for (const t of tickets) {
      const at = this.tickets.get(t);
      if (at === undefined) continue;
      this.tickets.delete(t);
      const nodes = this.running.get(at.tree);
      if (nodes === undefined) continue;
      const n = (nodes.get(at.node) ?? 0) - 1;
      if (n > 0) nodes.set(at.node, n); else nodes.delete(at.node);
      if (nodes.size === 0) this.running.delete(at.tree);
      this.best.delete(at.tree);
    }
  }

  /** The trees' plans changed (or the trees left): their best nodes are looked at again. */
  replanned(treeIds: readonly string[]): void {
    for (const id of treeIds) this.best.delete(id);
  }

  /** Trees that left the forest: their running rollouts and tickets go with them. */
  forget(treeIds: readonly string[]): void {
    const gone = new Set(treeIds);
    for (const id of gone) { this.running.delete(id); this.best.delete(id); }
    for (const [t, at] of this.tickets) if (gone.has(at.tree)) this.tickets.delete(t);
  }

  /**
   * `count` new rollouts, one at a time, each at the node of largest deficit b_v − f_v over
   * every tree's planned nodes (ties: larger x_v − f_v, then the earlier tree, then the smaller
   * node), counting each as running at once. Reads the plan the store holds (the caller has
   * just planned). Fewer placements come back only when no node of any tree has branches.
   */
  place(count: number): Placement[] {
    if (!Number.isInteger(count) || count < 0 || count > MAX_WHOLE) throw new OptionError(`"count" must be an integer in [0, ${MAX_WHOLE}], got ${describeValue(count)}`);
    const s = this.store;
    const order = s.treeOrder;
    const bests: TreeBest[] = new Array(order.length);
    for (let t = 0; t < order.length; t++) bests[t] = this.bestOf(order[t]);
    const out: Placement[] = [];
    for (let k = 0; k < count; k++) {
      let pick = -1;
      for (let t = 0; t < order.length; t++) {
        const b = bests[t];
        if (b.node < 0) continue;
        if (pick < 0 || b.deficit > bests[pick].deficit || (b.deficit === bests[pick].deficit && b.massDeficit > bests[pick].massDeficit)) pick = t;
      }
      if (pick < 0) break;
      const slot = order[pick], id = s.slotId[slot], node = bests[pick].node;
      const ticket = this.nextTicket++;
      this.tickets.set(ticket, { tree: id, node });
      let nodes = this.running.get(id);
      if (nodes === undefined) { nodes = new Map(); this.running.set(id, nodes); }
      nodes.set(node, (nodes.get(node) ?? 0) + 1);
      out.push({ tree: id, node, depth: s.depth[s.slotStart[slot] + node], ticket });
      this.best.delete(id);
      bests[pick] = this.bestOf(slot);
    }
    return out;
  }

  /** The best node of the tree in `slot` under its current plan and running set (cached). */
  private bestOf(slot: number): TreeBest {
    const s = this.store;
    const id = s.slotId[slot];
    const cached = this.best.get(id);
    if (cached !== undefined) return cached;
    const lo = s.slotStart[slot], n = s.slotSize[slot];
    const nodes = this.running.get(id);
    let best = NONE;
    for (let v = 0; v < n; v++) {
      const b = s.branches[lo + v];
      if (b <= 0) continue;
      const f = nodes?.get(v) ?? 0;
      const deficit = b - f, massDeficit = s.mass[lo + v] - f;
      if (best.node < 0 || deficit > best.deficit || (deficit === best.deficit && massDeficit > best.massDeficit)) {
        best = { node: v, deficit, massDeficit };
      }
    }
    this.best.set(id, best);
    return best;
  }
}

/** A `place` request's round size: the number of rollouts the driver keeps running. */
export function checkConcurrency(totalBudget: unknown): number {
  if (!isBudget(totalBudget)) throw new OptionError(`"totalBudget" (the rollouts kept running, the round plan's size) must be an integer in [0, ${MAX_WHOLE}], got ${describeValue(totalBudget)}`);
  return totalBudget;
}
