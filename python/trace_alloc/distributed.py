"""One global rollout budget across ranks that each hold their own trees and their own
`trace-alloc serve --stdio` sidecar: only two numbers per tree cross the network.

    import torch.distributed as dist
    from trace_alloc.distributed import global_plan

    dist.init_process_group("gloo")              # or nccl: the gather moves a small Python object
    plan = global_plan(service, total_budget=4096)  # this rank's trees, as one process would plan them

Phase 1 asks the local sidecar for its trees' liveness and weights (`global-shares`), the
ranks all-gather those (`torch.distributed.all_gather_object` over `group`, or the caller's
`gather`), phase 2 asks the sidecar for its part of the global plan (`plan-shard`). The plans
of all ranks together are identical to one service holding every tree in rank order.

Other engines (Ray, MPI, ...): pass `gather`, a function that takes this rank's object (a
small JSON-able dict) and returns every rank's object as a list in the same order on every
rank — e.g. with Ray, an actor that collects one object per rank and returns the list once
all have arrived. `gather` is called twice per plan (the shares, then every rank's outcome).

Failures reach every rank: a rank whose sidecar fails or misses `timeout` still takes part in
the gathers, with its error, so every rank raises `TraceAllocError` naming it (each gather
waits up to twice `timeout`, so that a rank whose sidecar just missed its deadline still
arrives); a rank that
never reaches the gather makes the others' gather time out (`TraceAllocError`, code
"timeout"). A sidecar that misses its deadline is stopped (its replies could no longer be
matched to requests): start a new one, re-add the trees and retry, which gives the same plan.
After a collective timeout torch's process group may be unusable; re-create it.
"""
from __future__ import annotations

import threading
import uuid
from typing import Any, Callable, Dict, List, Optional, Sequence

from ._client import Service
from ._errors import TraceAllocError
from ._plan import Plan

__all__ = ["global_plan", "global_plan_json", "torch_gather"]

Gather = Callable[[Any], Sequence[Any]]


def _within(timeout: Optional[float], what: str, fn: Callable[[], Any], on_timeout: Optional[Callable[[], None]] = None) -> Any:
    """`fn()` in a worker thread, or `TraceAllocError("timeout")` after `timeout` seconds."""
    if timeout is None:
        return fn()
    box: Dict[str, Any] = {}

    def run() -> None:
        try:
            box["value"] = fn()
        except BaseException as err:  # handed to the caller's thread
            box["error"] = err

    worker = threading.Thread(target=run, name="trace-alloc " + what, daemon=True)
    worker.start()
    worker.join(timeout)
    if worker.is_alive():
        if on_timeout is not None:
            on_timeout()
        raise TraceAllocError("timeout", "%s did not finish within %g s" % (what, timeout))
    if "error" in box:
        raise box["error"]
    return box["value"]


def torch_gather(group: Any = None) -> Gather:
    """`torch.distributed.all_gather_object` over `group` (the default group when None)."""
    import torch.distributed as dist  # lazily: the package itself needs no torch

    def gather(obj: Any) -> List[Any]:
        out: List[Any] = [None] * dist.get_world_size(group)
        dist.all_gather_object(out, obj, group=group)
        return out

    return gather


def _gather_deadline(timeout: Optional[float]) -> Optional[float]:
    """A gather outwaits a sidecar request, so a rank whose sidecar timed out can still report it."""
    return None if timeout is None else 2 * timeout


def _ask(service: Service, timeout: Optional[float], what: str, fn: Callable[[], Any]) -> Any:
    return _within(timeout, "the trace-alloc sidecar's " + what, fn, on_timeout=service.kill)


def _failure(err: BaseException) -> Dict[str, Any]:
    code = err.code if isinstance(err, TraceAllocError) else "internal"
    return {"ok": False, "code": code, "message": str(err)}


def _raise_first(outcomes: Sequence[Any], stage: str) -> None:
    for rank, o in enumerate(outcomes):
        if not (isinstance(o, dict) and o.get("ok") is True):
            code = o.get("code", "service_error") if isinstance(o, dict) else "service_error"
            message = o.get("message", repr(o)) if isinstance(o, dict) else repr(o)
            raise TraceAllocError(code, "rank %d failed in %s: %s" % (rank, stage, message))


def global_plan_json(service: Service, total_budget: int, *, group: Any = None, gather: Optional[Gather] = None,
                     timeout: Optional[float] = 60.0, min_per_tree: Optional[int] = None,
                     tree_floor: Optional[float] = None, scores: bool = False, **options: Any) -> Dict[str, Any]:
    """`global_plan`, as the plan JSON the sidecar sent."""
    gather_fn = gather if gather is not None else torch_gather(group)
    token = uuid.uuid4().hex  # finds this rank's entry in the gathered list, whatever the engine's ranks
    try:
        mine: Dict[str, Any] = {"ok": True, "shares": _ask(service, timeout, "global-shares", lambda: service.global_shares(tree_floor))}
    except Exception as err:  # still join the gather, so that every rank learns of it
        mine = _failure(err)
    mine["token"] = token
    gathered = list(_within(_gather_deadline(timeout), "the gather of every rank's shares", lambda: gather_fn(mine)))
    _raise_first(gathered, "phase 1 (global-shares)")
    index = [o.get("token") for o in gathered].index(token)
    shares = [o["shares"] for o in gathered]
    try:
        plan = _ask(service, timeout, "plan-shard", lambda: service.plan_shard_json(
            shares, index, total_budget, min_per_tree=min_per_tree, scores=scores, treeFloor=tree_floor, **options))
        outcome: Dict[str, Any] = {"ok": True}
    except Exception as err:
        plan, outcome = None, _failure(err)
    outcomes = list(_within(_gather_deadline(timeout), "the gather of every rank's outcome", lambda: gather_fn(outcome)))
    _raise_first(outcomes, "phase 2 (plan-shard)")
    assert plan is not None
    return plan


def global_plan(service: Service, total_budget: int, *, group: Any = None, gather: Optional[Gather] = None,
                timeout: Optional[float] = 60.0, min_per_tree: Optional[int] = None,
                tree_floor: Optional[float] = None, scores: bool = False, **options: Any) -> Plan:
    """This rank's part of one global plan of `total_budget` rollouts over every rank's trees:
    identical to one service holding all trees in rank order planning with that total.
    Call it on every rank of `group` (or of the ranks `gather` spans) with the same settings.
    `timeout` (seconds, None: wait forever) bounds each sidecar request, and twice it each gather;
    `options` are the other plan settings (prune_ratio, base_depth, ...). Raises
    `TraceAllocError` on every rank when any rank fails."""
    return Plan.from_json(global_plan_json(service, total_budget, group=group, gather=gather, timeout=timeout,
                                           min_per_tree=min_per_tree, tree_floor=tree_floor, scores=scores, **options))
