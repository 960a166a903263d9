"""Tree advantages — TreeRL's and Tree-GRPO's as published, TreeRL's on branch means (the
default), and the package's earlier forms — and their spread over the tokens of the trajectories
a trainer trains on.

The published credits
---------------------

Both papers make every finished leaf of the tree one training sample (its path from the prompt
to the leaf, prefix and all), so a turn shared by L leaves is trained on L times.

- `treerl-leaf` — TreeRL (Hou et al. 2025, arXiv 2506.11902, the process supervision of its
  method section; THUDM/TreeRL). For a node n with L(n) finished leaves below it (n's own
  rollout included; here L(n) is the node's `visits`, the finished rollouts through it):

      V(n)  = mean outcome of the L(n) leaves        (the root: of every leaf of the prompt)
      GA(n) = V(n) − V(root)                          global advantage
      LA(n) = V(n) − V(parent segment of n)           local advantage
      A(n)  = (GA(n) + LA(n)) / √L(n)

  and every token of n's turn, in every leaf trajectory through n, carries A(n). Summed over the
  L(n) copies a shared node weighs √L(n)·(GA + LA): forking below a node *raises* its weight.
  TreeRL's tree nodes are the token segments between forking points (its search forks a chain
  at high-entropy tokens); ours are whole turns, and an unforked run of turns is one TreeRL
  segment. So n's parent segment is its nearest proper ancestor with more leaves than n (the
  node where the path last forked into branches that both finished), the root when there is
  none; inside a run every turn has the run's V, L, GA and LA. (A turn-by-turn LA would give 0
  to every turn after a run's first, since they share V.)
- `tree-grpo-leaf` — Tree-GRPO (Ji et al. 2025, arXiv 2509.21240, its tree-based advantage
  estimation; the reference code's "tree" estimator). Per finished trajectory i with outcome R_i:

      A_intra(i) = (R_i − mean_T R) / (std_T R + 1e-6)   over the finished trajectories of i's tree T
      A_inter(i) = (R_i − mean_P R) / (std_P R + 1e-6)   over every finished trajectory of the prompt P
      A(i)       = A_intra(i) + A_inter(i)

  std is the sample standard deviation (n − 1), as the reference code's GRPO estimator takes it;
  every token of trajectory i carries A(i). Tree-GRPO grows M trees per prompt, each from one
  first chain that later rollouts fork from; here one tree per prompt holds them all: a rollout
  started at the prompt is a fresh chain, i.e. a new Tree-GRPO tree, and a rollout forked
  mid-episode joins the tree of its first turn. So i's tree T is the set of finished
  trajectories under i's first-turn node (the root's child on its path). A group of one finished
  trajectory (a chain nothing was forked from) gets 0 from that group: the paper's formula is
  undefined there (σ = 0), and the reference code's GRPO estimator would return the raw reward R
  for it, which is no group-relative advantage at all (its trees never have a single leaf).

The default (`DEFAULT_METHOD`): TreeRL's credit on branch means (not published)
------------------------------------------------------------------------------

- `treerl-branch` — TreeRL's per-leaf credit above with every V a *branch mean* instead of the
  mean of the node's leaves: a terminal node's outcome; an inner node's, the unweighted mean of
  its children's branch means, over the children with a finished leaf below them. L(n), the √L
  weight and the parent segments stay TreeRL's. Why: each child of a node is one draw of the
  node's next turn (a rollout writes new nodes from where it starts), so the branch mean
  estimates the node's value under the policy however the allocator spread its rollouts. The
  leaf mean weighs a branch by the rollouts later started inside it: TRACE sends forks to
  contested branches and, within them, toward the ones that succeeded, which pulls V(root) and
  every ancestor's V toward those branches and so lowers every GA in the tree. TreeRL's own
  search forks where the policy's entropy is high, not where outcomes were seen, so its leaf
  means are not pulled toward the branches that succeeded. On independent chains (every
  first turn heads one leaf) the two are the same number.

Leaves are *finished* rollouts. A rollout the budget cut has no verifiable outcome: it is no
leaf, counts in no V, L or group, and its tokens carry 0 (TreeRL scores a truncated response 0;
ours were cut by our budget, not by the policy, so scoring them would punish the allocator's
timing).

Token spread (`TreeAdvantages.tokens`, `share`): `share="repeat"` (`DEFAULT_SHARE`) puts the
full value on every copy of a shared node — the papers' weighting, since every leaf is a sample
— and `share="split"` gives each of the c(n) copies among the trajectories trained on 1/c(n) of
it, so every node counts once in a token-summed loss. Environment tokens and the tokens of a
cut turn carry 0. The trainer's loss then averages over its samples as it always does.

The earlier forms (kept, exactly, so that runs made with them reproduce)
------------------------------------------------------------------------

- `treerl`: A(n) = ((V(n) − V(parent)) + (V(n) − V(root))) / √N(n) with the turn's own parent,
  N the visits; 0 elsewhere. Until this version the default, with `share="split"`: each node
  counted once, so a node shared by N leaves weighed A/√N, not √N·A.
- `tree-grpo-intra`, `tree-grpo-inter`, `tree-grpo`: the intra-tree, the inter-tree and the sum
  of both, as above but with the population standard deviation, no 1e-6, and A = 0 where σ = 0.

To reproduce a run made before the published credits became the default, pass
`advantage="treerl"` and `share="split"`; one made while TreeRL's published credit was the
default, `advantage="treerl-leaf"`.

Why these defaults, measured on the repository's language-model example (examples/llm, its
README, "TreeRL's credit with branch means"; final success, paired seeds, 95% intervals):
- the per-leaf spread: in a 12-seed pilot on tuning seeds (examples/llm/results/credit/) no
  credit trained separably better than TreeRL's published one (the earlier `treerl` 1.8 points
  below it, GRPO's per-rollout credit 0.3 above, both inside ±4–5 points);
- the branch means: with the library's default rule allocating, over 120 reported seeds they
  trained separably better than TreeRL's leaf means on the calculator task (+1.5 [+0.2, +2.7]
  points) and level on the cheap-fork recipe task (+0.4 [−0.8, +1.5]); on tuning seeds
  +0.6 [−0.9, +2.0] (72 seeds) and −1.3 [−3.4, +0.9] (31), so the decision rests on reported
  seeds that had been seen on the published credit first. The published credit is one argument
  away: `advantage="treerl-leaf"`.
"""
from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

