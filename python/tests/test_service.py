import numpy as np
import pytest

import trace_alloc
from trace_alloc import Allocation, Plan, TraceAllocError

from conftest import regular_forest, require_pyarrow

TREE = [{"embedding": [1, 0]}, {"parent": 0, "embedding": [1, 0.01], "visits": 2, "reward": 1},
        {"parent": 0, "embedding": [0, 1], "visits": 1}]


def test_every_operation(service):
    assert service.add_tree("a", TREE) == {"tree": "a", "nodes": 3, "trees": 1}
    assert service.add_trees([{"id": "b", "nodes": TREE}])["added"] == ["b"]
    assert service.add_nodes("a", [{"parent": 1, "embedding": [1, 0.02]}])["first"] == 3
    assert service.update("a", 3, uncertainty=0.2) == {"updated": 1}
    assert service.update_many([{"tree": "b", "node": 2, "reward": 0.5}]) == {"updated": 1}
    assert service.finish_rollout("a", 1.0, leaf=3)["path"] == [0, 1, 3]
    assert service.finish_rollout("b", 0.0, path=[0, 2])["path"] == [0, 2]
    plan = service.plan(total_budget=10, scores=True, prune_ratio=0.4)
    assert isinstance(plan, Plan) and plan.total_budget == 10
    assert sum(t.budget for t in plan.trees) + plan.unallocated == 10
    assert all(isinstance(a, Allocation) for t in plan.trees for a in t.allocations)
    assert plan.tree("a").scores is not None and plan.tree("a").branches + plan.tree("a").unallocated == plan.tree("a").budget
    assert set(plan.replanned) == {"a", "b"}
    assert service.plan(total_budget=10, prune_ratio=0.4, changed=True).trees == ()  # nothing changed since
    assert service.plan_json(budget={"a": 2, "b": 3}, trees=["b"])["trees"][0]["budget"] == 3
    assert [t["id"] for t in service.scores(trees=["a"])["trees"]] == ["a"]
    assert service.set_params(alpha=2.0) == {"params": {"alpha": 2.0, "tau": 0.5, "rule": "v5"}}
    assert service.set_params(rule="v1")["params"]["rule"] == "v1"
    assert service.plan(budget=4).params.rule == "v1"
    assert service.set_params(rule="v2")["params"]["rule"] == "v2"
    assert service.set_params(rule="v3")["params"]["rule"] == "v3"
    assert service.set_params(rule="v4")["params"]["rule"] == "v4"
    assert service.set_params(rule="v5")["params"]["rule"] == "v5"
    with pytest.raises(TraceAllocError):
        service.set_params(rule="v6")
    assert service.stats()["trees"] == 2
    assert service.remove_tree("a")["trees"] == 1
    assert service.remove_trees(["b"]) == {"removed": 1, "trees": 0}


def test_rejections_are_trace_alloc_errors_and_the_forest_survives(service):
    service.add_tree("a", TREE)
    forest = lambda: {k: service.stats()[k] for k in ("trees", "nodes", "groups")}  # noqa: E731
    before = forest()
    with pytest.raises(TraceAllocError) as info:
        service.update("a", 9, reward=1.0)
    assert (info.value.code, info.value.tree, info.value.node) == ("unknown_node", "a", 9)
    with pytest.raises(TraceAllocError) as info:
        service.update("a", 1, reward=float("nan"))
    assert (info.value.code, info.value.field, info.value.tree, info.value.node) == ("invalid_value", "reward", "a", 1)
    with pytest.raises(TraceAllocError) as info:
        service.plan(budget=4, prune_ratio=2)
    assert info.value.code == "invalid_options"
    with pytest.raises(TraceAllocError) as info:
        service.plan(no_such_setting=1)
    assert info.value.code == "invalid_request"  # unknown settings reach the service, which names them
    assert service.send_raw('{"op": "plan"')["error"]["code"] == "parse_error"
    assert forest() == before
    assert service.plan(budget=4).tree("a").branches == 4


