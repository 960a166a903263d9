"""The sidecar as a Ray actor, one per trainer process or node, and one global rollout budget
over all of them: exactly the plan one service holding every tree would make.

    import ray
    from trace_alloc import ray as ta_ray

    ray.init()
    sidecars = ta_ray.start_sidecars(4)                      # 4 actors, each with its own `serve --stdio`
    ta_ray.call(sidecars[0], "add_forest", tree_offset, parent, reward, visits, uncertainty, terminal,
                embedding, tree_id=ids)                      # any Service method, on the actor's sidecar
    plans = ta_ray.global_plan(sidecars, total_budget=4096)  # one Plan per actor, for its own trees

`global_plan` runs the two phases of docs/PROTOCOL.md, "Many shards", from the caller (a Ray
driver or any actor): phase 1 asks every actor for its trees' shares (`global-shares`, two
numbers per tree), phase 2 hands every actor the list of all shares and its index
(`plan-shard`), and each plans its own trees with the budgets the common split gives them. The
plans together are byte-identical to one service holding every tree in actor order (and to
`trace_alloc.distributed.global_plan` over ranks in the same order): only the shares cross the
network, never an embedding.

Where an actor runs is Ray's to decide: `start_sidecars(..., **actor_options)` passes options to
`ActorClass.options` (e.g. `scheduling_strategy=NodeAffinitySchedulingStrategy(node_id, soft=False)`
for one sidecar per node, beside the trainer process that fills it, or `num_cpus`). An actor's
sidecar is started in the actor's process, so the command it finds (`find_command()`,
`TRACE_ALLOC_BIN`) is the actor machine's.

**Failures are errors, never hangs.** An actor that dies (killed, its node lost) before or during
either phase makes `global_plan` raise `TraceAllocError` (code `service_error`) naming the shard
and the actor; an actor that does not answer within `timeout` raises code `timeout` naming it; an
error of an actor's sidecar (a refused request, a sidecar that exited) comes back as the
`TraceAllocError` it raised there, with the shard named. A failed call plans nothing: start a new
actor for a dead one, add its trees again and call again, which gives the same plan. An actor
that timed out may still be working: kill it (`ray.kill`) before replacing it.

Ray is imported when these functions run; the rest of the package needs no Ray.
"""
from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from typing import Any, Dict, List, Optional, Sequence

from ._client import Service
from ._errors import TraceAllocError
from ._plan import Plan

__all__ = ["ShardService", "call", "global_plan", "global_plan_json", "init_local", "start_sidecar", "start_sidecars"]


class ShardService:
    """What runs inside a sidecar actor: one `Service` and its methods, every answer a plain dict
    (`{"ok": True, "result": ...}` or the error's fields), so that errors cross the process
    boundary whole. Made into an actor by `start_sidecar`; `command`, `backend` and the other
    keywords are `Service`'s."""

    def __init__(self, command: Any = None, **service_options: Any) -> None:
        self.service = Service(command, **service_options)

    def call(self, method: str, *args: Any, **kwargs: Any) -> Dict[str, Any]:
        """`getattr(service, method)(*args, **kwargs)`, or its `TraceAllocError` as fields."""
        if method.startswith("_") or not callable(getattr(self.service, method, None)):
            return _error(TraceAllocError("invalid_request", "Service has no method %r" % (method,), field="method"))
        try:
            return {"ok": True, "result": getattr(self.service, method)(*args, **kwargs)}
        except TraceAllocError as err:
            return _error(err)

    def close(self) -> None:
        self.service.close()


def init_local(num_cpus: int = 4, **init_options: Any) -> Any:
    """A private Ray cluster on this machine for one job, a test or an example: no dashboard, an
    80 MiB object store, its own temp folder (removed when the process exits), the loopback
    address (nothing looked up on a network), no usage reporting, and workers that import this
    `trace_alloc` (its folder joins their PYTHONPATH). `init_options` go to `ray.init` as they
    are. Returns `ray.init`'s result."""
    import ray

    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    temp = tempfile.mkdtemp(prefix="ray-")
    atexit.register(shutil.rmtree, temp, True)  # registered before ray.init: runs after Ray's own exit hook
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    path = os.pathsep.join(p for p in (here, os.environ.get("PYTHONPATH", "")) if p)
    options: Dict[str, Any] = dict(num_cpus=num_cpus, include_dashboard=False, object_store_memory=80 * 1024 * 1024,
                                   log_to_driver=False, _node_ip_address="127.0.0.1",
                                   _temp_dir=temp,
                                   runtime_env={"env_vars": {"PYTHONPATH": path, "RAY_USAGE_STATS_ENABLED": "0"}})
    options.update(init_options)
    return ray.init(**options)


def _error(err: TraceAllocError) -> Dict[str, Any]:
    return {"ok": False, "code": err.code, "message": err.message, "tree": err.tree, "node": err.node, "field": err.field}


