"""The sharded global plan through trace_alloc.distributed, with an in-process gather over
threads (one thread and one sidecar per rank): plans, ties across ranks, both rules, faults."""
from __future__ import annotations

import json
import sys
import threading
from typing import Any, Callable, Dict, List, Optional

import numpy as np
import pytest

import trace_alloc
from trace_alloc import TraceAllocError
from trace_alloc.distributed import global_plan_json

from conftest import regular_forest


class ThreadGather:
    """An all-gather among `world` threads: each rank's `for_rank(r)` is its gather function."""

    def __init__(self, world: int) -> None:
        self.slots: List[Any] = [None] * world
        self.barrier = threading.Barrier(world)

    def for_rank(self, rank: int) -> Callable[[Any], List[Any]]:
        def gather(obj: Any) -> List[Any]:
            self.slots[rank] = json.loads(json.dumps(obj))  # what crosses the wire is JSON-able
            self.barrier.wait()
            out = list(self.slots)
            self.barrier.wait()
            return out
        return gather


def run_ranks(services: List[Any], total: int, timeout: Optional[float] = 30, skip: Optional[int] = None,
              **options: Any) -> List[Any]:
    """`global_plan_json` on every rank at once; each entry is a plan or the exception raised."""
    g = ThreadGather(len(services))
    results: List[Any] = [None] * len(services)

    def rank(r: int) -> None:
        try:
            results[r] = global_plan_json(services[r], total, gather=g.for_rank(r), timeout=timeout, **options)
        except Exception as err:
            results[r] = err

    threads = [threading.Thread(target=rank, args=(r,)) for r in range(len(services)) if r != skip]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    g.barrier.abort()  # frees gathers left waiting for a rank that never came
    return results


def forest_rows(f: Dict[str, np.ndarray], lo: int, hi: int) -> Dict[str, np.ndarray]:
    """Trees lo..hi of a regular forest, as add_forest arguments."""
    off = f["tree_offset"]
    a, b = int(off[lo]), int(off[hi])
    out = {k: f[k][a:b] for k in ("parent", "reward", "visits", "uncertainty", "terminal", "embedding")}
    out["tree_offset"] = off[lo:hi + 1] - a
    out["tree_id"] = f["tree_id"][lo:hi]
    return out


def add(service: Any, rows: Dict[str, np.ndarray]) -> None:
    if len(rows["tree_id"]):
        service.add_forest(rows["tree_offset"], rows["parent"], rows["reward"], rows["visits"], rows["uncertainty"],
                           rows["terminal"], rows["embedding"], tree_id=list(rows["tree_id"]))