@pytest.mark.parametrize("container", ["npz", "arrow"])
def test_add_forest_plans_like_add_tree(command, container):
    if container == "arrow":
        require_pyarrow()
    cols = regular_forest(trees=12, branching=3, depth=2, dim=5, seed=3)
    forest = trace_alloc.check_forest(**cols)
    with trace_alloc.Service(command + ["serve", "--stdio", "--backend", "cpu"]) as binary, \
            trace_alloc.Service(command + ["serve", "--stdio", "--backend", "cpu"]) as text:
        assert binary.add_forest(**cols, container=container)["added"] == list(cols["tree_id"])
        text.add_trees([{"id": str(forest.tree_id[t]), "nodes": [
            {"parent": int(forest.parent[r]), "reward": float(forest.reward[r]), "visits": int(forest.visits[r]),
             "uncertainty": float(forest.uncertainty[r]), "terminal": bool(forest.terminal[r]),
             "embedding": [float(x) for x in forest.embedding[r]]}
            for r in range(forest.tree_offset[t], forest.tree_offset[t + 1])]} for t in range(forest.trees)])
        assert binary.plan(total_budget=50, scores=True) == text.plan(total_budget=50, scores=True)


def test_a_rejected_batch_changes_nothing_and_replace_swaps_trees(service):
    cols = regular_forest(trees=3, branching=2, depth=2, dim=4, seed=5)
    service.add_forest(**cols, container="npz")
    before = service.stats()
    bad = regular_forest(trees=2, branching=2, depth=2, dim=4, seed=6)
    bad["tree_id"] = np.array(["x", "y"])
    bad["visits"] = bad["visits"].astype(np.float64)
    bad["visits"][9] = 1.5  # tree y, node 2
    with pytest.raises(TraceAllocError) as info:
        service.add_forest(**bad, container="npz")
    assert (info.value.code, info.value.tree, info.value.node, info.value.field) == ("invalid_value", "y", 2, "visits")
    with pytest.raises(TraceAllocError) as info:
        service.add_forest(**cols, container="npz")
    assert info.value.code == "duplicate_tree"
    assert service.stats() == before
    assert service.add_forest(**cols, replace=True, container="npz")["replaced"] == ["q0", "q1", "q2"]
    assert service.stats()["trees"] == 3


def test_default_tree_ids_continue_the_live_forest(service):
    cols = regular_forest(trees=2, branching=2, depth=1, dim=3, seed=8)
    del cols["tree_id"]
    assert service.add_forest(**cols)["added"] == ["0", "1"]
    assert service.add_forest(**cols)["added"] == ["2", "3"]


@pytest.mark.parametrize("container", ["npz", "arrow"])
def test_small_binary_requests_go_in_one_write_and_plan_as_streamed_ones(command, container, monkeypatch):
    """A binary request up to `coalesce_bytes` goes to the service in one write (each write wakes
    the service); above it, the payload is streamed from the arrays in parts. Both give the
    same forest and plan, for add_forest (an npz or Arrow payload) and extend (bytes)."""
    if container == "arrow":
        require_pyarrow()
    cols = regular_forest(trees=12, branching=3, depth=2, dim=5, seed=3)
    rows = dict(tree_id=np.array([str(cols["tree_id"][0])] * 2), parent=np.array([0, 4]),
                embedding=np.ones((2, 5), dtype=np.float32), visits=np.array([1, 0]))
    writes = {}
    plans = {}
    for name, limit in (("one write", 1 << 20), ("streamed", 0)):
        with trace_alloc.Service(command + ["serve", "--stdio", "--backend", "cpu"]) as s:
            monkeypatch.setattr(s, "coalesce_bytes", limit)
            sizes = []
            send = s._write
            monkeypatch.setattr(s, "_write", lambda data, send=send: (sizes.append(memoryview(data).nbytes), send(data))[1])
            s.add_forest(**cols, container=container)
            writes[name, "add_forest"] = len(sizes)
            sizes.clear()
            assert s.extend(**rows, container=container)["added"] == 2
            writes[name, "extend"] = len(sizes)
            plans[name] = s.plan(total_budget=50, scores=True)
    assert writes["one write", "add_forest"] == 1 and writes["one write", "extend"] == 1
    assert writes["streamed", "add_forest"] > 2 and writes["streamed", "extend"] >= 2
    assert plans["one write"] == plans["streamed"]
