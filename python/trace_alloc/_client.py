"""The client of `trace-alloc serve --stdio` (JSON Lines, plus binary batches for add_forest)."""
from __future__ import annotations

import io
import itertools
import json
import math
import numbers
import os
import shlex
import shutil
import subprocess
import threading
from pathlib import Path
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple, Union

import numpy as np

from ._columns import (ArrayLike, NpzPayload, StreamedPayload, arrow_table, check_forest, check_rows, have_pyarrow,
                       rows_arrow_stream, rows_npz_bytes)
from ._deadline import Deadline
from ._errors import TraceAllocError
from ._plan import Placement, Plan

#: The allocation rules a service of this version knows (docs/ALGORITHM.md).
RULES = ("v1", "v2", "v3", "v4", "v5")
from ._values import TreeValues

__all__ = ["DEFAULT_TIMEOUT", "Service", "find_command"]

#: Seconds a request may take, from sending it to its whole reply, before the client gives up
#: (`Service(timeout=...)`; None waits forever). Far above any real request (adding W1 as bytes
#: takes seconds), so reaching it means the service hangs or was stopped.
DEFAULT_TIMEOUT = 300.0


# The Node runtime a platform wheel carries (`npm run build:wheel`): Node, the built CLI, its
# runtime node_modules. Absent from a wheel built without it and from a source checkout.
_RUNTIME = Path(__file__).resolve().parent / "_runtime"
# The checkout a `pip install ./python` was built from (written by build-backend/trace_alloc_build.py:
# {"checkout": "/abs/path"}); its `dist/cli/main.js` is the service. Absent from every other build.
_CHECKOUT_RECORD = Path(__file__).resolve().parent / "_checkout.json"
_REMEDIES = ("install the trace-alloc wheel built for this platform, which carries Node and the service "
             "(`npm run build:wheel` in a trace-alloc checkout, then `pip install python/dist/trace_alloc-*.whl`); "
             "or, with Node.js >= 20, run `npm ci` in a trace-alloc checkout and `pip install ./python` from it "
             "(the package then runs that checkout's CLI); or set TRACE_ALLOC_BIN to a trace-alloc executable "
             "or to a checkout's dist/cli/main.js")


def _bundled() -> Optional[List[str]]:
    """The bundled `node` and `main.js`, when this package carries the runtime."""
    node = _RUNTIME / ("node.exe" if os.name == "nt" else "node")
    main = _RUNTIME / "app" / "dist" / "cli" / "main.js"
    if not (node.is_file() and main.is_file()):
        return None
    if not os.access(str(node), os.X_OK):
        raise TraceAllocError("service_error", "the bundled Node runtime %s is not executable (the installer dropped its "
                              "mode bits): reinstall the wheel with pip, or chmod +x it" % node)
    return [str(node), str(main)]


def _node_for(script: Path) -> List[str]:
    """`node script`: Node from PATH, else the bundled one; a TraceAllocError naming what to install when neither exists."""
    node = shutil.which("node")
    if node is None:
        bundled = _bundled()
        if bundled is None:
            raise TraceAllocError("service_error", "found %s but no `node` on PATH to run it: install Node.js >= 20, or %s"
                                  % (script, _REMEDIES))
        node = bundled[0]
    return [node, str(script)]


def _from_env(value: str) -> List[str]:
    """`$TRACE_ALLOC_BIN` as a command line, refused at once (naming the path) when it names nothing runnable."""
    path = Path(value).expanduser()
    what = "TRACE_ALLOC_BIN=%s" % value
    expect = "set it to a trace-alloc executable or to a checkout's dist/cli/main.js, or unset it"
    if path.is_dir():
        main = path / "dist" / "cli" / "main.js"
        hint = "did you mean TRACE_ALLOC_BIN=%s? " % main if main.is_file() else ""
        raise TraceAllocError("service_error", "%s is a folder, not the service: %s%s" % (what, hint, expect))
    if value.endswith((".js", ".mjs")):
        if not path.is_file():
            raise TraceAllocError("service_error", "%s: no such file (%s): %s" % (what, path.resolve(), expect))
        return _node_for(path.resolve())
    if os.sep in value or (os.altsep and os.altsep in value):
        if not path.is_file():
            raise TraceAllocError("service_error", "%s: no such file (%s): %s" % (what, path.resolve(), expect))
        if not os.access(str(path), os.X_OK):
            raise TraceAllocError("service_error", "%s is not executable: chmod +x it, or %s" % (what, expect))
        return [str(path.resolve())]
    on_path = shutil.which(value)
    if on_path is None:
        raise TraceAllocError("service_error", "%s: no such command on PATH: %s" % (what, expect))
    return [on_path]