def tied_forest(trees: int, seed: int) -> Dict[str, np.ndarray]:
    """A regular forest whose second half repeats the first (equal weights across ranks)."""
    f = regular_forest(trees // 2, 3, 2, 8, seed)
    out = {k: np.concatenate([v, v]) for k, v in f.items() if k not in ("tree_offset", "tree_id")}
    n = int(f["tree_offset"][-1])
    out["tree_offset"] = np.concatenate([f["tree_offset"], f["tree_offset"][1:] + n])
    out["tree_id"] = np.array(["q%d" % t for t in range(2 * (trees // 2))])
    return out


@pytest.mark.parametrize("rule", ["v4", "v5", "v3", "v2", "v1"])
@pytest.mark.parametrize("cuts", [(0, 7, 13, 24), (0, 0, 5, 24), (0, 24)])
def test_ranks_together_plan_as_one_service(command, rule, cuts):
    forest = tied_forest(24, seed=3)
    argv = command + ["serve", "--stdio", "--backend", "cpu", "--rule", rule]
    with trace_alloc.Service(argv) as whole:
        add(whole, forest)
        single = whole.plan_json(total_budget=101, min_per_tree=2, scores=True)
    services = [trace_alloc.Service(argv) for _ in range(len(cuts) - 1)]
    try:
        for s, lo, hi in zip(services, cuts, cuts[1:]):
            add(s, forest_rows(forest, lo, hi))
        plans = run_ranks(services, 101, min_per_tree=2, scores=True)
    finally:
        for s in services:
            s.close()
    for p in plans:
        assert not isinstance(p, Exception), p
        assert (p["totalBudget"], p["unallocated"], p["params"]) == (single["totalBudget"], single["unallocated"], single["params"])
    union = [t for p in plans for t in p["trees"]]
    assert json.dumps(union) == json.dumps(single["trees"])


def test_a_dead_sidecar_fails_every_rank_and_a_retry_after_restart_plans_the_same(command):
    forest = regular_forest(6, 3, 2, 8, seed=5)
    argv = command + ["serve", "--stdio", "--backend", "cpu"]

    def start() -> List[Any]:
        services = [trace_alloc.Service(argv) for _ in range(3)]
        for s, lo, hi in zip(services, (0, 2, 4), (2, 4, 6)):
            add(s, forest_rows(forest, lo, hi))
        return services

    services = start()
    first = run_ranks(services, 40)
    assert all(not isinstance(p, Exception) for p in first), first
    services[1].kill()
    services[1].close()
    failed = run_ranks(services, 40)
    for err in failed:
        assert isinstance(err, TraceAllocError) and "rank 1" in str(err), err
    for s in services:
        s.close()
    services = start()
    try:
        again = run_ranks(services, 40)
    finally:
        for s in services:
            s.close()
    assert json.dumps(again) == json.dumps(first)


def test_a_sidecar_that_does_not_answer_fails_every_rank_within_the_timeout(command):
    forest = regular_forest(4, 3, 2, 8, seed=7)
    argv = command + ["serve", "--stdio", "--backend", "cpu"]
    good = [trace_alloc.Service(argv) for _ in range(2)]
    for s, lo, hi in zip(good, (0, 2), (2, 4)):
        add(s, forest_rows(forest, lo, hi))
    mute = trace_alloc.Service([sys.executable, "-c", "import time; time.sleep(120)"])  # reads nothing, answers nothing
    try:
        results = run_ranks([good[0], mute, good[1]], 20, timeout=5)  # generous: the good ranks' own requests must not time out on a loaded machine
    finally:
        mute.kill()
        mute.close()
        for s in good:
            s.close()
    # Every rank fails with a timeout. Which message the others see (rank 1's error through the
    # gather, or the gather's own deadline on a loaded machine) is a race, so only the muted
    # rank's own message is pinned.
    assert [r.code for r in results] == ["timeout"] * 3, results
    assert "sidecar" in str(results[1])


def test_a_rank_that_never_gathers_makes_the_others_time_out(command):
    forest = regular_forest(2, 3, 2, 8, seed=9)
    argv = command + ["serve", "--stdio", "--backend", "cpu"]
    services = [trace_alloc.Service(argv) for _ in range(2)]
    try:
        for s, lo, hi in zip(services, (0, 1), (1, 2)):
            add(s, forest_rows(forest, lo, hi))
        results = run_ranks(services, 10, timeout=5, skip=1)
    finally:
        for s in services:
            s.close()
    assert isinstance(results[0], TraceAllocError) and results[0].code == "timeout"
    assert "gather" in str(results[0])


def test_phase_two_refuses_shares_of_trees_that_changed(command):
    forest = regular_forest(2, 3, 2, 8, seed=11)
    with trace_alloc.Service(command + ["serve", "--stdio", "--backend", "cpu"]) as s:
        add(s, forest)
        shares = s.global_shares()
        s.update("q0", 1, reward=0.123)
        with pytest.raises(TraceAllocError) as err:
            s.plan_shard_json([shares], 0, 10)
        assert err.value.code == "stale_shares"
        plan = s.plan_shard_json([s.global_shares()], 0, 10)
        assert plan["totalBudget"] == 10 and sum(t["budget"] for t in plan["trees"]) == 10
