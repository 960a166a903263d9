"""The Python side of `npm run bench:io`: end to end from arrays in this process to a plan back
in this process, through each input path (bench/io.ts runs this and adds the in-process figure).

    python3 bench/io_driver.py --trees 4096 --branching 4 --depth 3 --dim 128 --cli "node dist/cli/main.js" --dir /tmp/x

Prints one JSON object: per path the seconds of every sample, and whether its plan equals the
binary path's. Services are started and warmed up before the clock starts (a sidecar lives
across training steps); the CLI paths start a process each time, as the CLI does.
"""
import argparse
import json
import os
import shlex
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "python"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "python" / "tests"))
import trace_alloc  # noqa: E402
from conftest import regular_forest  # noqa: E402  (the seeded generator the package tests use)

BUDGET = 16  # per tree, the CLI default


def plan_of(raw):
    plan = dict(raw)
    plan.pop("replanned", None)
    return plan


def serve(cli):
    s = trace_alloc.Service(cli + ["serve", "--stdio", "--backend", "cpu"])
    s.stats()  # started and answering before the clock starts
    return s


def json_trees(forest, first, last):
    return [{"id": str(forest.tree_id[t]), "nodes": [
        {"parent": int(p), "reward": float(r), "visits": float(v), "uncertainty": float(u), "terminal": bool(x), "embedding": e}
        for p, r, v, u, x, e in zip(forest.parent[lo:hi].tolist(), forest.reward[lo:hi].tolist(), forest.visits[lo:hi].tolist(),
                                    forest.uncertainty[lo:hi].tolist(), forest.terminal[lo:hi].tolist(), forest.embedding[lo:hi].tolist())]}
        for t, lo, hi in ((t, int(forest.tree_offset[t]), int(forest.tree_offset[t + 1])) for t in range(first, last))]


class Warm:
    """One service per path, kept across samples as a sidecar is across training steps: an
    untimed round on the first 64 trees warms it up; after each round the trees are removed."""

    def __init__(self, cli):
        self.cli = cli
        self.service = None

    def round(self, send, warm_up):
        if self.service is None:
            self.service = serve(self.cli)
            warm_up(self.service)  # the same requests on the first 64 trees, not timed
            plan = self.service.plan_json(budget=BUDGET)
            self.service.remove_trees([t["id"] for t in plan["trees"]])
        s = self.service
        start = time.perf_counter()
        send(s)
        plan = s.plan_json(budget=BUDGET)
        elapsed = time.perf_counter() - start
        s.remove_trees([t["id"] for t in plan["trees"]])
        return elapsed, plan_of(plan)

    def close(self):
        if self.service is not None:
            self.service.close()


def send_json(forest, trees=None):
    """(a) JSON over stdio: add-tree requests of 64 trees each."""
    def send(s):
        last = forest.trees if trees is None else trees
        for first in range(0, last, 64):
            s.add_trees(json_trees(forest, first, min(last, first + 64)))
    return send


def send_binary(cols, container, trees=None):
    """(b) binary input over stdio: one add-columns batch."""
    if trees is not None:
        rows = int(cols["tree_offset"][trees])
        cols = {k: (v[:trees + 1] if k == "tree_offset" else v[:trees] if k == "tree_id" else v[:rows]) for k, v in cols.items()}
    return lambda s: s.add_forest(**cols, container=container)


def path_cli(cli, cols, forest, folder, kind):
    """(c) the CLI on a file: write it, run trace-alloc score, read the plan."""
    path = Path(folder) / ("forest." + kind)
    start = time.perf_counter()
    if kind == "npz":
        trace_alloc.save_npz(path, **cols)
    elif kind == "arrow":
        import pyarrow as pa
        table = pa.ipc.open_stream(trace_alloc._columns.arrow_stream(forest)).read_all()
        with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_file(sink, table.schema) as writer:
            writer.write_table(table)
    else:
        with open(path, "w") as f:
            for first in range(0, forest.trees, 64):
                for tree in json_trees(forest, first, min(forest.trees, first + 64)):
                    f.write(json.dumps(tree, separators=(",", ":")))
                    f.write("\n")
    run = subprocess.run(cli + ["score", str(path), "--backend", "cpu", "--budget", str(BUDGET)], capture_output=True)
    assert run.returncode == 0, run.stderr.decode()
    plan = json.loads(run.stdout)
    elapsed = time.perf_counter() - start
    os.unlink(path)
    return elapsed, plan