def _recorded_checkout() -> Tuple[Optional[Path], Optional[str]]:
    """The built `main.js` of the checkout this package was installed from, or why there is none usable."""
    try:
        checkout = Path(json.loads(_CHECKOUT_RECORD.read_text(encoding="utf-8"))["checkout"])
    except (OSError, ValueError, KeyError, TypeError):
        return None, None  # not installed from a checkout (or the record is unreadable: then as if not)
    main = checkout / "dist" / "cli" / "main.js"
    if main.is_file():
        return main, None
    if not checkout.is_dir():
        return None, ("this package was installed from the trace-alloc checkout %s, which is no longer there "
                      "(reinstall it from a checkout)" % checkout)
    return None, ("this package was installed from the trace-alloc checkout %s, which has no built CLI (%s): "
                  "run `npm ci` or `npm run build` there" % (checkout, main))


def find_command() -> List[str]:
    """The `trace-alloc` executable, as a command line (without `serve --stdio`):

    1. `$TRACE_ALLOC_BIN`: a path to the `trace-alloc` executable, or to `dist/cli/main.js`
       (run with `node`); a path that names nothing runnable is refused here, naming it;
    2. the runtime this package carries (the platform wheel: its own Node and CLI);
    3. the built `dist/cli/main.js` of the checkout this package was installed from
       (`pip install ./python` records it), run with `node`;
    4. `trace-alloc` on `PATH` (`node_modules/.bin` on PATH, or a checkout's `npm link`);
    5. `dist/cli/main.js` of a trace-alloc checkout above the current folder or this package
       (`npm run build` there first);
    6. `node_modules/trace-alloc/dist/cli/main.js` above the current folder (a Node project
       that depends on trace-alloc).

    Nothing found raises `TraceAllocError` (`service_error`) saying what to do; nothing is
    downloaded (no `npx`).
    """
    env = os.environ.get("TRACE_ALLOC_BIN")
    if env:
        return _from_env(env)
    bundled = _bundled()
    if bundled:
        return bundled
    recorded, unusable = _recorded_checkout()
    if recorded is not None:
        return _node_for(recorded)
    on_path = shutil.which("trace-alloc")
    if on_path:
        return [on_path]
    for start in (Path.cwd(), Path(__file__).resolve().parent):
        for folder in (start, *start.parents):
            main = folder / "dist" / "cli" / "main.js"
            if main.is_file() and (folder / "package.json").is_file():
                return _node_for(main)
    for folder in (Path.cwd(), *Path.cwd().parents):
        main = folder / "node_modules" / "trace-alloc" / "dist" / "cli" / "main.js"
        if main.is_file():
            return _node_for(main)
    raise TraceAllocError("service_error", "cannot find the trace-alloc service: %s%s"
                          % (unusable + "; or " if unusable else "", _REMEDIES))


def _first_non_finite(value: Any, path: str) -> Optional[tuple]:
    if isinstance(value, numbers.Real) and not isinstance(value, numbers.Integral) and not math.isfinite(float(value)):
        return path, float(value)
    if isinstance(value, Mapping):
        for k, v in value.items():
            found = _first_non_finite(v, "%s.%s" % (path, k) if path else str(k))
            if found:
                return found
    elif isinstance(value, (list, tuple)) or hasattr(value, "tolist"):
        for i, v in enumerate(value.tolist() if hasattr(value, "tolist") else value):
            found = _first_non_finite(v, "%s[%d]" % (path, i))
            if found:
                return found
    return None


def _plain(value: Any) -> Any:
    """numpy (and torch) scalars and arrays as the Python numbers and lists JSON can hold, for
    `json.dumps(default=...)`: an `np.int64` budget or an `np.float32` reward is a number."""
    if isinstance(value, np.bool_):  # not a numbers.Integral
        return bool(value)
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        return float(value)
    if hasattr(value, "tolist"):  # numpy arrays and 0-d values, torch tensors
        return value.tolist()
    raise TypeError("Object of type %s is not JSON serializable" % type(value).__name__)


