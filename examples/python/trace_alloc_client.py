"""A small, dependency-free client for `trace-alloc serve --stdio` (docs/PROTOCOL.md).

It starts the service as a child process and talks JSON Lines to it: one request per line
on its stdin, one response per line on its stdout, in order. Errors come back as
`TraceAllocError` with the protocol's code; the service and its forest stay up.

    from trace_alloc_client import TraceAllocClient
    with TraceAllocClient(["trace-alloc", "serve", "--stdio"]) as ta:
        ta.add_tree("q17", [{"parent": -1, "embedding": [0.1, 0.2]}])
        plan = ta.plan(total_budget=64)
"""

import itertools
import json
import os
import shlex
import subprocess

__all__ = ["TraceAllocClient", "TraceAllocError", "default_command"]


class TraceAllocError(Exception):
    """A request the service rejected. `code` is the protocol error code; `tree`, `node`
    and `field` say where, when the error is about a value."""

    def __init__(self, error):
        self.code = error.get("code", "internal")
        self.tree = error.get("tree")
        self.node = error.get("node")
        self.field = error.get("field")
        super().__init__("%s: %s" % (self.code, error.get("message", "")))


def default_command():
    """The service command: $TRACE_ALLOC_CMD (a shell-quoted string) or `trace-alloc serve --stdio`."""
    cmd = os.environ.get("TRACE_ALLOC_CMD")
    return shlex.split(cmd) if cmd else ["trace-alloc", "serve", "--stdio"]


class TraceAllocClient:
    def __init__(self, command=None, cwd=None):
        self._ids = itertools.count(1)
        self._proc = subprocess.Popen(
            command or default_command(),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            cwd=cwd,
            text=True,
            encoding="utf-8",
            bufsize=1,  # line buffered: each request goes out when its line ends
        )

    # -- transport ---------------------------------------------------------------------

    def send_raw(self, line):
        """Sends one raw line and returns the decoded response object (for tests and debugging)."""
        self._proc.stdin.write(line.rstrip("\n") + "\n")
        self._proc.stdin.flush()
        reply = self._proc.stdout.readline()
        if not reply:
            raise ConnectionError("trace-alloc serve exited (exit code %s)" % self._proc.poll())
        return json.loads(reply)

    def request(self, op, **fields):
        """Sends `{"op": op, "id": n, **fields}`; returns `result` or raises TraceAllocError."""
        rid = next(self._ids)
        body = {"id": rid, "op": op}
        body.update({k: v for k, v in fields.items() if v is not None})
        reply = self.send_raw(json.dumps(body, separators=(",", ":"), allow_nan=False))
        if reply.get("id") != rid:
            raise ConnectionError("response id %r does not match request id %r" % (reply.get("id"), rid))
        if not reply.get("ok"):
            raise TraceAllocError(reply.get("error", {}))
        return reply["result"]

    # -- operations --------------------------------------------------------------------

    def add_tree(self, tree_id, nodes):
        """Adds one rollout tree; `nodes` as in SPEC §1 (node 0 is the root)."""
        return self.request("add-tree", tree={"id": tree_id, "nodes": nodes})

    def add_trees(self, trees):
        """Adds several trees at once (all or none): a list of {"id": ..., "nodes": [...]}."""
        return self.request("add-tree", trees=trees)

    def add_nodes(self, tree_id, nodes):
        """Appends nodes (each with a "parent" index); returns {"first": index of the first new node, ...}."""
        return self.request("add-nodes", tree=tree_id, nodes=nodes)

    def update(self, tree_id, node, reward=None, visits=None, uncertainty=None, terminal=None):
        return self.request("update", tree=tree_id, node=node, reward=reward, visits=visits,
                            uncertainty=uncertainty, terminal=terminal)

    def update_many(self, updates):
        """Several updates at once (all or none): dicts with "tree", "node" and the fields to set."""
        return self.request("update", updates=updates)

    def finish_rollout(self, tree_id, reward, path=None, leaf=None):
        """A rollout finished with `reward` along `path` (root first) or down to `leaf`."""
        return self.request("finish-rollout", tree=tree_id, reward=reward, path=path, leaf=leaf)

    def remove_tree(self, tree_id):
        return self.request("remove-tree", tree=tree_id)

    def remove_trees(self, tree_ids):
        return self.request("remove-tree", trees=list(tree_ids))

    def plan(self, budget=None, total_budget=None, min_per_tree=None, scores=False, trees=None,
             changed=False, **allocation):
        """SPEC §4 plan (SPEC §5 JSON). `allocation` takes pruneRatio, widen, baseDepth,
        depthGain, minDepth, maxDepth. `changed=True` returns only the trees re-planned."""
        return self.request("plan", budget=budget, totalBudget=total_budget, minPerTree=min_per_tree,
                            scores=scores or None, trees=trees, changed=changed or None, **allocation)

    def scores(self, trees=None):
        return self.request("scores", trees=trees)

    def stats(self):
        return self.request("stats")

    def set_params(self, alpha=None, tau=None):
        return self.request("set-params", alpha=alpha, tau=tau)

    # -- lifetime ----------------------------------------------------------------------

    def close(self, timeout=10):
        """Ends the session (end of input) and waits for the service to exit; returns its exit code."""
        if self._proc.stdin and not self._proc.stdin.closed:
            self._proc.stdin.close()
        try:
            return self._proc.wait(timeout=timeout)
        finally:
            if self._proc.stdout:
                self._proc.stdout.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False