from ._errors import TraceAllocError
from ._values import TreeValues
from .tree import Trajectory

METHODS = ("treerl-leaf", "tree-grpo-leaf", "treerl-branch", "treerl", "tree-grpo", "tree-grpo-intra", "tree-grpo-inter")
SHARES = ("repeat", "split")
#: The credit `TreeRollout` and `trace_alloc.trl` use unless told otherwise: TreeRL's per-leaf credit
#: on branch means (module docstring, "The default").
DEFAULT_METHOD = "treerl-branch"
#: The token spread `TreeAdvantages.tokens` uses unless told otherwise: every leaf a sample.
DEFAULT_SHARE = "repeat"
#: Added to a group's standard deviation by Tree-GRPO's reference code (its GRPO estimator).
TREE_GRPO_EPSILON = 1e-6


@dataclass(frozen=True)
class TreeAdvantages:
    method: str
    #: TreeRL: per tree, the advantage of every node (float64, (nodes,)); None for the Tree-GRPO methods.
    node: Optional[Tuple[np.ndarray, ...]]
    #: Per trajectory of the run, in the run's order (float64, (trajectories,)): Tree-GRPO's advantage of
    #: each finished trajectory (0 for unfinished ones); for TreeRL, the advantage of its last node.
    trajectory: np.ndarray

    def tokens(self, trajectories: Sequence[Trajectory], indices: Optional[Sequence[int]] = None,
               share: str = DEFAULT_SHARE) -> List[np.ndarray]:
        """Per trajectory trained on, the advantage of each completion token (float64, (completion length,)).

        `trajectories`: every trajectory of the run (what `trajectory` is aligned with);
        `indices`: the ones trained on (default: all), in the order wanted; `share`: "repeat" or
        "split" (module docstring)."""
        if share not in SHARES:
            raise TraceAllocError("invalid_options", 'share must be "repeat" or "split", got %r' % (share,), field="share")
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
    """The earlier form: A(n) = ((V(n) − V(parent)) + (V(n) − V(root))) / √N(n) for non-root
    nodes with N(n) > 0; 0 elsewhere."""
    v, n, parent = values.reward, values.visits, values.parent
    out = np.zeros(values.nodes, dtype=np.float64)
    if values.nodes == 0 or n[0] == 0:
        return out
    rows = np.flatnonzero((parent >= 0) & (n > 0))
    out[rows] = ((v[rows] - v[parent[rows]]) + (v[rows] - v[0])) / np.sqrt(n[rows].astype(np.float64))
    return out


def segment_parents(parent: np.ndarray, leaves: np.ndarray) -> np.ndarray:
    """Per node, its TreeRL parent segment: the nearest proper ancestor with more leaves than the
    node, or the root (node 0) when none has; -1 for the root itself."""
    out = np.full(parent.shape[0], -1, dtype=np.int64)
    for v in range(1, parent.shape[0]):
        p = int(parent[v])
        while p > 0 and leaves[p] <= leaves[v]:
            p = int(parent[p])
        out[v] = max(p, 0)
    return out


