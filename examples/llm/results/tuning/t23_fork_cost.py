"""t23: where v5's fork claims sit by what a rollout started there costs, on both tasks.

    python3 examples/llm/results/tuning/t23_fork_cost.py

Reads `claim_by_cost` from tune.py's runs (recorded for every proto_alloc variant since t23):
per run, the claims v5 put on non-root nodes, summed over every plan, by the relative cost of a
rollout started at the node (proto_alloc.relative_cost: the mean cost from the node to the
episode's end over its finished rollouts, over the root's), in tenths of a chain's. Counted in
generated tokens (what a training loop knows) and in turns (what the forest's depths give).
"""

import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
FOLDERS = ["t23-fork-cost-calculator", "t23-fork-cost-recipe"]


def main() -> int:
    print("| folder | seed | counted in | a fork's tokens ÷ a chain's | claim share by relative cost: 0–0.1, …, 0.9+ | share above 0.5 |")
    print("|---|---|---|---|---|---|")
    for folder in FOLDERS:
        for r in json.loads((HERE / folder / "runs.json").read_text())["runs"]:
            for unit, hist in r["claim_by_cost"].items():
                total = sum(hist)
                print("| %s | %d | %s | %.2f | %s | %.2f |" % (
                    folder, r["seed"], unit, r["fork_cost"], " ".join("%.2f" % (x / total) for x in hist),
                    sum(hist[5:]) / total))
    return 0


if __name__ == "__main__":
    sys.exit(main())
