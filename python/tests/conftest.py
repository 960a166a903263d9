"""Shared fixtures: the service command and seeded forests built with numpy."""
from __future__ import annotations

import os
import subprocess
from typing import Dict

import numpy as np
import pytest

import trace_alloc


def regular_forest(trees: int, branching: int, depth: int, dim: int, seed: int,
                   dtype: type = np.float32) -> Dict[str, np.ndarray]:
    """Seeded trees of `branching` children per node down to `depth` levels (W1: 4096, 4, 3, 128):
    children's embeddings are their parent's plus noise, some leaves ended, rewards in [0, 1]."""
    rng = np.random.default_rng(seed)
    local = [-1]
    for level in range(1, depth + 1):
        first_parent = sum(branching ** d for d in range(level - 1))
        local += [first_parent + i // branching for i in range(branching ** level)]
    local_parent = np.array(local, dtype=np.int32)
    per_tree = local_parent.shape[0]
    n = trees * per_tree
    parent = np.tile(local_parent, trees)
    # A child's embedding is its parent's plus noise: add level by level, all trees at once.
    embedding = rng.normal(0, 0.3, size=(trees, per_tree, dim)).astype(dtype)
    embedding[:, 0] = rng.normal(0, 1, size=(trees, dim))
    for v in range(1, per_tree):  # parents come before children
        embedding[:, v] += embedding[:, local_parent[v]]
    embedding = embedding.reshape(n, dim)
    is_leaf = np.ones(per_tree, dtype=bool)
    is_leaf[local_parent[1:]] = False
    terminal = np.tile(is_leaf, trees) & (rng.random(n) < 0.2)
    return {
        "tree_offset": np.arange(0, n + 1, per_tree, dtype=np.int64),
        "parent": parent,
        "reward": rng.random(n),
        "visits": rng.integers(0, 6, size=n),
        "uncertainty": rng.random(n) * 0.5,
        "terminal": terminal,
        "embedding": embedding,
        "tree_id": np.array(["q%d" % t for t in range(trees)]),
    }


@pytest.fixture(scope="session")
def command():
    """The trace-alloc command line (TRACE_ALLOC_BIN, or found as find_command documents)."""
    return trace_alloc.find_command()


@pytest.fixture
def service(command):
    with trace_alloc.Service(command + ["serve", "--stdio", "--backend", "cpu"]) as s:
        yield s


def cli_plan(command, path, *flags) -> str:
    run = subprocess.run(command + ["score", str(path), "--backend", "cpu", *flags], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    return run.stdout


def require_pyarrow() -> None:
    if trace_alloc._columns.have_pyarrow():
        return
    if os.environ.get("TRACE_ALLOC_REQUIRE_PYARROW") == "1":
        pytest.fail("pyarrow is required here (TRACE_ALLOC_REQUIRE_PYARROW=1) but not installed")
    pytest.skip("pyarrow is not installed")


def require_torch():
    """torch, or a skip; a failure where TRACE_ALLOC_REQUIRE_TORCH=1 (CI installs it)."""
    try:
        import torch
    except ImportError:
        if os.environ.get("TRACE_ALLOC_REQUIRE_TORCH") == "1":
            pytest.fail("torch is required here (TRACE_ALLOC_REQUIRE_TORCH=1) but not installed")
        pytest.skip("torch is not installed")
    return torch


def require_trl():
    """trl (with torch and transformers), or a skip; a failure where TRACE_ALLOC_REQUIRE_TRL=1."""
    try:
        import torch  # noqa: F401
        import transformers  # noqa: F401
        import trl
    except ImportError as err:
        if os.environ.get("TRACE_ALLOC_REQUIRE_TRL") == "1":
            pytest.fail("trl, torch and transformers are required here (TRACE_ALLOC_REQUIRE_TRL=1): %s" % err)
        pytest.skip("trl is not installed (%s)" % err)
    return trl


def require_ray():
    """ray, or a skip; a failure where TRACE_ALLOC_REQUIRE_RAY=1 (CI installs it)."""
    try:
        import ray
    except ImportError as err:
        if os.environ.get("TRACE_ALLOC_REQUIRE_RAY") == "1":
            pytest.fail("ray is required here (TRACE_ALLOC_REQUIRE_RAY=1) but not installed: %s" % err)
        pytest.skip("ray is not installed (%s)" % err)
    return ray