def _non_finite_error(op: str, body: Mapping[str, Any]) -> TraceAllocError:
    found = _first_non_finite(body, "")
    path, value = found if found else ("?", float("nan"))
    tree = body.get("tree") if isinstance(body.get("tree"), str) else None
    node = body.get("node") if isinstance(body.get("node"), int) else None
    where = "".join(("tree %s, " % json.dumps(tree) if tree is not None else "", "node %d, " % node if node is not None else ""))
    return TraceAllocError("invalid_value", '%s: %sfield "%s": must be a finite number, got %s' % (op, where, path, value),
                           tree=tree, node=node, field=path)


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(w[:1].upper() + w[1:] for w in rest)


class Service:
    """A running `trace-alloc serve --stdio` and its live forest; one method per protocol op.

        with Service(backend="cpu") as ta:
            ta.add_forest(tree_offset, parent, reward, visits, uncertainty, terminal, embedding)
            plan = ta.plan(total_budget=4096)

    Every rejection raises `TraceAllocError`; the service and its forest stay usable after it.
    `command` is the whole command line (then `backend`, `dim`, `alpha`, `tau` are not added);
    by default it is `find_command() + ["serve", "--stdio", ...]`.

    `timeout` (seconds, default `DEFAULT_TIMEOUT`; None: wait forever; also an attribute to
    change later) bounds each request from sending it to its whole reply. A request past it
    raises `TraceAllocError` with code "timeout" and stops the service (its replies could no
    longer be matched to requests): start a new `Service` and add the trees again.
    """

    #: Binary requests (add-columns, extend) up to this many payload bytes are sent in one write;
    #: larger ones are streamed from the arrays, never copied whole.
    coalesce_bytes = 1 << 20

    def __init__(self, command: Optional[Union[Sequence[str], str]] = None, *, backend: Optional[str] = None,
                 dim: Optional[int] = None, alpha: Optional[float] = None, tau: Optional[float] = None,
                 cwd: Optional[str] = None, env: Optional[Mapping[str, str]] = None,
                 timeout: Optional[float] = DEFAULT_TIMEOUT) -> None:
        self.timeout = timeout
        if command is None:
            argv = find_command() + ["serve", "--stdio"]
            for flag, value in (("--backend", backend), ("--dim", dim), ("--alpha", alpha), ("--tau", tau)):
                if value is not None:
                    argv += [flag, str(value)]
        else:
            argv = shlex.split(command) if isinstance(command, str) else list(command)
        self._ids = itertools.count(1)
        try:
            self._proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, cwd=cwd,
                                          env=None if env is None else dict(env), bufsize=0)
        except OSError as err:
            raise TraceAllocError("service_error", "cannot start %s: %s" % (argv[0], err)) from None

    # -- transport ---------------------------------------------------------------------------

    def _write(self, data: Any) -> None:
        view = memoryview(data).cast("B")
        try:
            while view.nbytes:  # a raw pipe may take part of a large write
                written = self._proc.stdin.write(view)  # type: ignore[union-attr]
                view = view[written or 0:]
        except (BrokenPipeError, ValueError, OSError):
            raise self._exited() from None

    def _exited(self) -> TraceAllocError:
        deadline = getattr(self, "_deadline", None)
        if deadline is not None and deadline.expired is not None:
            op, seconds = deadline.expired
            return TraceAllocError("timeout", "%s: no reply within %g s; the service was stopped (its replies could no "
                                   "longer be matched to requests): start a new Service" % (op, seconds))
        return TraceAllocError("service_error", "trace-alloc serve exited (exit code %s)" % self._proc.poll())

    def _reader(self) -> Any:
        """The service's stdout, buffered: its raw pipe would be read one byte per system call."""
        reader = getattr(self, "_buffered", None)
        if reader is None:
            reader = self._buffered = io.BufferedReader(self._proc.stdout, 1 << 16)  # type: ignore[arg-type]
        return reader

    def _read_reply(self) -> Dict[str, Any]:
        try:
            line = self._reader().readline()
        except (ValueError, OSError):
            raise self._exited() from None
        if not line:
            raise self._exited()
        try:
            reply = json.loads(line)
        except ValueError as err:  # not JSON, or not UTF-8
            raise TraceAllocError("service_error", "the service sent a line that is not a JSON reply (%s): %r"
                                  % (err, line[:200])) from None
        if not isinstance(reply, dict):
            raise TraceAllocError("service_error", "the service sent %r, not a reply object" % (line[:200],))
        return reply

    def _within_timeout(self, op: str) -> Any:
        """Arms the deadline for one request: past it, the service is stopped, which ends a blocked write or read."""
        deadline = getattr(self, "_deadline", None)
        if deadline is None:
            deadline = self._deadline = Deadline(self.kill)
        return deadline.running(op, self.timeout)

    def send_raw(self, line: str) -> Dict[str, Any]:
        """Sends one raw line; returns the decoded response object (for tests and debugging)."""
        with self._within_timeout(line[:40]):
            self._write((line.rstrip("\n") + "\n").encode("utf-8"))
            return self._read_reply()

    def _finish(self, rid: int, reply: Mapping[str, Any]) -> Any:
        if reply.get("id") != rid:
            raise TraceAllocError("service_error", "response id %r does not match request id %r" % (reply.get("id"), rid))
        if not reply.get("ok"):
            error = reply.get("error")
            raise TraceAllocError.from_response(error if isinstance(error, Mapping) else {"code": "service_error", "message": repr(error)})
        if "result" not in reply:
            raise TraceAllocError("service_error", "the reply to request %r has no result" % (rid,))
        return reply["result"]

    def request(self, op: str, **fields: Any) -> Any:
        """Sends `{"op": op, "id": n, **fields}` (None fields left out); returns `result`.
        numpy scalars and arrays (an `np.int64` budget) are sent as numbers and lists."""
        rid = next(self._ids)
        body = {"id": rid, "op": op}
        body.update({k: v for k, v in fields.items() if v is not None})
        try:
            line = json.dumps(body, separators=(",", ":"), allow_nan=False, default=_plain)
        except ValueError:  # NaN or infinity: not JSON, refused before sending, with the field named
            raise _non_finite_error(op, body) from None
        except TypeError as err:
            raise TraceAllocError("invalid_request", "%s: %s" % (op, err)) from None
        with self._within_timeout(op):
            self._write((line + "\n").encode("utf-8"))
            return self._finish(rid, self._read_reply())

    def request_binary(self, op: str, payload: Any, **fields: Any) -> Any:
        """Sends a header line announcing the payload's length, then the payload (add-columns,
        extend): contiguous bytes, or a `StreamedPayload` written straight into the service."""
        rid = next(self._ids)
        streamed = isinstance(payload, (StreamedPayload, NpzPayload))
        try:
            view = None if streamed else memoryview(payload).cast("B")
        except (TypeError, ValueError) as err:
            raise TraceAllocError("invalid_request", "%s: the payload must be contiguous bytes: %s" % (op, err)) from None
        nbytes = payload.nbytes if streamed else view.nbytes
        body = {"id": rid, "op": op, "bytes": nbytes}
        body.update({k: v for k, v in fields.items() if v is not None})
        try:
            header = json.dumps(body, separators=(",", ":"), allow_nan=False, default=_plain)
        except (TypeError, ValueError) as err:
            raise TraceAllocError("invalid_request", "%s: %s" % (op, err)) from None
        head = (header + "\n").encode("utf-8")

        def send_payload(write: Any) -> None:
            if streamed:
                payload.write_into(write)
            else:
                write(view)

        with self._within_timeout(op):
            if nbytes <= self.coalesce_bytes:
                # A small request goes out in one write: each write to the pipe wakes the service,
                # which reads and buffers a piece, and a small forest's npz went out in 24 writes.
                whole = bytearray(head)
                send_payload(whole.extend)
                self._write(whole)
            else:
                self._write(head)
                send_payload(self._write)
            return self._finish(rid, self._read_reply())

    # -- operations ----------------------------------------------------------------------------

    def add_forest(self, tree_offset: ArrayLike, parent: ArrayLike, reward: ArrayLike, visits: ArrayLike,
                   uncertainty: ArrayLike, terminal: ArrayLike, embedding: ArrayLike,
                   tree_id: Optional[Sequence[str]] = None, *, replace: bool = False,
                   container: Optional[str] = None) -> Dict[str, Any]:
        """Adds many trees at once from columns (numpy arrays or tensors), sent as bytes.

        One row per node over all trees in tree order: `tree_offset` (T+1 row offsets),
        `parent` (tree-local, -1 for roots), `reward`, `visits`, `uncertainty`, `terminal`,
        `embedding` (N x D, float32 or float64), `tree_id` (T strings; default: the trees'
        positions in the live forest). `replace=True` replaces live trees with the same ids.
        `container`: "arrow" (needs pyarrow), "npz", or None (arrow when pyarrow is installed and
        dim > 0: pyarrow has no fixed-size list of length 0).
        All or nothing: a rejected batch changes nothing. Returns {trees, added, replaced}.
        """
        forest = check_forest(tree_offset, parent, reward, visits, uncertainty, terminal, embedding, tree_id)
        if container is None:
            container = "arrow" if have_pyarrow() and forest.embedding.shape[1] > 0 else "npz"
        if container == "arrow":
            payload: Any = StreamedPayload(arrow_table(forest))
        elif container == "npz":
            payload = NpzPayload(forest.columns())
        else:
            raise TraceAllocError("invalid_request", 'container must be "arrow" or "npz", got %r' % (container,))
        return self.request_binary("add-columns", payload, replace=True if replace else None)

    def extend(self, tree_id: Optional[Any] = None, parent: Optional[ArrayLike] = None, embedding: Optional[ArrayLike] = None,
               reward: Optional[ArrayLike] = None, visits: Optional[ArrayLike] = None,
               uncertainty: Optional[ArrayLike] = None, terminal: Optional[ArrayLike] = None, *,
               updates: Optional[Sequence[Mapping[str, Any]]] = None, rollouts: Optional[Sequence[Any]] = None,
               container: Optional[str] = None) -> Dict[str, Any]:
        """One round of growth in one request, all or none (docs/PROTOCOL.md, `extend`): new nodes
        for many trees as columns — one row per node: `tree_id` (the tree it joins), `parent`
        (tree-local: an existing node, or a new row of the same tree before it), `embedding`
        (rows x D), optional `reward`, `visits`, `uncertainty`, `terminal` — sent as bytes; then
        `updates` (dicts as for `update_many`, naming nodes that existed before) and finished
        `rollouts` (dicts {"tree", "leaf" or "path", "reward"}, or tuples (tree, leaf, reward)),
        whose paths may run through the new nodes. Returns {added, first: {tree: index of its
        first new node}, updated, rollouts}."""
        body: Dict[str, Any] = {}
        if updates:
            body["updates"] = list(updates)
        if rollouts:
            body["rollouts"] = [r if isinstance(r, Mapping) else {"tree": r[0], "leaf": r[1], "reward": r[2]} for r in rollouts]
        if tree_id is None:
            return self.request("extend", **body)
        rows = check_rows(tree_id, parent, embedding, reward, visits, uncertainty, terminal)
        if container is None:
            container = "arrow" if have_pyarrow() and rows.embedding.shape[1] > 0 else "npz"
        if container == "arrow":
            payload: Any = rows_arrow_stream(rows)
        elif container == "npz":
            payload = rows_npz_bytes(rows)
        else:
            raise TraceAllocError("invalid_request", 'container must be "arrow" or "npz", got %r' % (container,))
        return self.request_binary("extend", payload, **body)

    def add_tree(self, tree_id: str, nodes: List[Mapping[str, Any]]) -> Dict[str, Any]:
        """Adds one rollout tree; `nodes` are dicts (parent, reward, visits, uncertainty, terminal, embedding)."""
        return self.request("add-tree", tree={"id": tree_id, "nodes": nodes})

    def add_trees(self, trees: List[Mapping[str, Any]]) -> Dict[str, Any]:
        """Adds several trees at once (all or none): a list of {"id": ..., "nodes": [...]}."""
        return self.request("add-tree", trees=trees)

    def add_nodes(self, tree_id: str, nodes: List[Mapping[str, Any]]) -> Dict[str, Any]:
        """Appends nodes (each with a "parent" index); returns {"first": index of the first new node, ...}."""
        return self.request("add-nodes", tree=tree_id, nodes=nodes)

    def update(self, tree_id: str, node: int, reward: Optional[float] = None, visits: Optional[int] = None,
               uncertainty: Optional[float] = None, terminal: Optional[bool] = None) -> Dict[str, Any]:
        return self.request("update", tree=tree_id, node=node, reward=reward, visits=visits,
                            uncertainty=uncertainty, terminal=terminal)

    def update_many(self, updates: List[Mapping[str, Any]]) -> Dict[str, Any]:
        """Several updates at once (all or none): dicts with "tree", "node" and the fields to set."""
        return self.request("update", updates=updates)

    def finish_rollout(self, tree_id: str, reward: float, path: Optional[Sequence[int]] = None,
                       leaf: Optional[int] = None) -> Dict[str, Any]:
        """A rollout finished with `reward` along `path` (root first) or down to `leaf`."""
        return self.request("finish-rollout", tree=tree_id, reward=reward,
                            path=None if path is None else list(path), leaf=leaf)

    def remove_tree(self, tree_id: str) -> Dict[str, Any]:
        return self.request("remove-tree", tree=tree_id)

    def remove_trees(self, tree_ids: Iterable[str]) -> Dict[str, Any]:
        return self.request("remove-tree", trees=list(tree_ids))

    def plan(self, budget: Optional[Union[int, Mapping[str, int]]] = None, total_budget: Optional[int] = None,
             min_per_tree: Optional[int] = None, scores: bool = False, trees: Optional[Sequence[str]] = None,
             changed: bool = False, **options: Any) -> Plan:
        """Plans the forest (re-scoring only what changed). `options` are the other plan
        settings in snake_case or camelCase (prune_ratio, widen, base_depth, depth_gain,
        min_depth, max_depth, and any setting a newer service accepts), passed on as they are."""
        return Plan.from_json(self.plan_json(budget, total_budget, min_per_tree, scores, trees, changed, **options))

    def plan_json(self, budget: Optional[Union[int, Mapping[str, int]]] = None, total_budget: Optional[int] = None,
                  min_per_tree: Optional[int] = None, scores: bool = False, trees: Optional[Sequence[str]] = None,
                  changed: bool = False, **options: Any) -> Dict[str, Any]:
        """`plan`, as the JSON object the service sent (what `trace-alloc score` writes, plus `replanned`)."""
        extra = {_camel(k): v for k, v in options.items()}
        return self.request("plan", budget=budget, totalBudget=total_budget, minPerTree=min_per_tree,
                            scores=True if scores else None, trees=None if trees is None else list(trees),
                            changed=True if changed else None, **extra)

    def place(self, count: int, total_budget: int, release: Sequence[int] = (), min_per_tree: Optional[int] = None,
              **options: Any) -> List[Placement]:
        """Continuous placement (docs/PROTOCOL.md, `place`): releases the slots of the rollouts whose
        tickets are in `release`, plans the round of `total_budget` rollouts (the number the driver
        keeps running) with the evidence the service holds now, and returns `count` new rollouts,
        each at the node where that plan wants the most rollouts beyond those running there."""
        extra = {_camel(k): v for k, v in options.items()}
        result = self.request("place", count=count, totalBudget=total_budget, minPerTree=min_per_tree,
                              release=[int(t) for t in release] if release else None, **extra)
        return [Placement(p["tree"], int(p["node"]), int(p["depth"]), int(p["ticket"])) for p in result["placements"]]

    def global_shares(self, tree_floor: Optional[float] = None) -> Dict[str, Any]:
        """Phase 1 of a global budget over sharded services: liveness and weight of each tree
        (docs/PROTOCOL.md, "Many shards"). `trace_alloc.distributed.global_plan` does both phases."""
        return self.request("global-shares", treeFloor=tree_floor)

    def plan_shard_json(self, shares: Sequence[Mapping[str, Any]], shard: int, total_budget: int,
                        min_per_tree: Optional[int] = None, scores: bool = False,
                        trees: Optional[Sequence[str]] = None, **options: Any) -> Dict[str, Any]:
        """Phase 2: this service's part of the global plan, given every shard's `global_shares`
        in shard order and this one's index; the plan JSON, as `plan_json` returns it."""
        extra = {_camel(k): v for k, v in options.items()}
        return self.request("plan-shard", shares=list(shares), shard=shard, totalBudget=total_budget,
                            minPerTree=min_per_tree, scores=True if scores else None,
                            trees=None if trees is None else list(trees), **extra)

    def scores(self, trees: Optional[Sequence[str]] = None) -> Dict[str, Any]:
        return self.request("scores", trees=None if trees is None else list(trees))

    def values(self, trees: Optional[Sequence[str]] = None) -> List[TreeValues]:
        """Each listed tree (default: every live tree, in tree order) as the service holds it now:
        parent, mean reward, visits, uncertainty and terminal per node (no embeddings), so a
        trainer that backs rollouts up with `finish_rollout` keeps no second copy of its trees."""
        result = self.request("values", trees=None if trees is None else list(trees))
        return [TreeValues.from_json(t) for t in result["trees"]]

    def pipeline(self, requests: Sequence[Mapping[str, Any]]) -> List[Any]:
        """Sends several requests without waiting for each answer (one round trip instead of one
        per request) and returns their results in order. Each request is a dict with "op" and its
        fields. The service handles them strictly in order, so every request before a rejected one
        has taken effect and every one after it is still handled; the first rejection is raised
        (a `TraceAllocError`) once every answer has been read."""
        bodies: List[bytes] = []
        rids: List[int] = []
        for fields in requests:
            rid = next(self._ids)
            rids.append(rid)
            body = {"id": rid}
            body.update({k: v for k, v in fields.items() if v is not None})
            try:
                bodies.append(json.dumps(body, separators=(",", ":"), allow_nan=False, default=_plain).encode("utf-8") + b"\n")
            except ValueError:
                raise _non_finite_error(str(fields.get("op")), body) from None
            except TypeError as err:
                raise TraceAllocError("invalid_request", "%s: %s" % (fields.get("op"), err)) from None
        failure: List[BaseException] = []

        def write_all() -> None:
            # A thread, so that answers filling the service's output pipe can never block its input.
            try:
                for line in bodies:
                    self._write(line)
            except BaseException as err:  # noqa: BLE001 - handed to the caller below
                failure.append(err)

        replies = []
        with self._within_timeout("pipeline"):
            writer = threading.Thread(target=write_all, daemon=True)
            writer.start()
            try:
                for _ in bodies:
                    replies.append(self._read_reply())
            finally:
                writer.join()
        if failure:
            raise failure[0]
        results = []
        first_error: Optional[TraceAllocError] = None
        for rid, reply in zip(rids, replies):
            try:
                results.append(self._finish(rid, reply))
            except TraceAllocError as err:
                results.append(None)
                first_error = first_error or err
        if first_error is not None:
            raise first_error
        return results

    def stats(self) -> Dict[str, Any]:
        return self.request("stats")

    def set_params(self, alpha: Optional[float] = None, tau: Optional[float] = None, rule: Optional[str] = None) -> Dict[str, Any]:
        """Changes α, τ and/or the rule ("v5", "v4", "v3", "v2" or "v1"; the service's default when not given); every group is re-scored."""
        if rule is not None and rule not in RULES:
            raise TraceAllocError("invalid_options", "rule must be one of %s, got %r" % (", ".join('"%s"' % r for r in RULES), rule),
                                  field="rule")
        return self.request("set-params", alpha=alpha, tau=tau, rule=rule)

    # -- lifetime ------------------------------------------------------------------------------

    def close(self, timeout: float = 30) -> Optional[int]:
        """Ends the session (end of input) and waits for the service to exit; returns its exit code."""
        deadline = getattr(self, "_deadline", None)
        if deadline is not None:
            deadline.stop()
        proc = self._proc
        if proc.stdin and not proc.stdin.closed:
            try:
                proc.stdin.close()
            except OSError:
                pass
        try:
            return proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            return proc.wait()
        finally:
            if proc.stdout:
                proc.stdout.close()

    def kill(self) -> None:
        """Stops the service at once (one that missed a deadline: its replies can no longer be
        matched to requests). Its forest is gone; start a new `Service` to retry."""
        try:
            self._proc.kill()
        except OSError:
            pass

    def __enter__(self) -> "Service":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
