"""Records, for every tree of every plan a tune.py run makes, the next-turn entropy of each node a
base fork share could use (reached or not: non-root, open, visited, continued), whether it is
forked already, its depth, and the tree's mean finished depth, one JSON object per tree-plan with
at least 3 such nodes, appended to $PEAK_OUT (JSON lines). The arguments are tune.py's.

    PEAK_OUT=recipe.jsonl python3 examples/llm/results/tuning/t20-peak-gate/hesitation_lm.py \\
        --task recipe --first-seed 200 --seeds 2 --steps 30 --baselines "" --variants visits2-next --workers 1 --out /tmp/x
"""

import json
import os
import runpy
import sys
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(EXAMPLE))
import proto_alloc  # noqa: E402

planned = proto_alloc.plan


def plan(forest, total, knobs, min_per_tree=1, diag=None):
    out = planned(forest, total, knobs, min_per_tree, diag)
    nodes, lines = forest.nodes, []
    for ids in forest.tree_nodes:
        depth, cand, leaves = {}, [], []
        for v in ids:
            n = nodes[v]
            depth[v] = 0 if n.parent < 0 else depth[n.parent] + 1
            if n.terminal:
                leaves.append(depth[v])
            if n.parent >= 0 and not n.terminal and n.visits > 0 and n.children:
                cand.append((sum(nodes[c].uncertainty for c in n.children) / len(n.children), len(n.children) >= 2, depth[v]))
        if len(cand) >= 3 and leaves:
            lines.append(json.dumps({"ents": [c[0] for c in cand], "forked": [c[1] for c in cand],
                                     "depth": [c[2] for c in cand], "leaf_depth": sum(leaves) / len(leaves)}))
    if lines:
        with open(os.environ["PEAK_OUT"], "a") as fh:  # appended per plan: tune.py's workers are processes
            fh.write("\n".join(lines) + "\n")
    return out


proto_alloc.plan = plan  # before tune.py imports it
sys.argv = ["tune.py"] + sys.argv[1:]
runpy.run_path(str(EXAMPLE / "tune.py"), run_name="__main__")
