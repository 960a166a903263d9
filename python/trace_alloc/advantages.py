"""Tree advantages: TreeRL's per node, Tree-GRPO's per leaf (intra-tree, inter-tree, or both),
and their spread over the tokens of the trajectories a trainer trains on.

- `treerl` (Hou et al. 2025): for every non-root node with finished rollouts through it,
  A(n) = ((V(n) − V(parent)) + (V(n) − V(root))) / √N(n), V the mean outcome of the rollouts
  through the node and N their number (what the service backed up); 0 elsewhere.
- `tree-grpo-intra`, `tree-grpo-inter`, `tree-grpo` (Ji et al. 2025): per finished trajectory
  with outcome R, A = (R − μ_g)/σ_g over a group g of finished trajectories (σ the population
  standard deviation; A = 0 when σ = 0). Tree-GRPO grows several trees per prompt, each from
  one first chain; here one tree per prompt holds them all, each under one child of the root.
  So the *intra-tree* group of a trajectory is the finished trajectories under the same child
  of the root (Tree-GRPO's tree), the *inter-tree* group all finished trajectories of the
  prompt, and `tree-grpo` is their sum, as in the paper. Unfinished trajectories get 0.

Token spread (`TreeAdvantages.tokens`): a token of node n's turn carries its node's advantage
(TreeRL) or its trajectory's (Tree-GRPO), times a share weight. Trainers train on leaf
trajectories, and a node shared by c(n) of the trajectories trained on appears c(n) times; with
`share="split"` (the default) each copy carries 1/c(n) of it, so every node counts once in a
token-summed loss however many trajectories pass through it; `share="repeat"` keeps the full
value on every copy (the papers' own weighting when every leaf of the tree is trained on).
Environment tokens and the tokens of a cut turn carry 0.
"""
from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

from ._errors import TraceAllocError
from ._values import TreeValues
from .tree import Trajectory

METHODS = ("treerl", "tree-grpo", "tree-grpo-intra", "tree-grpo-inter")
SHARES = ("split", "repeat")


@dataclass(frozen=True)
class TreeAdvantages:
    method: str
    #: TreeRL: per tree, the advantage of every node (float64, (nodes,)); None for the Tree-GRPO methods.
    node: Optional[Tuple[np.ndarray, ...]]
    #: Per trajectory of the run, in the run's order (float64, (trajectories,)): Tree-GRPO's advantage of
    #: each finished trajectory (0 for unfinished ones); for TreeRL, the advantage of its last node.
    trajectory: np.ndarray

    def tokens(self, trajectories: Sequence[Trajectory], indices: Optional[Sequence[int]] = None,
               share: str = "split") -> List[np.ndarray]:
        """Per trajectory trained on, the advantage of each completion token (float64, (completion length,)).

        `trajectories`: every trajectory of the run (what `trajectory` is aligned with);
        `indices`: the ones trained on (default: all), in the order wanted; `share`: "split" or
        "repeat" (module docstring)."""
        if share not in SHARES:
            raise TraceAllocError("invalid_options", 'share must be "split" or "repeat", got %r' % (share,), field="share")
        if len(trajectories) != self.trajectory.shape[0]:
            raise TraceAllocError("invalid_value", "advantages were computed for %d trajectories, got %d"
                                  % (self.trajectory.shape[0], len(trajectories)), field="trajectories")
        chosen = list(range(len(trajectories))) if indices is None else list(indices)
        copies: Dict[Tuple[int, int], int] = defaultdict(int)
        for j in chosen:
            for v in trajectories[j].path[1:]:
                copies[(trajectories[j].tree, v)] += 1
        out = []
        for j in chosen:
            t = trajectories[j]
            values = np.zeros(len(t.completion_ids), dtype=np.float64)
            for k, (v, generated) in enumerate(zip(t.token_nodes, t.env_mask)):
                if v < 0 or not generated:
                    continue
                a = self.node[t.tree][v] if self.node is not None else self.trajectory[j]
                values[k] = a / copies[(t.tree, v)] if share == "split" else a
            out.append(values)
        return out


def treerl_node_advantages(values: TreeValues) -> np.ndarray:
    """A(n) = ((V(n) − V(parent)) + (V(n) − V(root))) / √N(n) for non-root nodes with N(n) > 0; 0 elsewhere."""
    v, n, parent = values.reward, values.visits, values.parent
    out = np.zeros(values.nodes, dtype=np.float64)
    if values.nodes == 0 or n[0] == 0:
        return out
    rows = np.flatnonzero((parent >= 0) & (n > 0))
    out[rows] = ((v[rows] - v[parent[rows]]) + (v[rows] - v[0])) / np.sqrt(n[rows].astype(np.float64))
    return out


def _standardized(rewards: List[float]) -> List[float]:
    mu = sum(rewards) / len(rewards)
    sigma = math.sqrt(sum((r - mu) ** 2 for r in rewards) / len(rewards))
    return [0.0 if sigma == 0 else (r - mu) / sigma for r in rewards]


def tree_grpo_advantages(trajectories: Sequence[Trajectory], intra: bool, inter: bool) -> np.ndarray:
    """Per trajectory: the intra-tree and/or inter-tree standardized outcome (0 when unfinished)."""
    out = np.zeros(len(trajectories), dtype=np.float64)
    for use, key in ((intra, lambda t: (t.tree, t.path[1])), (inter, lambda t: (t.tree,))):
        if not use:
            continue
        groups: Dict[tuple, List[int]] = defaultdict(list)
        for j, t in enumerate(trajectories):
            if t.finished and len(t.path) > 1:
                groups[key(t)].append(j)
        for members in groups.values():
            for j, a in zip(members, _standardized([float(trajectories[j].reward) for j in members])):  # type: ignore[arg-type]
                out[j] += a
    return out


def compute_advantages(method: str, trajectories: Sequence[Trajectory], values: Sequence[TreeValues]) -> TreeAdvantages:
    """The advantages named `method` (one of METHODS) of a run's trajectories and trees (values
    as the service backed them up, one per tree in prompt order)."""
    if method == "treerl":
        node = tuple(treerl_node_advantages(v) for v in values)
        last = np.array([node[t.tree][t.leaf] for t in trajectories], dtype=np.float64)
        return TreeAdvantages(method, node, last)
    if method in ("tree-grpo", "tree-grpo-intra", "tree-grpo-inter"):
        intra = method in ("tree-grpo", "tree-grpo-intra")
        inter = method in ("tree-grpo", "tree-grpo-inter")
        return TreeAdvantages(method, None, tree_grpo_advantages(trajectories, intra, inter))
    raise TraceAllocError("invalid_options", "advantage must be one of %s, got %r" % (", ".join(METHODS), method),
                          field="advantage")
