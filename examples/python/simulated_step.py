"""One simulated step of agentic RL training driven through `trace-alloc serve --stdio`.

A batch of prompts arrives, each with a few first agent steps already sampled; TRACE plans
where the step's rollouts go; rollouts run and finish one at a time, in random order (tool
calls and verifiers take different times), feeding rewards back; half-way the plan is redone
on the updated trees, branches it now prunes are stopped early and their budget flows to the
rest; finished prompts leave the batch. Prints one JSON summary line; exits non-zero if an
invariant of the protocol or of the allocation rules does not hold.

    pip install ./python          # the trace_alloc package (numpy is its only dependency)
    python3 examples/python/simulated_step.py --cmd "node dist/cli/main.js serve --stdio --backend cpu"
"""

import argparse
import json
import random
import shlex
import sys
from pathlib import Path

import numpy as np

try:
    import trace_alloc
except ImportError:  # run from a checkout without `pip install ./python`
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "python"))
    import trace_alloc
from trace_alloc import TraceAllocError


def noisy(rng, base, spread):
    return [x + rng.gauss(0, spread) for x in base]


def check_plan(plan, total_budget):
    """Every tree places exactly its budget; the tree budgets add up to the total."""
    placed = 0
    for tree in plan.trees:
        assert tree.branches + tree.unallocated == tree.budget, tree
        assert all(a.depth >= 1 for a in tree.allocations), tree
        placed += tree.budget
    assert placed + plan.unallocated == total_budget, (placed, plan.unallocated, total_budget)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cmd", help="service command (default: trace_alloc.find_command() + serve --stdio)")
    ap.add_argument("--prompts", type=int, default=8)
    ap.add_argument("--dim", type=int, default=8)
    ap.add_argument("--total-budget", type=int, default=64)
    ap.add_argument("--seed", type=int, default=6)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    command = shlex.split(args.cmd) if args.cmd else None

    with trace_alloc.Service(command) as ta:
        # 1. The batch: each prompt has a root and four sampled first steps (no outcomes yet),
        #    sent as arrays (one row per node, trees in order), as a trainer holds them.
        hidden = {}  # (tree, node) -> success probability of continuing from that node
        embeddings = {}
        ids, rows = [], []
        for i in range(args.prompts):
            tid = "prompt-%d" % i
            ids.append(tid)
            root = [rng.gauss(0, 1) for _ in range(args.dim)]
            rows.append((-1, root, 0.0))
            base = rng.random()
            hidden[(tid, 0)] = base
            embeddings[(tid, 0)] = root
            for c in range(4):
                e = noisy(rng, root, 0.05 if c < 2 else 0.8)  # two near-duplicate steps, two distinct
                rows.append((0, e, round(rng.random(), 3)))
                hidden[(tid, c + 1)] = min(1.0, max(0.0, base + rng.gauss(0, 0.3)))
                embeddings[(tid, c + 1)] = e
        n = len(rows)
        ta.add_forest(
            tree_offset=np.arange(0, n + 1, 5), parent=np.array([r[0] for r in rows]),
            reward=np.zeros(n), visits=np.zeros(n, dtype=np.int64), uncertainty=np.array([r[2] for r in rows]),
            terminal=np.zeros(n, dtype=bool), embedding=np.array([r[1] for r in rows]), tree_id=ids)
        size = {tid: 5 for tid in ids}

        # 2. Plan the step's rollouts across the batch.
        plan = ta.plan(total_budget=args.total_budget)
        check_plan(plan, args.total_budget)
        assert sorted(plan.replanned) == sorted(size), plan.replanned

        # 3. Start the rollouts: each is a chain of new steps below its start node.
        pending = []  # (tree, start node, leaf node, reward)
        for tree in plan.trees:
            tid = tree.id
            for alloc in tree.allocations:
                for _ in range(alloc.branches):
                    parent, p = alloc.node, hidden[(tid, alloc.node)]
                    # The episode's own length: every rollout runs to its end (alloc.depth is the
                    # fork horizon, a hint about where to fork again; this simulation does not need it).
                    steps = rng.randint(1, 3)
                    new = []
                    e = embeddings[(tid, parent)]
                    for s in range(steps):
                        e = noisy(rng, e, 0.3)
                        new.append({"parent": parent if s == 0 else size[tid] + s - 1, "embedding": e,
                                    "uncertainty": round(rng.random() * 0.5, 3)})
                        parent = size[tid] + s
                    first = ta.add_nodes(tid, new)["first"]
                    assert first == size[tid]
                    for s in range(steps):
                        embeddings[(tid, first + s)] = new[s]["embedding"]
                        hidden[(tid, first + s)] = p
                    reward = 1.0 if rng.random() < p else 0.0
                    pending.append((tid, (alloc.node, first), first + steps - 1, reward))
                    size[tid] += steps
        started = len(pending)
        rng.shuffle(pending)

        # 4. Rollouts finish one by one; half-way, re-plan on the updated trees.
        finished = 0
        half = len(pending) // 2
        outcomes = {}
        for tid, start, leaf, reward in pending[:half]:
            ta.update(tid, leaf, terminal=True)  # the episode ended at its last step
            out = ta.finish_rollout(tid, reward, leaf=leaf)
            outcomes.setdefault(tid, []).append(reward)
            assert out["path"][0] == 0 and out["path"][-1] == leaf
            finished += 1
        replan = ta.plan(total_budget=args.total_budget, changed=True)
        check_plan(ta.plan(total_budget=args.total_budget), args.total_budget)
        replanned = replan.replanned

        # 5. Early stop: rollouts still running from or through a node the new plan prunes are
        #    cancelled (their last step is marked terminal); their share goes to the kept siblings.
        pruned = {(t.id, n) for t in ta.plan(total_budget=args.total_budget).trees for n in t.pruned}
        stopped = 0
        still = []
        for tid, start, leaf, reward in pending[half:]:
            if (tid, start[0]) in pruned or (tid, start[1]) in pruned:
                ta.update(tid, leaf, terminal=True)
                stopped += 1
            else:
                still.append((tid, start, leaf, reward))
        after_stop = ta.plan(total_budget=args.total_budget)
        check_plan(after_stop, args.total_budget)

        # 6. A malformed line and a bad request are answered, and the forest is untouched.
        before = ta.stats()
        reply = ta.send_raw('{"op": "plan", "id": 99')
        assert reply["ok"] is False and reply["error"]["code"] == "parse_error", reply
        try:
            ta.update("prompt-0", 10 ** 6, reward=1.0)
            raise AssertionError("an unknown node was accepted")
        except TraceAllocError as err:
            assert err.code == "unknown_node" and err.tree == "prompt-0", err
        try:
            ta.update("prompt-0", 1, reward=float("nan"))  # refused before it is sent
            raise AssertionError("a NaN reward was accepted")
        except TraceAllocError as err:
            assert err.code == "invalid_value" and err.field == "reward", err
        assert ta.stats()["nodes"] == before["nodes"]

        for tid, start, leaf, reward in still:
            ta.update(tid, leaf, terminal=True)
            ta.finish_rollout(tid, reward, leaf=leaf)
            outcomes.setdefault(tid, []).append(reward)
            finished += 1

        # 7. Prompts whose rollouts all agree (all solved or all failed) carry no learning
        #    signal left: they leave the batch.
        scores = ta.scores()
        done = sorted(t for t, r in outcomes.items() if len(set(r)) == 1)
        if done:
            ta.remove_trees(done)
        final = ta.plan(total_budget=args.total_budget)
        check_plan(final, args.total_budget)
        stats = ta.stats()
        assert stats["trees"] == args.prompts - len(done)
        assert stats["nodes"] == sum(n for t, n in size.items() if t not in done)
        assert stats["dirtyGroups"] == 0

    summary = {
        "prompts": args.prompts,
        "rollouts_started": started,
        "rollouts_finished": finished,
        "stopped_early": stopped,
        "replanned_half_way": len(replanned),
        "removed": len(done),
        "trees": stats["trees"],
        "nodes": stats["nodes"],
        "backend": stats["backend"],
        "rescored_groups": stats["rescoredGroups"],
        "pruned_after_replan": len(pruned),
    }
    print(json.dumps(summary, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
