/**
 * A whole batch of rollout trees as flat typed arrays (the layout the CPU reference,
 * the WGSL kernels and the allocator all read). A node is addressed by its global
 * row; `row - treeOffset[tree]` is its index inside its tree.
 *
 * Sibling groups are CSR: group `g` has parent row `groupParent[g]` and children rows
 * `groupChild[groupOffset[g] .. groupOffset[g+1])`, in increasing node order. Groups are
 * ordered by tree, then by parent row, so the groups of tree `t` are
 * `treeGroupOffset[t] .. treeGroupOffset[t+1]` and their children are contiguous.
 */
export interface PackedForest {
  readonly dim: number;
  readonly treeCount: number;
  readonly nodeCount: number;
  readonly groupCount: number;
  readonly treeIds: readonly string[];
  /** T+1 row offsets. */
  readonly treeOffset: Int32Array;
  /** Tree of each row. */
  readonly nodeTree: Int32Array;
  /** Global row of each row's parent; -1 for roots. */
  readonly parentRow: Int32Array;
  readonly reward: Float64Array;
  readonly visits: Float64Array;
  readonly uncertainty: Float64Array;
  /** 1 when the episode ended at the node. */
  readonly terminal: Uint8Array;
  /**
   * Row-major `nodeCount × dim`. Forests read from files keep their float64 values so the CPU
   * reference sees exactly the numbers given; generated forests may use float32. The GPU
   * converts to f32 (or f16) while uploading.
   */
  readonly embedding: Float64Array | Float32Array;
  readonly groupParent: Int32Array;
  /** G+1 offsets into `groupChild`. */
  readonly groupOffset: Int32Array;
  /** Children rows of all groups; length `nodeCount - treeCount`. */
  readonly groupChild: Int32Array;
  /** T+1 offsets into the group arrays. */
  readonly treeGroupOffset: Int32Array;
  /** The group whose parent is this row, or -1 for a leaf. */
  readonly childGroup: Int32Array;
  /** The group this row is a child of, or -1 for a root. */
  readonly parentGroup: Int32Array;
}

/** Column form of a forest, before validation and grouping. Parents are tree-local indices. */
export interface ForestColumns {
  dim: number;
  treeIds: readonly string[];
  treeOffset: Int32Array;
  parent: Int32Array;
  reward: Float64Array;
  visits: Float64Array;
  uncertainty: Float64Array;
  terminal: Uint8Array;
  embedding: Float64Array | Float32Array;
}
