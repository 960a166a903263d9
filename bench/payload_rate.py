"""How fast `serve --stdio` takes in a binary batch: W1's Arrow stream (188 MB) sent as
`add-columns` round after round to one service, timing the write of the payload (the service
reading it from the pipe) apart from the wait for its answer (decoding, validating, copying into
the live forest). Give several command lines to compare builds in one run, round by round:

    python3 bench/payload_rate.py --cli "node dist/cli/main.js" --cli "node /path/to/other/dist/cli/main.js"

Prints, per command line, the seconds of every round and their medians (round 1, cold, apart).
"""
import argparse
import json
import shlex
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "python"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "python" / "tests"))
import trace_alloc  # noqa: E402
from trace_alloc import _columns  # noqa: E402
from conftest import regular_forest  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", action="append", required=True, help="a trace-alloc command line (repeat to compare)")
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--trees", type=int, default=4096)
    args = ap.parse_args()
    forest = trace_alloc.check_forest(**regular_forest(args.trees, 4, 3, 128, 20260401))
    services = [trace_alloc.Service(shlex.split(c) + ["serve", "--stdio", "--backend", "cpu"]) for c in args.cli]
    for s in services:
        s.stats()
    times = [{"write": [], "answer": []} for _ in services]
    for r in range(args.rounds):
        for s, t in zip(services, times):  # interleaved: each build's round r under the same load
            payload = _columns.StreamedPayload(_columns.arrow_table(forest))
            start = time.perf_counter()
            s._write((json.dumps({"id": "p%d" % r, "op": "add-columns", "bytes": payload.nbytes}) + "\n").encode())
            payload.write_into(s._write)
            written = time.perf_counter()
            reply = s._read_reply()
            answered = time.perf_counter()
            assert reply.get("ok"), reply
            t["write"].append(written - start)
            t["answer"].append(answered - written)
            s.remove_trees([str(i) for i in forest.tree_id] if forest.tree_id is not None else [str(i) for i in range(forest.trees)])
    for c, t in zip(args.cli, times):
        warm = lambda xs: statistics.median(xs[1:])  # noqa: E731
        print("%s\n  write  %s  (median of rounds 2-%d: %.3f s)\n  answer %s  (median: %.3f s)" % (
            c, " ".join("%.3f" % x for x in t["write"]), args.rounds, warm(t["write"]),
            " ".join("%.3f" % x for x in t["answer"]), warm(t["answer"])))
    for s in services:
        s.close()


if __name__ == "__main__":
    main()