def treerl_leaf_advantages(values: TreeValues, v: Optional[np.ndarray] = None) -> np.ndarray:
    """TreeRL as published: A(n) = (GA(n) + LA(n)) / √L(n), LA against n's parent segment, for
    non-root nodes with L(n) > 0 finished leaves; 0 elsewhere (module docstring). `v`: the node
    values V to use (float64, (nodes,)); default the mean outcome of each node's leaves,
    `values.reward`."""
    v = values.reward if v is None else v
    leaves = values.visits
    out = np.zeros(values.nodes, dtype=np.float64)
    if values.nodes == 0 or leaves[0] == 0:
        return out
    segment = segment_parents(values.parent, leaves)
    rows = np.flatnonzero((values.parent >= 0) & (leaves > 0))
    out[rows] = ((v[rows] - v[0]) + (v[rows] - v[segment[rows]])) / np.sqrt(leaves[rows].astype(np.float64))
    return out


def branch_values(values: TreeValues) -> np.ndarray:
    """Per node, the mean over its branches (float64, (nodes,)): a terminal node's outcome, an
    inner node's the unweighted mean of its children's branch values over the children with a
    finished rollout below them, NaN where no finished rollout is below the node. Each child of a
    node is one draw of the node's next turn (a rollout writes new nodes from where it starts), so
    this estimates the node's value under the policy however unevenly its branches were forked."""
    total = np.zeros(values.nodes, dtype=np.float64)
    count = np.zeros(values.nodes, dtype=np.int64)
    out = np.full(values.nodes, np.nan)
    for n in range(values.nodes - 1, -1, -1):  # parents come first, so every child is done before its parent
        if values.terminal[n] and values.visits[n] > 0:
            out[n] = values.reward[n]
        elif count[n] > 0:
            out[n] = total[n] / count[n]
        p = int(values.parent[n])
        if p >= 0 and not np.isnan(out[n]):
            total[p] += out[n]
            count[p] += 1
    return out


def treerl_branch_advantages(values: TreeValues) -> np.ndarray:
    """TreeRL's per-leaf credit with every V the branch mean (`branch_values`) instead of the mean
    of the node's leaves (module docstring, `treerl-branch`)."""
    return treerl_leaf_advantages(values, np.nan_to_num(branch_values(values)))


def _standardized(rewards: List[float]) -> List[float]:
    mu = sum(rewards) / len(rewards)
    sigma = math.sqrt(sum((r - mu) ** 2 for r in rewards) / len(rewards))
    return [0.0 if sigma == 0 else (r - mu) / sigma for r in rewards]


def sample_standardized(rewards: List[float]) -> List[float]:
    """Tree-GRPO's (its GRPO estimator's) normalisation: sample std plus 1e-6; 0 for a group of one."""
    if len(rewards) < 2:
        return [0.0] * len(rewards)
    mu = sum(rewards) / len(rewards)
    sigma = math.sqrt(sum((r - mu) ** 2 for r in rewards) / (len(rewards) - 1))
    return [(r - mu) / (sigma + TREE_GRPO_EPSILON) for r in rewards]


def tree_grpo_advantages(trajectories: Sequence[Trajectory], intra: bool, inter: bool,
                         standardize: Callable[[List[float]], List[float]] = _standardized) -> np.ndarray:
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
            for j, a in zip(members, standardize([float(trajectories[j].reward) for j in members])):  # type: ignore[arg-type]
                out[j] += a
    return out


def compute_advantages(method: str, trajectories: Sequence[Trajectory], values: Sequence[TreeValues]) -> TreeAdvantages:
    """The advantages named `method` (one of METHODS) of a run's trajectories and trees (values
    as the service backed them up, one per tree in prompt order)."""
    if method in ("treerl", "treerl-leaf", "treerl-branch"):
        per_node = {"treerl-leaf": treerl_leaf_advantages, "treerl-branch": treerl_branch_advantages,
                    "treerl": treerl_node_advantages}[method]
        node = tuple(per_node(v) for v in values)
        last = np.array([node[t.tree][t.leaf] for t in trajectories], dtype=np.float64)
        return TreeAdvantages(method, node, last)
    if method == "tree-grpo-leaf":
        return TreeAdvantages(method, None, tree_grpo_advantages(trajectories, True, True, sample_standardized))
    if method in ("tree-grpo", "tree-grpo-intra", "tree-grpo-inter"):
        intra = method in ("tree-grpo", "tree-grpo-intra")
        inter = method in ("tree-grpo", "tree-grpo-inter")
        return TreeAdvantages(method, None, tree_grpo_advantages(trajectories, intra, inter))
    raise TraceAllocError("invalid_options", "advantage must be one of %s, got %r" % (", ".join(METHODS), method),
                          field="advantage")
