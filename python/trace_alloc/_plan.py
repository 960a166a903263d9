from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, Mapping, Optional, Tuple


@dataclass(frozen=True)
class Allocation:
    """`branches` new rollouts start from `node`. Under the default rule each runs to the end of
    its episode and `depth` is the fork horizon: the steps below `node` within which the new
    branch is worth forking again (a trainer may use it to skip fork candidates, or ignore it);
    under rule v1 `depth` is the number of steps each new rollout takes (docs/ALGORITHM.md, "Depth")."""
    node: int
    branches: int
    depth: int


@dataclass(frozen=True)
class Placement:
    """One rollout to start now (continuous placement, `Service.place`): from node `node` of tree
    `tree`, with the plan's `depth` there; give `ticket` back (`release`) when the rollout ends."""
    tree: str
    node: int
    depth: int
    ticket: int

    @property
    def affinity(self) -> str:
        """`"<tree>/<node>"`: rollouts with one key share their whole prefix (route them to one engine)."""
        return "%s/%d" % (self.tree, self.node)


@dataclass(frozen=True)
class NodeScore:
    node: int
    contrast: float
    weight: float
    grad_alpha: float
    grad_tau: float


@dataclass(frozen=True)
class GroupScore:
    parent: int
    intensity: float


@dataclass(frozen=True)
class TreePlan:
    id: str
    budget: int
    unallocated: int
    allocations: Tuple[Allocation, ...]
    pruned: Tuple[int, ...]
    scores: Optional[Tuple[NodeScore, ...]] = None
    groups: Optional[Tuple[GroupScore, ...]] = None

    @property
    def branches(self) -> int:
        """New rollouts placed in this tree."""
        return sum(a.branches for a in self.allocations)


@dataclass(frozen=True)
class Params:
    alpha: float
    tau: float
    #: "v5" (the default rule), "v4", "v3", "v2" or "v1"; None from a service too old to say.
    rule: Optional[str] = None


@dataclass(frozen=True)
class Plan:
    """The allocation plan (the JSON plan of docs/ALGORITHM.md as dataclasses). `raw` is the
    response as received, including any field this client does not know yet."""
    params: Params
    trees: Tuple[TreePlan, ...]
    replanned: Tuple[str, ...] = ()
    total_budget: Optional[int] = None
    unallocated: Optional[int] = None
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    def tree(self, tree_id: str) -> TreePlan:
        for t in self.trees:
            if t.id == tree_id:
                return t
        raise KeyError(tree_id)

    @classmethod
    def from_json(cls, plan: Mapping[str, Any]) -> "Plan":
        return cls(
            params=Params(float(plan["params"]["alpha"]), float(plan["params"]["tau"]), plan["params"].get("rule")),
            trees=tuple(_tree(t) for t in plan["trees"]),
            replanned=tuple(plan.get("replanned", ())),
            total_budget=plan.get("totalBudget"),
            unallocated=plan.get("unallocated"),
            raw=dict(plan),
        )


def _tree(t: Mapping[str, Any]) -> TreePlan:
    scores = t.get("scores")
    groups = t.get("groups")
    return TreePlan(
        id=t["id"],
        budget=t["budget"],
        unallocated=t["unallocated"],
        allocations=tuple(Allocation(a["node"], a["branches"], a["depth"]) for a in t["allocations"]),
        pruned=tuple(t["pruned"]),
        scores=None if scores is None else tuple(
            NodeScore(s["node"], s["contrast"], s["weight"], s["gradAlpha"], s["gradTau"]) for s in scores),
        groups=None if groups is None else tuple(GroupScore(g["parent"], g["intensity"]) for g in groups),
    )
