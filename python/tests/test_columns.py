import io
import json

import numpy as np
import pytest

import trace_alloc
from trace_alloc import TraceAllocError, check_forest, save_npz

from conftest import cli_plan, regular_forest


def small():
    return dict(tree_offset=[0, 3, 7], parent=[-1, 0, 0, -1, 0, 1, 1], reward=[0, 1, 0, 0, 0, 0, 0.0],
                visits=[0, 2, 1, 0, 0, 0, 0], uncertainty=[0, 0, 0.3, 0, 0, 0, 0], terminal=[0, 0, 0, 0, 0, 1, 0],
                embedding=np.array([[1, 0], [1, 0.1], [0, 1], [0, 1], [0.5, 1], [0.4, 1], [0.6, 1]]), tree_id=["a", "b"])


def test_nan_reward_is_a_trace_alloc_error_naming_tree_node_and_field():
    cols = small()
    cols["reward"] = [0, 1, 0, 0, 0, float("nan"), 0]
    with pytest.raises(TraceAllocError) as info:
        check_forest(**cols)
    err = info.value
    assert (err.code, err.tree, err.node, err.field) == ("invalid_value", "b", 2, "reward")
    assert 'tree "b" (#1), node 2, field "reward": must be a finite number, got nan' in str(err)
    assert not isinstance(err, ValueError)


@pytest.mark.parametrize("change, field, text", [
    (dict(parent=np.array([-1, 0, 0, -1, 0, 1, 1], dtype=np.float64)), "parent", "must be integers"),
    (dict(embedding=np.zeros((7, 2), dtype=np.int32)), "embedding", "float32 or float64"),
    (dict(embedding=np.zeros(14)), "embedding", "2-D"),
    (dict(embedding=np.zeros((6, 2))), "embedding", "6 rows, expected 7"),
    (dict(visits=[0, 1]), "visits", "2 entries, expected 7"),
    (dict(terminal=[0, 0, 0, 0, 0, 2, 0]), "terminal", "must be 0 or 1"),
    (dict(tree_offset=[0, 3, 3, 7]), "tree_offset", "has no nodes"),
    (dict(tree_id=["a"]), "tree_id", "one id per tree"),
    (dict(embedding=np.full((7, 2), np.inf)), "embedding[0]", "finite"),
])
def test_shape_and_dtype_errors_name_the_field(change, field, text):
    cols = small()
    cols.update(change)
    with pytest.raises(TraceAllocError) as info:
        check_forest(**cols)
    assert info.value.field == field
    assert text in str(info.value)


class FakeTensor:
    """Duck-typed like a torch tensor on a device: detach().cpu().numpy()."""

    def __init__(self, array):
        self.array = np.asarray(array)

    def detach(self):
        return self

    def cpu(self):
        return self

    def numpy(self):
        return self.array


def test_tensors_are_taken_through_numpy():
    cols = {k: (FakeTensor(v) if k != "tree_id" else v) for k, v in small().items()}
    forest = check_forest(**cols)
    assert forest.trees == 2 and forest.nodes == 7 and forest.embedding.shape == (7, 2)


def test_save_npz_scores_like_the_same_forest_in_json(tmp_path, command):
    cols = regular_forest(trees=20, branching=3, depth=2, dim=6, seed=1, dtype=np.float64)
    save_npz(tmp_path / "f.npz", **cols)
    forest = check_forest(**cols)
    trees = []
    for t in range(forest.trees):
        lo, hi = forest.tree_offset[t], forest.tree_offset[t + 1]
        trees.append({"id": str(forest.tree_id[t]), "nodes": [
            {"parent": int(forest.parent[r]), "reward": float(forest.reward[r]), "visits": float(forest.visits[r]),
             "uncertainty": float(forest.uncertainty[r]), "terminal": bool(forest.terminal[r]),
             "embedding": forest.embedding[r].tolist()} for r in range(lo, hi)]})
    (tmp_path / "f.json").write_text(json.dumps({"dim": 6, "trees": trees}))
    assert cli_plan(command, tmp_path / "f.npz", "--scores") == cli_plan(command, tmp_path / "f.json", "--scores")
    save_npz(tmp_path / "z.npz", **cols, compressed=True)
    assert cli_plan(command, tmp_path / "z.npz") == cli_plan(command, tmp_path / "f.json")


def test_the_package_is_typed():
    import importlib.resources as resources
    assert (resources.files(trace_alloc) / "py.typed").is_file()


@pytest.mark.parametrize("zip64", [False, True])
def test_the_streamed_npz_is_what_numpy_and_the_service_read(command, tmp_path, monkeypatch, zip64):
    from trace_alloc._columns import NpzPayload
    if zip64:  # every entry and the end records in zip64 form, as past 4 GiB
        monkeypatch.setattr(NpzPayload, "zip64_from", 0)
    cols = trace_alloc.check_forest(**regular_forest(12, 3, 2, 4, seed=8)).columns()
    payload = NpzPayload(cols)
    out = io.BytesIO()
    payload.write_into(out.write)
    assert len(out.getvalue()) == payload.nbytes
    loaded = np.load(io.BytesIO(out.getvalue()))
    for name, array in cols.items():
        assert np.array_equal(loaded[name], array), name
    path = tmp_path / "streamed.npz"
    path.write_bytes(out.getvalue())
    np.savez(tmp_path / "numpy.npz", **cols)
    assert cli_plan(command, path) == cli_plan(command, tmp_path / "numpy.npz")