def start_sidecar(command: Any = None, *, actor_class: type = ShardService, service_options: Optional[Dict[str, Any]] = None,
                  **actor_options: Any) -> Any:
    """One sidecar actor (a Ray actor handle): `actor_class` (ShardService or a subclass) made
    remote with `actor_options` (Ray's `.options`: `num_cpus` (default 1), `scheduling_strategy`,
    `resources`, ...), its `Service(command, **service_options)` started in the actor."""
    import ray

    actor_options.setdefault("num_cpus", 1)
    return ray.remote(actor_class).options(**actor_options).remote(command, **(service_options or {}))


def start_sidecars(count: int, command: Any = None, **options: Any) -> List[Any]:
    """`count` sidecar actors (`start_sidecar`'s options for each), in shard order."""
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        raise TraceAllocError("invalid_options", "count must be an integer >= 1, got %r" % (count,), field="count")
    return [start_sidecar(command, **options) for _ in range(count)]


def call(actor: Any, method: str, *args: Any, timeout: Optional[float] = 60.0, **kwargs: Any) -> Any:
    """`Service.<method>(*args, **kwargs)` on one actor's sidecar, its result or its error
    (`TraceAllocError`); a dead or silent actor raises as `global_plan` does."""
    return _gather([actor], lambda _, a: a.call.remote(method, *args, **kwargs), timeout, method)[0]


def _describe(actors: Sequence[Any], i: int) -> str:
    name = getattr(getattr(actors[i], "_actor_id", None), "hex", None)
    return "shard %d (actor %s)" % (i, name() if callable(name) else "?")


def _gather(actors: Sequence[Any], send: Any, timeout: Optional[float], what: str) -> List[Any]:
    """`send(index, actor)` to every actor at once; every result, in order, or an error naming the
    first actor that died, timed out or failed."""
    import ray
    from ray.exceptions import GetTimeoutError, RayActorError, RayTaskError

    refs = [send(i, a) for i, a in enumerate(actors)]
    ready, _ = ray.wait(refs, num_returns=len(refs), timeout=timeout)
    done = set(ready)
    results: List[Any] = []
    for i, ref in enumerate(refs):
        where = _describe(actors, i)
        if ref not in done:
            raise TraceAllocError("timeout", "%s did not answer %s within %g s" % (where, what, timeout))
        try:
            answer = ray.get(ref, timeout=0)
        except RayActorError as err:
            raise TraceAllocError("service_error", "%s died during %s: %s" % (where, what, str(err).splitlines()[0])) from None
        except RayTaskError as err:
            raise TraceAllocError("internal", "%s failed in %s: %s" % (where, what, str(err).splitlines()[0])) from None
        except GetTimeoutError:  # pragma: no cover - ray.wait said it was ready
            raise TraceAllocError("timeout", "%s did not answer %s within %g s" % (where, what, timeout)) from None
        if not answer.get("ok"):
            raise TraceAllocError(answer["code"], "%s, %s: %s" % (where, what, answer["message"]), answer.get("tree"),
                                  answer.get("node"), answer.get("field"))
        results.append(answer["result"])
    return results


def global_plan_json(actors: Sequence[Any], total_budget: int, *, timeout: Optional[float] = 60.0,
                     min_per_tree: Optional[int] = None, tree_floor: Optional[float] = None, scores: bool = False,
                     **options: Any) -> List[Dict[str, Any]]:
    """`global_plan`, as the plan JSON each actor's sidecar sent."""
    if not actors:
        raise TraceAllocError("invalid_options", "global_plan needs at least one sidecar actor", field="actors")
    shares = _gather(actors, lambda _, a: a.call.remote("global_shares", tree_floor), timeout, "phase 1 (global-shares)")
    return _gather(actors, lambda i, a: a.call.remote("plan_shard_json", shares, i, total_budget, min_per_tree=min_per_tree,
                                                      scores=scores, treeFloor=tree_floor, **options),
                   timeout, "phase 2 (plan-shard)")


def global_plan(actors: Sequence[Any], total_budget: int, *, timeout: Optional[float] = 60.0,
                min_per_tree: Optional[int] = None, tree_floor: Optional[float] = None, scores: bool = False,
                **options: Any) -> List[Plan]:
    """One global plan of `total_budget` rollouts over every actor's trees, as one `Plan` per
    actor (its own trees), identical to one service holding all trees in actor order planning
    with that total. `timeout` (seconds, None: wait forever) bounds each phase; `options` are the
    other plan settings (prune_ratio, base_depth, ...). Raises `TraceAllocError` naming the
    shard when an actor dies, times out or fails (module docstring)."""
    return [Plan.from_json(p) for p in global_plan_json(actors, total_budget, timeout=timeout, min_per_tree=min_per_tree,
                                                        tree_floor=tree_floor, scores=scores, **options)]
