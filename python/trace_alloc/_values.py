"""A tree's node fields as the service holds them now (the `values` operation)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np


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
        return cls(
            id=str(tree["id"]),
            parent=np.asarray(tree["parent"], dtype=np.int64),
            reward=np.asarray(tree["reward"], dtype=np.float64),
            visits=np.asarray(tree["visits"], dtype=np.int64),
            uncertainty=np.asarray(tree["uncertainty"], dtype=np.float64),
            terminal=np.asarray(tree["terminal"], dtype=bool),
        )
