"""The one place that knows how the trainer talks to `trace-alloc serve --stdio`.

It uses the `trace_alloc` Python package (installed, or the repository's `python/` folder) and
its binary columnar input; plans come back as the protocol's JSON shapes (camelCase dicts).
The service is `node dist/cli/main.js serve --stdio --backend cpu` of this checkout, or what
`$TRACE_ALLOC_NODE` (the Node binary) and `$TRACE_ALLOC_BIN` (`dist/cli/main.js`) name: the
device run points them at the Node and the built service its bundle carries.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[2]


def service_command(rule: str | None = None) -> list[str]:
    """The service's command line; `rule` None leaves the library's default rule in force."""
    node = os.environ.get("TRACE_ALLOC_NODE", "node")
    main = os.environ.get("TRACE_ALLOC_BIN", str(REPO / "dist" / "cli" / "main.js"))
    return [node, main, "serve", "--stdio", "--backend", "cpu"] + (["--rule", rule] if rule else [])


def default_rule() -> str:
    """The rule a service started without `--rule` uses (the library's default), asked of one."""
    client = _load_package().Service(service_command())
    try:
        return client.request("plan")["params"]["rule"]
    finally:
        client.close()


def _load_package():
    """The repository's `python/` package (or an installed `trace_alloc` when this file runs elsewhere)."""
    local = REPO / "python"
    if (local / "trace_alloc").is_dir() and str(local) not in sys.path:
        sys.path.insert(0, str(local))
    import trace_alloc  # type: ignore
    return trace_alloc


def learner():
    """trace_alloc.learn, the library's α, τ learner (from the repository's python/ when not installed)."""
    local = str(REPO / "python")
    if local not in sys.path:
        sys.path.insert(0, local)
    from trace_alloc import learn  # type: ignore

    return learn


def token_sketch():
    """The package's default token sketch (`trace_alloc.sketch.TokenSketch()`): the turn embedding
    of `--set embedding=sketch`, as a trainer without hidden states would send it."""
    _load_package()
    from trace_alloc.sketch import TokenSketch  # type: ignore

    return TokenSketch()


class AllocatorClient:
    """A live forest in one `serve --stdio` process, kept equal to the trainer's trees by `sync_forest`."""

    def __init__(self, rule: str | None = None):
        pkg = _load_package()
        self.forests_sent = 0
        self.nodes_sent: list[int] = []  # nodes per forest sent
        self._ids: list[str] = []
        self._client = pkg.Service(service_command(rule))
        self.transport = "trace_alloc package %s, binary add_forest (npz)" % getattr(pkg, "__version__", "?")
        t0 = time.perf_counter()
        self.service = self.stats()  # waits for the service to be up, so start-up is not counted per step
        self.startup_s = time.perf_counter() - t0

    def sync_forest(self, ids: list[str], tree_offset: np.ndarray, parent: np.ndarray, reward: np.ndarray,
                    visits: np.ndarray, uncertainty: np.ndarray, terminal: np.ndarray,
                    embedding: np.ndarray) -> None:
        """Makes the service's live forest exactly these trees (one row per node, trees in order):
        binary columns in one batch, replacing the trees when the ids are the same. Measured on
        the shared machine, a round trip costs more than the bytes, so this beats sending only
        the new nodes tree by tree."""
        same = list(ids) == self._ids
        if self._ids and not same:
            self._client.remove_trees(self._ids)
        # npz whether or not pyarrow is installed: the GPU machine has pyarrow and this one may not,
        # and the path tested here must be the one that runs there.
        self._client.add_forest(tree_offset, parent, reward, visits, uncertainty, terminal, embedding,
                                tree_id=list(ids), replace=same, container="npz")
        self._ids = list(ids)
        self.forests_sent += 1
        self.nodes_sent.append(int(tree_offset[-1]))

    def plan(self, total_budget: int, min_per_tree: int = 1, scores: bool = False, **settings) -> dict:
        """The plan as the service sent it (JSON shapes, camelCase); `settings`: other plan settings
        (e.g. `contest_gain`), as `trace_alloc.Service.plan_json` passes them on."""
        return self._client.plan_json(total_budget=total_budget, min_per_tree=min_per_tree, scores=scores, **settings)

    def set_params(self, alpha: float, tau: float) -> dict:
        return self._client.request("set-params", alpha=alpha, tau=tau)

    def stats(self) -> dict:
        return self._client.request("stats")

    def close(self) -> None:
        self._client.close()
