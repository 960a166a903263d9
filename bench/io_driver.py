"""The Python side of `npm run bench:io`: end to end from arrays in this process to a plan back
in this process, through each input path (bench/io.ts runs this and adds the in-process figures).

    python3 bench/io_driver.py --trees 4096 --branching 4 --depth 3 --dim 128 --cli "node dist/cli/main.js" --dir /tmp/x

Prints one JSON object: per path the seconds of every sample, whether its plan equals the
binary path's, and for the CLI paths the peak memory of each run. Services are started and
warmed up before the clock starts (a sidecar lives across training steps); the CLI paths start
a process each time, as the CLI does. The rounds of the `extend` path are written to --dir
(round-K.npz, round-K-rollouts.json, round-K-plan.json) so that bench/io.ts can replay them in
process and check the plans. With --profile-dir, one more (untimed) run of each path is made
under `node --cpu-prof`, its profiles in a folder per path.
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
ROUND_SHARE = 0.1  # trees that grow in a round


def plan_of(raw):
    plan = dict(raw)
    plan.pop("replanned", None)
    return plan


def serve(cli, node_flags=()):
    s = trace_alloc.Service(cli[:1] + list(node_flags) + cli[1:] + ["serve", "--stdio", "--backend", "cpu"])
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

    def __init__(self, cli, node_flags=()):
        self.cli = cli
        self.node_flags = node_flags
        self.service = None

    def round(self, send, warm_up):
        if self.service is None:
            self.service = serve(self.cli, self.node_flags)
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
            self.service = None


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


class Rounds:
    """(d) a training step's round through the Python package: new nodes under about a tenth of
    the trees (1 to 3 each, embeddings near their parent's) and a finished rollout down each
    new node, sent with `extend`, then the plan of the trees that changed. The forest is added
    once, untimed; round 0 warms up; every round is saved for bench/io.ts to replay in process."""

    def __init__(self, cli, cols, folder, seed, node_flags=()):
        self.service = serve(cli, node_flags)
        self.service.add_forest(**cols)
        self.service.plan_json(budget=BUDGET)
        self.cols = cols
        self.folder = Path(folder)
        self.rng = np.random.default_rng(seed)
        self.sizes = np.diff(cols["tree_offset"]).astype(np.int64)
        self.embedding = {}  # new nodes' embeddings by (tree, node), for their children's
        self.k = 0

    def make(self):
        cols, rng = self.cols, self.rng
        ids, offsets, emb = cols["tree_id"], cols["tree_offset"], cols["embedding"]
        grow = rng.choice(len(self.sizes), size=max(1, int(round(ROUND_SHARE * len(self.sizes)))), replace=False)
        tree_id, parent, rows_emb, rollouts = [], [], [], []
        for t in sorted(grow.tolist()):
            for _ in range(int(rng.integers(1, 4))):
                size = int(self.sizes[t])
                p = int(rng.integers(0, size))
                base = emb[offsets[t] + p] if p < offsets[t + 1] - offsets[t] else self.embedding[(t, p)]
                e = (base + rng.normal(0, 0.3, size=base.shape)).astype(emb.dtype)
                self.embedding[(t, size)] = e
                tree_id.append(str(ids[t]))
                parent.append(p)
                rows_emb.append(e)
                rollouts.append({"tree": str(ids[t]), "leaf": size, "reward": float(rng.integers(0, 2))})
                self.sizes[t] += 1
        n = len(tree_id)
        rows = {"tree_id": np.array(tree_id), "parent": np.array(parent, dtype=np.int32), "embedding": np.stack(rows_emb),
                "reward": rng.random(n), "visits": rng.integers(0, 2, size=n).astype(np.float64)}
        return rows, rollouts

    def round(self):
        rows, rollouts = self.make()
        k = self.k
        self.k += 1
        np.savez(self.folder / ("round-%d.npz" % k), **rows)
        (self.folder / ("round-%d-rollouts.json" % k)).write_text(json.dumps(rollouts))
        s = self.service
        start = time.perf_counter()
        s.extend(**rows, rollouts=rollouts)
        plan = s.plan_json(budget=BUDGET, changed=True)
        elapsed = time.perf_counter() - start
        (self.folder / ("round-%d-plan.json" % k)).write_text(json.dumps(plan_of(plan)))
        return elapsed, None

    def close(self):
        self.service.close()


class InProcess:
    """bench/io-inprocess.ts, kept running: one in-process sample of the same work after each
    sample of a path, so that each ratio compares times taken moments apart."""

    def __init__(self, command):
        self.proc = subprocess.Popen(shlex.split(command), stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)
        assert self.proc.stdout.readline() == "ready\n"

    def ask(self, *words):
        self.proc.stdin.write("\t".join(str(w) for w in words) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError("bench/io-inprocess.ts stopped (exit %s)" % self.proc.wait())
        return json.loads(line)

    def close(self):
        self.proc.stdin.close()
        self.proc.wait()


def path_cli(cli, cols, forest, folder, kind, node_flags=()):
    """(c) the CLI on a file: write it, run trace-alloc score, read the plan. Returns the time,
    the plan, the CLI's peak resident memory (bytes) and the file's size."""
    path = Path(folder) / ("forest." + kind)
    start = time.perf_counter()
    if kind == "npz":
        trace_alloc.save_npz(path, **cols)
    elif kind == "arrow":
        import pyarrow as pa
        table = trace_alloc._columns.arrow_table(forest)
        with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_file(sink, table.schema) as writer:
            writer.write_table(table)
    else:
        with open(path, "w") as f:
            for first in range(0, forest.trees, 64):
                for tree in json_trees(forest, first, min(forest.trees, first + 64)):
                    f.write(json.dumps(tree, separators=(",", ":")))
                    f.write("\n")
    out_path = Path(folder) / "plan.json"
    rss_path = Path(folder) / "rss"
    command = cli[:1] + list(node_flags) + cli[1:] + ["score", str(path), "--backend", "cpu", "--budget", str(BUDGET)]
    # GNU time forks the CLI from a small process: a child forked from this (large) Python process
    # would report Python's resident set as its own peak (Linux carries it across exec).
    timed = os.path.exists("/usr/bin/time")
    with open(out_path, "wb") as out:
        run = subprocess.run((["/usr/bin/time", "-f", "%M", "-o", str(rss_path)] if timed else []) + command, stdout=out, stderr=subprocess.PIPE)
    assert run.returncode == 0, run.stderr.decode()
    plan = json.loads(out_path.read_text())
    elapsed = time.perf_counter() - start
    size = path.stat().st_size
    os.unlink(path)
    peak = int(rss_path.read_text().strip().splitlines()[-1]) * 1024 if timed else None
    return elapsed, plan, peak, size


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


TOUCH = "const b=new Uint8Array(Number(process.argv[1]));for(let i=0;i<b.length;i+=4096)b[i]=1;"


def path_touch(nbytes):
    """The fresh-memory floor of a CLI run: a new Node process that places `nbytes` in fresh
    memory (one write per page), start-up included, as the CLI must for a file's arrays."""
    start = time.perf_counter()
    subprocess.run(["node", "-e", TOUCH, str(nbytes)], check=True)
    return time.perf_counter() - start, None


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
    ap.add_argument("--paths", default="json-stdio,arrow-stdio,npz-stdio,round-stdio,cli-npz,cli-arrow,cli-jsonl,floor,touch")
    ap.add_argument("--profile-dir", help="also run each path once under node --cpu-prof, profiles in DIR/<path>/")
    ap.add_argument("--inprocess", required=True, help="the command line of bench/io-inprocess.ts")
    args = ap.parse_args()
    cli = shlex.split(args.cli)
    cols = regular_forest(args.trees, args.branching, args.depth, args.dim, args.seed)
    forest = trace_alloc.check_forest(**cols)
    np.savez(Path(args.dir) / "in-process.npz", **forest.columns())  # for the in-process figures (bench/io.ts)
    have_arrow = trace_alloc._columns.have_pyarrow()
    arrow_bytes = trace_alloc._columns.StreamedPayload(trace_alloc._columns.arrow_table(forest)).nbytes if have_arrow else None
    npz_bytes = len(trace_alloc._columns.npz_bytes(forest))
    results = {"trees": forest.trees, "nodes": forest.nodes, "dim": args.dim, "embeddingBytes": int(forest.embedding.nbytes),
               "arrowStreamBytes": arrow_bytes, "npzBytes": npz_bytes, "pyarrow": have_arrow, "numpy": np.__version__,
               "python": sys.version.split()[0], "paths": {}}

    inproc = InProcess(args.inprocess)
    forest_file = str(Path(args.dir) / "in-process.npz")

    def runners(node_flags=(), folder=args.dir, paired=False):
        warm = {name: Warm(cli, node_flags) for name in ("json-stdio", "arrow-stdio", "npz-stdio")}
        rounds = {}

        def round_path():
            if "r" not in rounds:
                rounds["r"] = Rounds(cli, cols, folder, args.seed + 1, node_flags)
                rounds["r"].round()  # round 0: warm-up, not timed (replayed in process, not timed either)
                if paired:
                    inproc.ask("round", folder, 0)
            return rounds["r"].round()

        table = {
            "json-stdio": lambda: warm["json-stdio"].round(send_json(forest), send_json(forest, 64)),
            "arrow-stdio": lambda: warm["arrow-stdio"].round(send_binary(cols, "arrow"), send_binary(cols, "arrow", 64)),
            "npz-stdio": lambda: warm["npz-stdio"].round(send_binary(cols, "npz"), send_binary(cols, "npz", 64)),
            "round-stdio": round_path,
            "cli-npz": lambda: path_cli(cli, cols, forest, args.dir, "npz", node_flags),
            "cli-arrow": lambda: path_cli(cli, cols, forest, args.dir, "arrow", node_flags),
            "cli-jsonl": lambda: path_cli(cli, cols, forest, args.dir, "jsonl", node_flags),
            "floor": lambda: path_floor(arrow_bytes or npz_bytes),
            "touch": lambda: path_touch(npz_bytes),
        }

        def last_round():
            return rounds["r"].k - 1

        table["_last_round"] = last_round

        def close(name):
            if name in warm:
                warm[name].close()
            if name == "round-stdio" and "r" in rounds:
                rounds.pop("r").close()
        return table, close

    table, close = runners(paired=True)
    reference = None
    for name in args.paths.split(","):
        if name in ("arrow-stdio", "cli-arrow") and not have_arrow:
            results["paths"][name] = {"skipped": "pyarrow is not installed"}
            continue
        samples = args.json_samples if name in ("json-stdio", "cli-jsonl") else args.samples
        entry = {"seconds": [], "inProcess": []}
        plan = None
        for _ in range(samples):
            out = table[name]()
            entry["seconds"].append(out[0])
            plan = out[1]
            # The same work in process, right after: the round just made, or the whole forest.
            if name == "round-stdio":
                paired = inproc.ask("round", args.dir, table["_last_round"]())
                entry["inProcess"].append(paired["seconds"])
                entry["samePlan"] = entry.get("samePlan", True) and paired["samePlan"]
            else:
                paired = inproc.ask("whole", forest_file)
                entry["inProcess"].append(paired["seconds"])
                results["groups"], results["threads"] = paired["groups"], paired["threads"]
            if len(out) > 2 and out[2] is not None:
                entry.setdefault("peakRssBytes", []).append(out[2])
                entry["fileBytes"] = out[3]
        if plan is not None:
            if reference is None:
                reference = plan
            entry["samePlan"] = plan == reference
        results["paths"][name] = entry
        close(name)
        print("  %-12s %s" % (name, " ".join("%.3f" % s for s in entry["seconds"])), file=sys.stderr, flush=True)

    if args.profile_dir:
        # One more run of each timed path under the profiler. A service's profile counts from the
        # start of its last round (profileFrom, CLOCK_MONOTONIC microseconds, V8's profile clock):
        # its warm-up and a first, cold round come before, as in the timed samples.
        results["profileFrom"] = {}
        for name in args.paths.split(","):
            if name in ("floor", "touch", "json-stdio", "cli-jsonl") or results["paths"][name].get("skipped"):
                continue
            folder = Path(args.profile_dir) / name
            folder.mkdir(parents=True, exist_ok=True)
            profiled, close_profiled = runners(("--cpu-prof", "--cpu-prof-dir=%s" % folder), folder)
            profiled[name]()
            if name.endswith("-stdio"):
                results["profileFrom"][name] = time.monotonic() * 1e6
                profiled[name]()
            close_profiled(name)
    inproc.close()
    print(json.dumps(results))


if __name__ == "__main__":
    main()
