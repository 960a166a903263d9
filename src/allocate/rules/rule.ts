import type { RealArray } from '../../score/types.js';

/**
 * The rows of a forest as every allocation rule reads and writes them, in any layout whose
 * parents come before their children within a tree: a packed forest seen row by row
 * (`packedRows` in ../trees.ts) or a live forest's store (src/live/store.ts, which has these
 * columns itself). Every array is indexed by row; a tree is a range of rows [lo, hi), lo its root.
 */
export interface ForestRows {
  /** Row of each row's parent; −1 for a root. */
  readonly parentRow: Int32Array;
  /** Children of row v: `child[childStart[v] .. childStart[v] + childCount[v])`, in node order. */
  readonly childStart: Int32Array;
  readonly childCount: Int32Array;
  readonly child: Int32Array;
  readonly terminal: Uint8Array;
  readonly visits: Float64Array;
  readonly reward: Float64Array;
  /** w of each row (1 for a root). */
  readonly weight: RealArray;
  /** I of the group each row heads (read only for rows with two or more children). */
  readonly intensity: RealArray;

  /** live(v) (../liveness.ts), set before a rule's early stop runs. */
  readonly live: Uint8Array;
  /** The early stop's output: 1 for a child in its group's kept set E, 1 for a live child pruned. */
  readonly kept: Uint8Array;
  readonly pruned: Uint8Array;
  /** Per head row: Σ_{j∈E} w_j and |E| (0 for a group with no kept child). */
  readonly keptWeight: Float64Array;
  readonly keptCount: Int32Array;
  /** ψ_v (../priority.ts), set before a rule's mass runs. */
  readonly priority: Float64Array;
  /**
   * Per-row flow state a rule may keep from one plan to the next of the same forest (v1: the
   * mass flowing into each row, which its partial re-flow starts from).
   */
  readonly inflow: Float64Array;
  /** x_v, the rule's output. */
  readonly mass: Float64Array;
}

/** The settings a rule may read besides those every rule reads (budgets, ρ, the depths, q0). */
export interface RuleSettings {
  /** v1's λ ∈ [0, 1]. */
  readonly widen: number;
  /** κ ≥ 0: how strongly a contested fork draws budget. */
  readonly contestGain: number;
  /** v3's η ∈ [0, 1]. */
  readonly forkKeep: number;
}

export type RuleSetting = keyof RuleSettings;

/**
 * One allocation rule of docs/ALGORITHM.md ("Allocation") as the per-tree steps that differ
 * between rules. Liveness, ψ, rounding, depths and the global split's arithmetic are shared
 * (src/allocate); a rule supplies the rest, on `ForestRows`, so the same code plans a packed
 * forest (`allocate`, `allocateOnThreads`, shards) and a live one (`LivePlanner`). Each step is
 * called once per tree (or per re-scored group), never per row: its inner loops are its own.
 */
export interface AllocationRule {
  readonly name: string;
  /** The settings of `RuleSettings` this rule reads, each with its default. */
  readonly defaults: Readonly<Partial<RuleSettings>>;
  /** q0 of the global split Q_t = q0 + S_t: its default, and whether a caller may change it. */
  readonly treeFloor: { readonly default: number; readonly fixed: boolean };

  /**
   * The early stop: the kept/pruned split (`kept`, `pruned`, `keptWeight`, `keptCount`) of
   * every group headed by a row in [from, to) (rows without children are skipped), writing
   * every child's marks. Liveness must be settled for the children.
   */
  earlyStop(rows: ForestRows, from: number, to: number, pruneRatio: number): void;

  /** S_t of the global split for the tree at rows [lo, hi), from its shape and intensities alone. */
  treeSignal(rows: ForestRows, lo: number, hi: number): number;

  /**
   * x_v for every row of the tree at rows [lo, hi), given liveness, the early stop and ψ.
   * Returns false when the tree cannot place its budget (its root is not live, or nothing in
   * it can take a rollout), leaving its mass at 0.
   */
  mass(rows: ForestRows, lo: number, hi: number, budget: number, settings: RuleSettings): boolean;

  /**
   * Optional: the mass of the subtree of head row p alone, after p's group was split anew, in
   * a tree whose budget, liveness and settings are as at its last `mass` (the live planner's
   * shortcut when only a few groups were re-scored). Only a rule whose mass below p depends on
   * nothing outside p's subtree and p's own state can offer it; the others re-plan the tree.
   */
  reflowSubtree?(rows: ForestRows, p: number, settings: RuleSettings): void;
}
