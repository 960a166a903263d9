"""The end-to-end check: W1-sized arrays (4096 trees x 85 nodes, dim 128) from numpy to the
service as bytes, the plan back, equal to `trace-alloc score` on the same forest as .npz."""
import json

import trace_alloc

from conftest import cli_plan, regular_forest


def test_w1_arrays_plan_equals_the_cli_plan(tmp_path, command):
    cols = regular_forest(trees=4096, branching=4, depth=3, dim=128, seed=20260401)
    assert cols["embedding"].shape == (4096 * 85, 128)
    trace_alloc.save_npz(tmp_path / "w1.npz", **cols)
    expected = json.loads(cli_plan(command, tmp_path / "w1.npz", "--total-budget", "65536"))
    with trace_alloc.Service(command + ["serve", "--stdio", "--backend", "cpu"]) as ta:
        assert ta.add_forest(**cols)["trees"] == 4096
        got = ta.plan_json(total_budget=65536)
        plan = trace_alloc.Plan.from_json(got)
    assert len(got.pop("replanned")) == 4096
    assert got == expected
    assert sum(t.branches for t in plan.trees) + plan.unallocated == 65536
