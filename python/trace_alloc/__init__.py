"""trace-alloc for Python trainers: a client of `trace-alloc serve --stdio` that sends rollout
trees as numpy arrays (or torch tensors) and returns plans as dataclasses.

    import trace_alloc
    with trace_alloc.Service(backend="auto") as ta:
        ta.add_forest(tree_offset, parent, reward, visits, uncertainty, terminal, embedding)
        plan = ta.plan(total_budget=4096)
        for tree in plan.trees:
            for a in tree.allocations:
                ...  # start a.branches rollouts from node a.node, at most a.depth steps deep
"""
from ._client import DEFAULT_TIMEOUT, Service, find_command
from ._columns import ForestArrays, check_forest, save_npz
from ._errors import TraceAllocError
from ._plan import Allocation, GroupScore, NodeScore, Params, Plan, TreePlan

__all__ = [
    "DEFAULT_TIMEOUT", "Allocation", "ForestArrays", "GroupScore", "NodeScore", "Params", "Plan", "Service", "TraceAllocError",
    "TreePlan", "check_forest", "find_command", "save_npz",
]
__version__ = "0.1.0"
