"""A tree's node fields as the service holds them now (the `values` operation)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

import json
import math
import numbers

import numpy as np

from ._errors import TraceAllocError


@dataclass(frozen=True)
class TreeValues:
    """One tree read back from the service, every array indexed by node (length: the tree's size).

    `reward` is the mean reward of the finished rollouts through each node (what
    `finish_rollout` backed up, or the value an `update` last set), `visits` their count.
    """
    id: str
    parent: np.ndarray  # int64, (n,): tree-local parent, -1 for the root
    reward: np.ndarray  # float64, (n,)
    visits: np.ndarray  # int64, (n,)
    uncertainty: np.ndarray  # float64, (n,)
    terminal: np.ndarray  # bool, (n,)

    @property
    def nodes(self) -> int:
        return int(self.parent.shape[0])

    @classmethod
    def from_json(cls, tree: Mapping[str, Any]) -> "TreeValues":
        """The `values` result of one tree; an entry that is not a finite number (a null, which
        numpy would make NaN without a word) raises `TraceAllocError` naming the tree, node and field."""
        tree_id = str(tree["id"])
        return cls(
            id=tree_id,
            parent=np.asarray(_column(tree, tree_id, "parent", numbers.Integral), dtype=np.int64),
            reward=np.asarray(_column(tree, tree_id, "reward", numbers.Real), dtype=np.float64),
            visits=np.asarray(_column(tree, tree_id, "visits", numbers.Real), dtype=np.int64),
            uncertainty=np.asarray(_column(tree, tree_id, "uncertainty", numbers.Real), dtype=np.float64),
            terminal=np.asarray(_column(tree, tree_id, "terminal", bool), dtype=bool),
        )


def _column(tree: Mapping[str, Any], tree_id: str, name: str, kind: type) -> list:
    """`tree[name]` as a list whose every entry is of `kind` (bool apart from the numbers), and finite."""
    column = tree.get(name)
    if not isinstance(column, list):
        raise TraceAllocError("service_error", "values: tree %s: field \"%s\" is %r, not a list" % (_json_id(tree_id), name, type(column).__name__),
                              tree=tree_id, field=name)
    for node, x in enumerate(column):
        is_bool = isinstance(x, bool)
        ok = is_bool if kind is bool else (isinstance(x, kind) and not is_bool and math.isfinite(x))
        if not ok:
            raise TraceAllocError("service_error", "values: tree %s, node %d, field \"%s\": the service sent %r, not a finite %s"
                                  % (_json_id(tree_id), node, name, x, "boolean" if kind is bool else "number"),
                                  tree=tree_id, node=node, field=name)
    return column


def _json_id(tree_id: str) -> str:
    return json.dumps(tree_id)
