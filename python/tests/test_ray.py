"""trace_alloc.ray: sidecars as Ray actors on a local cluster, the global plan across them
byte-identical to one service and to trace_alloc.distributed, and dead or silent actors
reported by shard, not waited for. Skips without ray, unless TRACE_ALLOC_REQUIRE_RAY=1."""
import json
import sys
import threading
import time

import pytest

import trace_alloc
from conftest import regular_forest, require_ray
from test_distributed import add, forest_rows, run_ranks, tied_forest
from trace_alloc import TraceAllocError
from trace_alloc import ray as ta_ray


@pytest.fixture(scope="module")
def ray_cluster():
    ray = require_ray()
    ta_ray.init_local()
    yield ray
    ray.shutdown()


def sidecars(command, count):
    return ta_ray.start_sidecars(count, command + ["serve", "--stdio", "--backend", "cpu"], num_cpus=0.5)


def fill(actors, forest, cuts):
    for a, lo, hi in zip(actors, cuts, cuts[1:]):
        rows = forest_rows(forest, lo, hi)
        if len(rows["tree_id"]):
            ta_ray.call(a, "add_forest", rows["tree_offset"], rows["parent"], rows["reward"], rows["visits"],
                        rows["uncertainty"], rows["terminal"], rows["embedding"], tree_id=list(rows["tree_id"]))


def test_actors_together_plan_as_one_service_and_as_the_torch_distributed_path(ray_cluster, command):
    forest = tied_forest(24, seed=3)
    cuts = (0, 7, 7, 13, 24)  # shard 1 holds no tree; twin trees (equal weights) on different shards
    argv = command + ["serve", "--stdio", "--backend", "cpu"]
    actors = sidecars(command, len(cuts) - 1)
    ranks = [trace_alloc.Service(argv) for _ in actors]
    try:
        fill(actors, forest, cuts)
        for s, lo, hi in zip(ranks, cuts, cuts[1:]):
            add(s, forest_rows(forest, lo, hi))
        with trace_alloc.Service(argv) as whole:
            add(whole, forest)
            for rule in ("v4", "v5", "v3", "v2", "v1"):
                for s in [whole] + ranks:
                    s.request("set-params", rule=rule)
                for a in actors:
                    ta_ray.call(a, "request", "set-params", rule=rule)
                single = whole.plan_json(total_budget=101, min_per_tree=2, scores=True)
                plans = ta_ray.global_plan_json(actors, 101, min_per_tree=2, scores=True)
                torch_path = run_ranks(ranks, 101, min_per_tree=2, scores=True)  # distributed.global_plan_json
                union = [t for p in plans for t in p["trees"]]
                assert json.dumps(union) == json.dumps(single["trees"]), rule
                assert json.dumps(plans) == json.dumps(torch_path), rule
                for p in plans:
                    assert (p["totalBudget"], p["unallocated"], p["params"]) == \
                        (single["totalBudget"], single["unallocated"], single["params"])
        typed = ta_ray.global_plan(actors, 101, min_per_tree=2)
        assert [[t.id for t in p.trees] for p in typed] == [[t["id"] for t in p["trees"]] for p in plans]
    finally:
        for s in ranks:
            s.close()
        for a in actors:
            ray_cluster.kill(a)


def test_an_actor_killed_mid_protocol_is_named_on_the_driver_not_waited_for(ray_cluster, command):
    forest = regular_forest(4, 3, 2, 8, seed=5)
    good = sidecars(command, 2)
    fill(good, forest, (0, 2, 4))
    # A sidecar that reads nothing and answers nothing: its actor is stuck in phase 1 until killed.
    mute = ta_ray.start_sidecar([sys.executable, "-c", "import time; time.sleep(600)"], num_cpus=0.5)
    actors = [good[0], mute, good[1]]
    killer = threading.Timer(2.0, ray_cluster.kill, [mute])
    t0 = time.monotonic()
    killer.start()
    try:
        with pytest.raises(TraceAllocError) as info:
            ta_ray.global_plan(actors, 20, timeout=120)
    finally:
        killer.cancel()
    assert time.monotonic() - t0 < 60  # the kill ended the wait, not the timeout
    assert info.value.code == "service_error"
    assert "shard 1 (actor " in str(info.value) and "died during phase 1 (global-shares)" in str(info.value)
    # Already dead before the call: the same error, at once.
    with pytest.raises(TraceAllocError) as info:
        ta_ray.global_plan(actors, 20, timeout=120)
    assert "shard 1" in str(info.value) and info.value.code == "service_error"
    # A new actor with the same trees in its place: the plan goes through.
    fresh = sidecars(command, 1)[0]
    plans = ta_ray.global_plan([good[0], fresh, good[1]], 20)
    assert sum(t.budget for p in plans for t in p.trees) == 20 and [len(p.trees) for p in plans] == [2, 0, 2]
    for a in good + [fresh]:
        ray_cluster.kill(a)


def test_a_silent_actor_times_out_by_name_and_sidecar_errors_come_back_whole(ray_cluster, command):
    mute = ta_ray.start_sidecar([sys.executable, "-c", "import time; time.sleep(600)"], num_cpus=0.5)
    ok = sidecars(command, 1)[0]
    try:
        # Both actors up first: on a loaded machine starting one takes seconds, which a short timeout would count.
        ray_cluster.get([mute.__ray_ready__.remote(), ok.__ray_ready__.remote()], timeout=120)
        ta_ray.call(ok, "stats")
        with pytest.raises(TraceAllocError) as info:
            ta_ray.global_plan([ok, mute], 10, timeout=10)
        assert info.value.code == "timeout" and "shard 1" in str(info.value)
        with pytest.raises(TraceAllocError) as info:  # the sidecar's own refusal, with where it happened
            ta_ray.call(ok, "update", "nope", 1, reward=0.5)
        assert info.value.code == "unknown_tree" and "shard 0" in str(info.value)
        with pytest.raises(TraceAllocError) as info:
            ta_ray.call(ok, "_send", "x")
        assert info.value.field == "method"
    finally:
        ray_cluster.kill(mute)
        ray_cluster.kill(ok)
