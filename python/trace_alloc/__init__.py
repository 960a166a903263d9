"""trace-alloc for Python trainers: a client of `trace-alloc serve --stdio` that sends rollout
trees as numpy arrays (or torch tensors) and returns plans as dataclasses, and the loop around
it: `TreeRollout` grows one tree per prompt with the service's plans and returns trajectories
and tree advantages (python/README.md, "The whole loop"); `trace_alloc.trl` plugs it into TRL.

    import trace_alloc
    with trace_alloc.Service(backend="auto") as ta:
        ta.add_forest(tree_offset, parent, reward, visits, uncertainty, terminal, embedding)
        plan = ta.plan(total_budget=4096)
        for tree in plan.trees:
            for a in tree.allocations:
                ...  # start a.branches rollouts from node a.node, each to the episode's end
"""
from ._client import DEFAULT_TIMEOUT, Service, find_command
from ._columns import ForestArrays, check_forest, save_npz
from ._errors import TraceAllocError
from ._plan import Allocation, GroupScore, NodeScore, Params, Placement, Plan, TreePlan
from ._values import TreeValues
from .advantages import TreeAdvantages
from .driver import RolloutResult, TreeRollout
from .episode import Budget, EnvStep, Prompt, Request, Turn
from .tree import RolloutTree, Trajectory, TreeNode

__all__ = [
    "DEFAULT_TIMEOUT", "Allocation", "Budget", "EnvStep", "ForestArrays", "GroupScore", "NodeScore", "Params", "Placement", "Plan", "Prompt",
    "Request", "RolloutResult", "RolloutTree", "Service", "TraceAllocError", "Trajectory", "TreeAdvantages", "TreeNode",
    "TreePlan", "TreeRollout", "TreeValues", "Turn", "check_forest", "find_command", "save_npz",
]
__version__ = "0.1.0"
