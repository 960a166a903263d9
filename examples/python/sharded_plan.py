"""One global rollout budget over 4 ranks, each with its own trees and its own sidecar.

Spawns `--ranks` processes (torch.multiprocessing, gloo on CPU); each starts its own
`trace-alloc serve --stdio`, adds its part of a seeded forest (uneven parts; the second half
of the forest repeats the first, so equal tree weights and rounding ties fall on different
ranks) and calls `trace_alloc.distributed.global_plan_json`. The parent plans the whole
forest in one service and checks, tree by tree, that the ranks' plans are byte-identical to
it, under both rules. Prints one JSON verdict line; exits 1 on any difference.

    npm run build && pip install ./python torch
    python3 examples/python/sharded_plan.py --cmd "node dist/cli/main.js serve --stdio --backend cpu"
"""

import argparse
import json
import os
import shlex
import socket
import sys
import tempfile
from pathlib import Path

import numpy as np

try:
    import trace_alloc
except ImportError:  # run from a checkout without `pip install ./python`
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "python"))
    import trace_alloc
from trace_alloc.distributed import global_plan_json

RULES = ("v3", "v2", "v1")


def seeded_forest(trees, seed, dim=16):
    """`trees` random trees (2–40 nodes); trees trees/2.. repeat trees 0.. with other ids."""
    rng = np.random.default_rng(seed)
    half = []
    for _ in range(trees // 2):
        n = int(rng.integers(2, 41))
        parent = np.array([-1] + [int(rng.integers(0, max(1, v))) if rng.random() < 0.7 else v - 1 for v in range(1, n)], dtype=np.int32)
        emb = rng.normal(0, 1, size=(n, dim))
        for v in range(1, n):
            emb[v] = emb[parent[v]] + rng.normal(0, 0.4, size=dim)
        half.append({"parent": parent, "reward": rng.random(n).round(2), "visits": rng.integers(0, 5, size=n),
                     "uncertainty": rng.random(n) * 0.5, "terminal": rng.random(n) < 0.15, "embedding": emb})
    return [dict(t, id="q%d" % i) for i, t in enumerate(half + half)]


def add(service, trees):
    if not trees:
        return
    offset = np.cumsum([0] + [len(t["parent"]) for t in trees])
    col = lambda k: np.concatenate([t[k] for t in trees])
    service.add_forest(offset, col("parent"), col("reward"), col("visits"), col("uncertainty"), col("terminal"),
                       col("embedding"), tree_id=[t["id"] for t in trees])


def cut_points(trees, ranks, seed):
    """Uneven contiguous parts, one of them empty when there are enough ranks."""
    rng = np.random.default_rng(seed + 1)
    inner = sorted(int(x) for x in rng.integers(0, trees + 1, size=ranks - 1))
    if ranks > 2:
        inner[1] = inner[0]  # rank 1 holds no tree
    return [0] + inner + [trees]


def rank_main(rank, args, port, out_dir):
    import torch.distributed as dist
    dist.init_process_group("gloo", init_method="tcp://127.0.0.1:%d" % port, rank=rank, world_size=args.ranks)
    try:
        trees = seeded_forest(args.trees, args.seed)
        cuts = cut_points(len(trees), args.ranks, args.seed)
        mine = trees[cuts[rank]:cuts[rank + 1]]
        result = {}
        for rule in RULES:
            with trace_alloc.Service(shlex.split(args.cmd) + ["--rule", rule]) as ta:
                add(ta, mine)
                result[rule] = global_plan_json(ta, args.total, min_per_tree=args.min_per_tree, timeout=args.timeout)
        Path(out_dir, "rank%d.json" % rank).write_text(json.dumps(result))
    finally:
        dist.destroy_process_group()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cmd", default="trace-alloc serve --stdio --backend cpu", help="the sidecar command line")
    parser.add_argument("--ranks", type=int, default=4)
    parser.add_argument("--trees", type=int, default=64)
    parser.add_argument("--total", type=int, default=1001)
    parser.add_argument("--min-per-tree", type=int, default=2)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--timeout", type=float, default=120)
    args = parser.parse_args()

    import torch.multiprocessing as mp
    trees = seeded_forest(args.trees, args.seed)
    single = {}
    for rule in RULES:
        with trace_alloc.Service(shlex.split(args.cmd) + ["--rule", rule]) as ta:
            add(ta, trees)
            single[rule] = ta.plan_json(total_budget=args.total, min_per_tree=args.min_per_tree)
    with tempfile.TemporaryDirectory() as out_dir:
        mp.spawn(rank_main, args=(args, free_port(), out_dir), nprocs=args.ranks, join=True)
        ranks = [json.loads(Path(out_dir, "rank%d.json" % r).read_text()) for r in range(args.ranks)]

    differences = []
    for rule in RULES:
        union = [t for r in ranks for t in r[rule]["trees"]]
        expected = single[rule]["trees"]
        if len(union) != len(expected):
            differences.append("%s: %d trees from the ranks, %d from one service" % (rule, len(union), len(expected)))
        for got, want in zip(union, expected):
            if json.dumps(got) != json.dumps(want):
                differences.append("%s: tree %s differs" % (rule, want["id"]))
        for r in ranks:
            if (r[rule]["totalBudget"], r[rule]["unallocated"]) != (single[rule]["totalBudget"], single[rule]["unallocated"]):
                differences.append("%s: a rank's totalBudget/unallocated differ" % rule)
    # Twin trees (q_i and q_{i+T/2}) on different ranks have equal weights: count them.
    cuts = cut_points(args.trees, args.ranks, args.seed)
    where = lambda t: next(k for k in range(args.ranks) if cuts[k] <= t < cuts[k + 1])
    ties = sum(1 for t in range(args.trees // 2) if where(t) != where(t + args.trees // 2))
    verdict = {"identical": not differences, "ranks": args.ranks, "trees": args.trees, "rules": list(RULES),
               "twin_trees_across_ranks": ties, "total": args.total, "differences": differences[:5]}
    print(json.dumps(verdict))
    sys.exit(0 if not differences else 1)


if __name__ == "__main__":
    main()
