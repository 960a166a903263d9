"""What a small round costs through `serve --stdio`: a synthetic forest the size of the one
`examples/llm` sends every turn (8 trees of 40 nodes, 32-wide embeddings, about 47 KB as `.npz`)
replaced with `add_forest(replace=True)` and planned, round after round. It compares the client
sending each binary request in one write (`Service.coalesce_bytes`, the default) with streaming
its parts (coalesce_bytes = 0, what every request did before), two services side by side,
alternating in blocks of rounds so both see the same load:

    python3 bench/small_rounds.py [--rounds 2000] [--block 50]

Prints, per mode, the median and mean milliseconds of the add-columns request, of the plan, and
of the writes one add-columns made, after a warm-up of --warmup rounds each (not counted).
"""
import argparse
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "python"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "python" / "tests"))
import trace_alloc  # noqa: E402
from conftest import regular_forest  # noqa: E402

MODES = {"one write": 1 << 20, "streamed": 0}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=2000, help="counted rounds per mode")
    ap.add_argument("--warmup", type=int, default=300, help="uncounted rounds per mode first")
    ap.add_argument("--block", type=int, default=50, help="rounds in a row before switching mode")
    args = ap.parse_args()
    # 8 trees of 1 + 3 + 9 + 27 nodes, 32-wide float32 embeddings: about 47 KB as npz.
    cols = regular_forest(trees=8, branching=3, depth=3, dim=32, seed=1)
    budget = 8 * 12
    argv = trace_alloc.find_command() + ["serve", "--stdio", "--backend", "cpu"]
    services = {m: trace_alloc.Service(argv) for m in MODES}
    times = {m: {"add": [], "plan": [], "writes": 0} for m in MODES}

    def counted(m, write):
        def counting_write(data):
            times[m]["writes"] += 1
            write(data)
        return counting_write

    try:
        for m, s in services.items():
            s.coalesce_bytes = MODES[m]
            s._write = counted(m, s._write)
            s.add_forest(**cols)
            for _ in range(args.warmup):
                s.add_forest(**cols, replace=True)
                s.plan_json(total_budget=budget)
            times[m]["writes"] = 0
        done = 0
        while done < args.rounds:
            for m, s in services.items():
                for _ in range(min(args.block, args.rounds - done)):
                    t0 = time.perf_counter()
                    s.add_forest(**cols, replace=True)
                    t1 = time.perf_counter()
                    s.plan_json(total_budget=budget)
                    t2 = time.perf_counter()
                    times[m]["add"].append(t1 - t0)
                    times[m]["plan"].append(t2 - t1)
            done += args.block
    finally:
        for s in services.values():
            s.close()
    load = os.getloadavg()[0]
    print(f"{args.rounds} rounds per mode after {args.warmup} warm-up rounds, blocks of {args.block}, load average {load:.2f}")
    print("| mode | add-columns ms (median / mean) | plan ms (median / mean) | writes per add-columns |")
    print("|---|---|---|---|")
    for m, t in times.items():
        n = len(t["add"])  # rounds; each round's plan request is one line, one write
        print(f"| {m} | {1e3 * statistics.median(t['add']):.3f} / {1e3 * statistics.fmean(t['add']):.3f} "
              f"| {1e3 * statistics.median(t['plan']):.3f} / {1e3 * statistics.fmean(t['plan']):.3f} | {t['writes'] / n - 1:.1f} |")


if __name__ == "__main__":
    main()
