"""Service.extend: a round's new nodes (numpy columns), updates and finished rollouts in one
request; the same forest and plan as add_nodes, update and finish_rollout one by one."""
from __future__ import annotations

import numpy as np
import pytest

import trace_alloc
from trace_alloc import TraceAllocError

from conftest import regular_forest, require_pyarrow


def a_round(cols, seed):
    """New nodes under random nodes of about a tenth of the trees, and a rollout down each new node."""
    rng = np.random.default_rng(seed)
    offsets, ids = cols["tree_offset"], cols["tree_id"]
    dim = cols["embedding"].shape[1]
    tree_id, parent, rollouts = [], [], []
    for t in rng.choice(len(ids), size=max(1, len(ids) // 10), replace=False):
        size = int(offsets[t + 1] - offsets[t])
        for _ in range(int(rng.integers(1, 4))):
            tree_id.append(str(ids[t]))
            parent.append(int(rng.integers(0, size)))
            rollouts.append((str(ids[t]), np.int64(size), float(rng.integers(0, 2))))
            size += 1
    n = len(tree_id)
    return dict(tree_id=np.array(tree_id), parent=np.array(parent, dtype=np.int64),
                embedding=rng.normal(size=(n, dim)).astype(np.float32), reward=rng.random(n),
                visits=rng.integers(0, 3, size=n)), rollouts


@pytest.mark.parametrize("container", ["npz", "arrow"])
def test_extend_equals_the_one_by_one_operations(command, container):
    if container == "arrow":
        require_pyarrow()
    cols = regular_forest(40, 3, 2, 6, seed=3)
    rows, rollouts = a_round(cols, 5)
    updates = [{"tree": str(cols["tree_id"][0]), "node": 1, "uncertainty": 0.5}]
    argv = command + ["serve", "--stdio", "--backend", "cpu", "--threads", "1"]
    with trace_alloc.Service(argv) as bulk, trace_alloc.Service(argv) as single:
        for s in (bulk, single):
            s.add_forest(**cols, container="npz")
            s.plan(budget=8)
        result = bulk.extend(**rows, updates=updates, rollouts=rollouts, container=container)
        single.update_many(updates)
        first = {}
        for r, tree in enumerate(rows["tree_id"]):
            node = {"parent": int(rows["parent"][r]), "embedding": rows["embedding"][r].tolist(),
                    "reward": float(rows["reward"][r]), "visits": int(rows["visits"][r])}
            first.setdefault(str(tree), single.add_nodes(str(tree), [node])["first"])
        for tree, leaf, reward in rollouts:
            single.finish_rollout(tree, reward, leaf=int(leaf))
        assert result == {"added": len(rows["tree_id"]), "first": first, "updated": 1, "rollouts": len(rollouts)}
        assert bulk.plan_json(budget=8, changed=True) == single.plan_json(budget=8, changed=True)
        assert bulk.stats()["nodes"] == single.stats()["nodes"]


def test_a_bad_round_changes_nothing(service):
    cols = regular_forest(10, 2, 2, 4, seed=1)
    service.add_forest(**cols, container="npz")
    before = service.stats()
    rows, rollouts = a_round(cols, 2)
    bad = dict(rows, embedding=rows["embedding"].copy())
    bad["embedding"][-1, 0] = np.nan
    with pytest.raises(TraceAllocError) as info:  # caught before sending, the row named
        service.extend(**bad, rollouts=rollouts)
    assert info.value.field == "embedding[0]"
    with pytest.raises(TraceAllocError) as info:  # refused by the service: a leaf past the round's nodes
        service.extend(**rows, rollouts=rollouts + [(rollouts[0][0], 10_000, 1.0)])
    assert info.value.code == "unknown_node"
    assert service.stats() == before
    assert service.extend(rollouts=[(str(cols["tree_id"][0]), 0, 1.0)]) == {"added": 0, "first": {}, "updated": 0, "rollouts": 1}


def test_dim_zero_forests_go_as_npz_by_default(command):
    """pyarrow has no fixed-size list of length 0: without a container, a dim-0 forest and its new
    nodes go as .npz (the tree-rollout driver with dim=0 sends its rounds this way)."""
    with trace_alloc.Service(command + ["serve", "--stdio", "--backend", "cpu", "--dim", "0"]) as s:
        s.add_forest(np.array([0, 1]), np.array([-1]), np.zeros(1), np.zeros(1), np.zeros(1), np.zeros(1, dtype=bool),
                     np.zeros((1, 0)), tree_id=["a"])
        done = s.extend(np.array(["a", "a"]), np.array([0, 1]), np.zeros((2, 0)), uncertainty=np.array([0.1, 0.2]),
                        terminal=np.array([False, True]), rollouts=[("a", 2, 1.0)])
        assert done["added"] == 2 and done["rollouts"] == 1
        assert s.values(["a"])[0].visits.tolist() == [1, 1, 1]
