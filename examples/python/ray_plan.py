"""One global rollout budget over 4 Ray actors, each with its own sidecar, on a local Ray cluster.

Starts a private Ray cluster on this machine (`trace_alloc.ray.init_local`: no dashboard, a small
object store), one sidecar actor per shard (`trace_alloc.ray.start_sidecars`), gives each its part
of the seeded forest of `sharded_plan.py` (uneven parts, one empty; twin trees with equal weights
on different actors) and plans through `trace_alloc.ray.global_plan_json` (`--repeats` times per
rule, timed: `plan_ms_p50`). One local service plans the whole forest; the actors' plans, tree by
tree, must be byte-identical to it under every rule. Prints one JSON verdict line; exits 1 on any
difference.

    npm run build && pip install ./python ray
    python3 examples/python/ray_plan.py --cmd "node dist/cli/main.js serve --stdio --backend cpu"
"""

import argparse
import json
import shlex
import sys
import time
from pathlib import Path

try:
    import trace_alloc
except ImportError:  # run from a checkout without `pip install ./python`
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "python"))
    import trace_alloc
import ray
from trace_alloc import ray as ta_ray

from sharded_plan import RULES, add, cut_points, seeded_forest


def columns(trees):
    """A list of trees as add_forest's arguments (None for no tree)."""
    if not trees:
        return None
    import numpy as np

    offset = np.cumsum([0] + [len(t["parent"]) for t in trees])
    col = lambda k: np.concatenate([t[k] for t in trees])  # noqa: E731
    return ((offset, col("parent"), col("reward"), col("visits"), col("uncertainty"), col("terminal"), col("embedding")),
            {"tree_id": [t["id"] for t in trees]})


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cmd", default="trace-alloc serve --stdio --backend cpu", help="the sidecar command line")
    parser.add_argument("--actors", type=int, default=4)
    parser.add_argument("--trees", type=int, default=64)
    parser.add_argument("--total", type=int, default=1001)
    parser.add_argument("--min-per-tree", type=int, default=2)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--timeout", type=float, default=120)
    parser.add_argument("--repeats", type=int, default=5, help="global plans per rule (timed)")
    args = parser.parse_args()
    t0 = time.perf_counter()
    command = shlex.split(args.cmd)
    trees = seeded_forest(args.trees, args.seed)
    cuts = cut_points(len(trees), args.actors, args.seed)

    single = {}
    with trace_alloc.Service(command) as ta:
        add(ta, trees)
        for rule in RULES:
            ta.request("set-params", rule=rule)
            single[rule] = ta.plan_json(total_budget=args.total, min_per_tree=args.min_per_tree)

    ta_ray.init_local(num_cpus=args.actors)
    try:
        actors = ta_ray.start_sidecars(args.actors, command, num_cpus=1)
        for a, lo, hi in zip(actors, cuts, cuts[1:]):
            part = columns(trees[lo:hi])
            if part is not None:
                ta_ray.call(a, "add_forest", *part[0], timeout=args.timeout, **part[1])
        sharded, plan_ms = {}, []
        for rule in RULES:
            for a in actors:
                ta_ray.call(a, "request", "set-params", rule=rule, timeout=args.timeout)
            for _ in range(args.repeats):  # the same plan again: how long the two phases take, warm
                t1 = time.perf_counter()
                sharded[rule] = ta_ray.global_plan_json(actors, args.total, min_per_tree=args.min_per_tree,
                                                        timeout=args.timeout)
                plan_ms.append(1000 * (time.perf_counter() - t1))
    finally:
        ray.shutdown()

    differences = []
    for rule in RULES:
        union = [t for p in sharded[rule] for t in p["trees"]]
        expected = single[rule]["trees"]
        if len(union) != len(expected):
            differences.append("%s: %d trees from the actors, %d from one service" % (rule, len(union), len(expected)))
        for got, want in zip(union, expected):
            if json.dumps(got) != json.dumps(want):
                differences.append("%s: tree %s differs" % (rule, want["id"]))
        for p in sharded[rule]:
            if (p["totalBudget"], p["unallocated"]) != (single[rule]["totalBudget"], single[rule]["unallocated"]):
                differences.append("%s: an actor's totalBudget/unallocated differ" % rule)
    where = lambda t: next(k for k in range(args.actors) if cuts[k] <= t < cuts[k + 1])  # noqa: E731
    ties = sum(1 for t in range(args.trees // 2) if where(t) != where(t + args.trees // 2))
    verdict = {"identical": not differences, "actors": args.actors, "trees": args.trees, "rules": list(RULES),
               "twin_trees_across_actors": ties, "total": args.total, "ray": ray.__version__,
               "plan_ms_p50": round(sorted(plan_ms)[len(plan_ms) // 2], 1), "plan_ms_max": round(max(plan_ms), 1),
               "seconds": round(time.perf_counter() - t0, 1), "differences": differences[:5]}
    print(json.dumps(verdict))
    sys.exit(0 if not differences else 1)


if __name__ == "__main__":
    main()
