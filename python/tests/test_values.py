"""Reading trees back (`values`) and sending many requests in one round trip (`pipeline`)."""
import numpy as np
import pytest

from trace_alloc import TraceAllocError, TreeValues

TREE = [{"embedding": [1, 0]}, {"parent": 0, "embedding": [1, 0.01]}, {"parent": 0, "embedding": [0, 1]}]


def test_values_are_what_finish_rollout_backed_up(service):
    service.add_trees([{"id": "a", "nodes": TREE}, {"id": "b", "nodes": TREE[:1]}])
    service.add_nodes("a", [{"parent": 1, "embedding": [1, 0.02], "terminal": True, "uncertainty": 0.5}])
    service.finish_rollout("a", 1.0, leaf=3)
    service.finish_rollout("a", 0.0, leaf=2)
    service.finish_rollout("a", 0.5, path=[0, 1])
    a, b = service.values()
    assert isinstance(a, TreeValues) and (a.id, b.id) == ("a", "b")
    assert a.parent.tolist() == [-1, 0, 0, 1] and a.parent.dtype == np.int64
    assert a.visits.tolist() == [3, 2, 1, 1]
    np.testing.assert_array_equal(a.reward, [0.5, 0.75, 0.0, 1.0])  # running means: exact in binary
    assert a.terminal.tolist() == [False, False, False, True]
    assert a.uncertainty.tolist() == [0, 0, 0, 0.5]
    assert b.nodes == 1 and b.visits.tolist() == [0]
    assert [t.id for t in service.values(trees=["b"])] == ["b"]
    with pytest.raises(TraceAllocError) as info:
        service.values(trees=["nope"])
    assert info.value.code == "unknown_tree"


def test_pipeline_answers_in_order_and_raises_the_first_rejection_after_reading_all(service):
    service.add_tree("a", TREE)
    requests = [{"op": "add-nodes", "tree": "a", "nodes": [{"parent": 1, "embedding": [1, 0.1 * i]}]} for i in range(300)]
    results = service.pipeline(requests)
    assert [r["first"] for r in results] == list(range(3, 303))
    with pytest.raises(TraceAllocError) as info:
        service.pipeline([{"op": "finish-rollout", "tree": "a", "leaf": 3, "reward": 1.0},
                          {"op": "update", "tree": "a", "node": 999, "reward": 1.0},
                          {"op": "finish-rollout", "tree": "a", "leaf": 4, "reward": 0.0}])
    assert (info.value.code, info.value.node) == ("unknown_node", 999)
    # The requests around the rejected one took effect, and the session is still in step.
    assert service.values()[0].visits[[0, 1, 3, 4]].tolist() == [2, 2, 1, 1]
    assert service.stats()["nodes"] == 303
    with pytest.raises(TraceAllocError) as info:
        service.pipeline([{"op": "update", "tree": "a", "node": 1, "reward": float("nan")}])
    assert info.value.field == "reward"


@pytest.mark.parametrize("field,bad", [("reward", None), ("uncertainty", None), ("visits", None), ("reward", "1"), ("parent", 0.5), ("terminal", None)])
def test_values_refuses_a_null_instead_of_making_it_nan(field, bad):
    # A service that sent null (what JSON makes of NaN) must not become a silent NaN in numpy.
    tree = {"id": "q", "parent": [-1, 0, 0], "reward": [1.0, 0.5, 0.0], "visits": [2, 1, 1], "uncertainty": [0.0, 0.0, 0.0],
            "terminal": [False, False, False]}
    tree[field] = list(tree[field])
    tree[field][1] = bad
    with pytest.raises(TraceAllocError) as info:
        TreeValues.from_json(tree)
    assert (info.value.tree, info.value.node, info.value.field) == ("q", 1, field)
    assert "field \"%s\"" % field in str(info.value)
    good = TreeValues.from_json({**tree, field: [-1, 0, 0] if field == "parent" else [False] * 3 if field == "terminal" else [1, 0.5, 0]})
    assert good.nodes == 3 and np.isfinite(good.reward).all()


def test_values_of_extreme_rewards_are_finite_end_to_end(service):
    # finish_rollout with rewards at the ends of the float64 range: the running mean stays finite.
    service.add_tree("q", [{"embedding": [1, 0]}, {"parent": 0, "reward": 1.0, "visits": 1, "embedding": [1, 0.01]},
                           {"parent": 0, "reward": 0.0, "visits": 1, "embedding": [0, 1]}])
    for reward in (-1.7e308, 1.7e308, -1.7e308):
        service.finish_rollout("q", reward, leaf=1)
    (q,) = service.values()
    assert np.isfinite(q.reward).all() and q.visits.tolist() == [3, 4, 1]
