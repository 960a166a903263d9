/** One agent step of a rollout tree, as a caller or a file gives it (docs/ALGORITHM.md §1). */
export interface NodeInput {
  /** Index of the parent node; -1 (or omitted) for the root, otherwise 0 <= parent < this node. */
  parent?: number;
  /** Mean verifiable reward of finished rollouts through the node. Default 0. */
  reward?: number;
  /** Finished rollouts through the node, an integer >= 0. Default 0. */
  visits?: number;
  /** State-transition uncertainty after the step, >= 0. Default 0. */
  uncertainty?: number;
  /** The episode ended here; no rollout can continue from it. Default false. */
  terminal?: boolean;
  /** Semantic vector of the state-action: exactly `dim` finite numbers (required when dim > 0). */
  embedding?: ArrayLike<number>;
}

export interface TreeInput {
  /** Defaults to the tree's position in the forest, as a string. Must be unique. An integer is read as its decimal string. */
  id?: string | number;
  nodes: NodeInput[];
}

export interface ForestInput {
  /** Embedding dimension shared by every node; inferred from the first embedding when omitted. */
  dim?: number;
  trees: TreeInput[];
}
