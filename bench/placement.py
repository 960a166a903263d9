"""Continuous placement's cost per refill, through the real sidecar (`serve --stdio`) and the Python
client, as `TreeRollout(concurrency=C)` pays it: one rollout ends, its new nodes and outcome go
to the service (`extend`, binary columns) and its slot is refilled (`place`, count 1).

    python3 bench/placement.py                       # 8 … 1024 trees; writes bench/results/placement-latest.{json,md}
    python3 bench/placement.py --trees 8,64 --refills 200 --out /tmp/p   # quicker, elsewhere

Per case: T trees (one prompt each, embeddings of dim 64), concurrency C = 2·T (the examples'
2 rollouts per prompt), a warm-up of max(2·C, 300) refills, then `--refills` timed refills. Each rollout
placed at node v grows a chain of 1–4 new steps below v, the last terminal, reward 1 with a
tree-specific chance, so trees grow and forks become contested as in training. The clock covers
the two requests (client encoding, pipe, service work, reply), not the simulated generation.
"""
import argparse
import json
import os
import platform
import shlex
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "python"))
import trace_alloc  # noqa: E402

DIM = 64


def pct(xs, p):
    s = sorted(xs)
    return s[min(len(s) - 1, max(0, int(np.ceil(p * len(s))) - 1))]


def run_case(cmd, trees: int, refills: int, seed: int) -> dict:
    rng = np.random.default_rng(seed)
    C = 2 * trees
    chance = rng.uniform(0.1, 0.9, size=trees)
    with trace_alloc.Service(cmd) as ta:
        ids = ["t%d" % t for t in range(trees)]
        ta.add_trees([{"id": i, "nodes": [{"embedding": [0.0] * DIM}]} for i in ids])
        size = {i: 1 for i in ids}
        # a running rollout: (ticket, tree, start node)
        running = [(p.ticket, p.tree, p.node) for p in ta.place(C, C)]
        ext, plc, tot = [], [], []
        warm = max(2 * C, 300)
        for k in range(warm + refills):
            j = int(rng.integers(len(running)))
            ticket, tree, start = running.pop(j)
            steps = int(rng.integers(1, 5))
            base = size[tree]
            parent = [start] + [base + i for i in range(steps - 1)]
            emb = rng.normal(size=(steps, DIM)).astype(np.float32)
            terminal = np.zeros(steps, dtype=bool)
            terminal[-1] = True
            reward = float(rng.random() < chance[int(tree[1:])])
            t0 = time.perf_counter()
            ta.extend(np.array([tree] * steps), np.array(parent, dtype=np.int64), emb,
                      uncertainty=rng.random(steps), terminal=terminal,
                      rollouts=[{"tree": tree, "leaf": base + steps - 1, "reward": reward}])
            t1 = time.perf_counter()
            new = ta.place(1, C, release=[ticket])
            t2 = time.perf_counter()
            size[tree] = base + steps
            running += [(p.ticket, p.tree, p.node) for p in new]
            if k >= warm:
                ext.append((t1 - t0) * 1e3)
                plc.append((t2 - t1) * 1e3)
                tot.append((t2 - t0) * 1e3)
        nodes = sum(size.values())
    def s(xs):
        return {"p50": pct(xs, 0.5), "p99": pct(xs, 0.99), "mean": float(np.mean(xs)), "n": len(xs)}
    return {"trees": trees, "concurrency": C, "nodes_at_end": nodes, "refill_ms": s(tot), "extend_ms": s(ext),
            "place_ms": s(plc)}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--trees", default="8,32,128,512,1024")
    ap.add_argument("--refills", type=int, default=1000)
    ap.add_argument("--cmd", default="node %s serve --stdio --backend cpu" % shlex.quote(str(ROOT / "dist" / "cli" / "main.js")))
    ap.add_argument("--out", default=str(ROOT / "bench" / "results"))
    args = ap.parse_args()
    cases = [run_case(args.cmd, int(t), args.refills, 1000 + int(t)) for t in args.trees.split(",")]
    load = os.getloadavg()
    result = {"command": " ".join(sys.argv), "service": args.cmd, "machine": {"cpus": os.cpu_count(), "load_avg": load,
              "python": platform.python_version(), "platform": platform.platform()}, "cases": cases}
    lines = ["# Continuous placement: one refill (extend + place), through `serve --stdio`", "",
             "`%s` — %d CPUs, load average %.1f / %.1f / %.1f at the end. Times in ms per refill "
             "(the client's encoding, the pipe, the service's re-score, re-plan and placement, the reply)."
             % (" ".join(["python3", "bench/placement.py"] + sys.argv[1:]), os.cpu_count(), *load), "",
             "| trees | concurrency | nodes at the end | refill p50 | refill p99 | extend p50 | place p50 | place p99 |",
             "|---|---|---|---|---|---|---|---|"]
    for c in cases:
        lines.append("| %d | %d | %d | %.2f | %.2f | %.2f | %.2f | %.2f |" % (
            c["trees"], c["concurrency"], c["nodes_at_end"], c["refill_ms"]["p50"], c["refill_ms"]["p99"],
            c["extend_ms"]["p50"], c["place_ms"]["p50"], c["place_ms"]["p99"]))
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "placement-latest.json").write_text(json.dumps(result, indent=1) + "\n")
    (out / "placement-latest.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
