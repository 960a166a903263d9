"""The one place that knows how the trainer talks to `trace-alloc serve --stdio`.

It uses the `trace_alloc` Python package (installed, or the repository's `python/` folder):
binary columnar input by default, JSON Lines `add-tree` requests with
`TRACE_ALLOC_LLM_TRANSPORT=json` (to measure what the binary path saves). Callers hand over a
forest as arrays and get the plan of docs/ALGORITHM.md §5 back as plain JSON-shaped dicts,
whichever transport ran.
"""

from __future__ import annotations

import dataclasses
import os
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[2]


def service_command() -> list[str]:
    return ["node", str(REPO / "dist" / "cli" / "main.js"), "serve", "--stdio", "--backend", "cpu"]


def _load_package():
    """The repository's `python/` package (or an installed `trace_alloc` when this file runs elsewhere)."""
    local = REPO / "python"
    if (local / "trace_alloc").is_dir() and str(local) not in sys.path:
        sys.path.insert(0, str(local))
    try:
        import trace_alloc  # type: ignore
    except ImportError as err:
        raise SystemExit("examples/llm needs the trace_alloc package: run it from a trace-alloc checkout, "
                         "or pip install ./python there (%s)" % err) from None
    return trace_alloc


def learner():
    """trace_alloc.learn, the library's α, τ learner (from the repository's python/ when not installed)."""
    local = str(REPO / "python")
    if local not in sys.path:
        sys.path.insert(0, local)
    from trace_alloc import learn  # type: ignore

    return learn


def _plain(value):
    """Dataclasses (the package's plan) as the protocol's JSON shapes (camelCase keys)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {_camel(f.name): _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def _json_nodes(cols: dict, a: int, b: int) -> list[dict]:
    return [{"parent": int(cols["parent"][i]), "reward": float(cols["reward"][i]), "visits": int(cols["visits"][i]),
             "uncertainty": float(cols["uncertainty"][i]), "terminal": bool(cols["terminal"][i]),
             "embedding": cols["embedding"][i].tolist()} for i in range(a, b)]


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(w.capitalize() for w in rest)


class AllocatorClient:
    """A live forest in one `serve --stdio` process, kept equal to the trainer's trees by `sync_forest`."""

    def __init__(self, command: list[str] | None = None):
        command = command or service_command()
        self.forests_sent = 0
        self.nodes_sent: list[int] = []  # nodes per forest sent
        self._ids: list[str] = []
        pkg = _load_package()
        self._client = pkg.Service(command)
        self._binary = os.environ.get("TRACE_ALLOC_LLM_TRANSPORT") != "json"
        self.transport = "trace_alloc package %s, %s" % (getattr(pkg, "__version__", "?"),
                                                          "binary add_forest" if self._binary else "JSON Lines add-tree")
        t0 = time.perf_counter()
        self.service = self.stats()  # waits for the service to be up, so start-up is not counted per step
        self.startup_s = time.perf_counter() - t0

    def sync_forest(self, ids: list[str], tree_offset: np.ndarray, parent: np.ndarray, reward: np.ndarray,
                    visits: np.ndarray, uncertainty: np.ndarray, terminal: np.ndarray,
                    embedding: np.ndarray) -> None:
        """Makes the service's live forest exactly these trees (one row per node, trees in order).

        The whole forest travels in one batch either way: binary columns replacing the trees with
        the same ids, or over JSON one `remove-tree` and one `add-tree` of all trees. Measured on
        the shared machine, a round trip costs more than the bytes, so this beats sending only the
        new nodes tree by tree (one `add-nodes` request per tree)."""
        same = list(ids) == self._ids
        if self._ids and not (same and self._binary):
            self._client.remove_trees(self._ids)
        if self._binary:
            self._client.add_forest(tree_offset, parent, reward, visits, uncertainty, terminal, embedding,
                                    tree_id=list(ids), replace=same)
        else:
            cols = {"parent": parent, "reward": reward, "visits": visits, "uncertainty": uncertainty,
                    "terminal": terminal, "embedding": embedding}
            self._client.add_trees([{"id": tid, "nodes": _json_nodes(cols, int(tree_offset[t]), int(tree_offset[t + 1]))}
                                    for t, tid in enumerate(ids)])
        self._ids = list(ids)
        self.forests_sent += 1
        self.nodes_sent.append(int(tree_offset[-1]))

    def plan(self, total_budget: int, min_per_tree: int = 1, scores: bool = False) -> dict:
        """The plan as the service sent it (JSON shapes, camelCase)."""
        return self._client.plan_json(total_budget=total_budget, min_per_tree=min_per_tree, scores=scores)

    def set_params(self, alpha: float, tau: float) -> dict:
        return _plain(self._client.set_params(alpha=alpha, tau=tau))

    def stats(self) -> dict:
        return _plain(self._client.stats())

    def close(self) -> None:
        self._client.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False