SINK = ("const n=Number(process.argv[1]);let got=0;process.stdout.write('ready\\n');"
        "process.stdin.on('data',c=>{got+=c.length;if(got>=n){process.stdout.write('ok\\n');process.exit(0);}});")


def path_floor(nbytes):
    """The pipe floor: the same number of bytes into a Node process that only counts them, one line back."""
    proc = subprocess.Popen(["node", "-e", SINK, str(nbytes)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0)
    assert proc.stdout.readline() == b"ready\n"
    payload = np.zeros(nbytes, dtype=np.uint8)
    start = time.perf_counter()
    proc.stdin.write(memoryview(payload))
    assert proc.stdout.readline() == b"ok\n"
    elapsed = time.perf_counter() - start
    proc.stdin.close()
    proc.wait()
    return elapsed, None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--trees", type=int, required=True)
    ap.add_argument("--branching", type=int, required=True)
    ap.add_argument("--depth", type=int, required=True)
    ap.add_argument("--dim", type=int, required=True)
    ap.add_argument("--seed", type=int, default=20260401)
    ap.add_argument("--cli", required=True, help="the trace-alloc command line")
    ap.add_argument("--dir", required=True, help="folder for the forest files")
    ap.add_argument("--samples", type=int, default=3)
    ap.add_argument("--json-samples", type=int, default=1, help="samples of the (slow) JSON paths")
    ap.add_argument("--paths", default="json-stdio,arrow-stdio,npz-stdio,cli-npz,cli-arrow,cli-jsonl,floor")
    args = ap.parse_args()
    cli = shlex.split(args.cli)
    cols = regular_forest(args.trees, args.branching, args.depth, args.dim, args.seed)
    forest = trace_alloc.check_forest(**cols)
    np.savez(Path(args.dir) / "in-process.npz", **forest.columns())  # for the in-process figure (bench/io.ts)
    arrow_bytes = trace_alloc._columns.arrow_stream(forest).size if trace_alloc._columns.have_pyarrow() else None
    results = {"trees": forest.trees, "nodes": forest.nodes, "dim": args.dim, "embeddingBytes": int(forest.embedding.nbytes),
               "arrowStreamBytes": arrow_bytes, "pyarrow": trace_alloc._columns.have_pyarrow(), "numpy": np.__version__,
               "python": sys.version.split()[0], "paths": {}}
    warm = {name: Warm(cli) for name in ("json-stdio", "arrow-stdio", "npz-stdio")}
    runners = {
        "json-stdio": (lambda: warm["json-stdio"].round(send_json(forest), send_json(forest, 64)), args.json_samples),
        "arrow-stdio": (lambda: warm["arrow-stdio"].round(send_binary(cols, "arrow"), send_binary(cols, "arrow", 64)), args.samples),
        "npz-stdio": (lambda: warm["npz-stdio"].round(send_binary(cols, "npz"), send_binary(cols, "npz", 64)), args.samples),
        "cli-npz": (lambda: path_cli(cli, cols, forest, args.dir, "npz"), args.samples),
        "cli-arrow": (lambda: path_cli(cli, cols, forest, args.dir, "arrow"), args.samples),
        "cli-jsonl": (lambda: path_cli(cli, cols, forest, args.dir, "jsonl"), args.json_samples),
        "floor": (lambda: path_floor(arrow_bytes or len(trace_alloc._columns.npz_bytes(forest))), args.samples),
    }
    reference = None
    for name in args.paths.split(","):
        if name.startswith("arrow") or name == "cli-arrow":
            if not trace_alloc._columns.have_pyarrow():
                results["paths"][name] = {"skipped": "pyarrow is not installed"}
                continue
        run, samples = runners[name]
        seconds = []
        plan = None
        for _ in range(samples):
            t, plan = run()
            seconds.append(t)
        entry = {"seconds": seconds}
        if plan is not None:
            if reference is None:
                reference = plan
            entry["samePlan"] = plan == reference
        results["paths"][name] = entry
        if name in warm:
            warm[name].close()
        print("  %-12s %s" % (name, " ".join("%.3f" % s for s in seconds)), file=sys.stderr, flush=True)
    print(json.dumps(results))


if __name__ == "__main__":
    main()
