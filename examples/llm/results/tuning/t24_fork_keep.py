"""t24: where a contested fork's draw goes (the fork keep η), paired by seed on tuning seeds.

    python3 examples/llm/results/tuning/t24_fork_keep.py

A contested fork starts η of what it draws as new siblings at the fork itself and passes the
rest down its kept children, spread over their regions' open nodes (docs/ALGORITHM.md, v3
"Keep and pass"; v5 the same). v5's η is 0.25. "η = 1" (`--set fork_keep=1`, the plan's
`--fork-keep`) keeps all of it at the fork: every fork re-samples a contested decision and none
starts below a kept child. "regions by hesitation" (tune.py's `visits2-next-hes`, in
`proto_alloc.py` only) spreads each kept child's share over its region's open nodes in
proportion to their next-turn entropy instead of equally. Chains and v5 are the t23 rows of the
same seeds (`t23_ablations.py`); the prototype's v5 (`visits2-next`) is paired with the
hesitation row, run by the same prototype, and on the recipe task comes from t17 and t21.
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from t23_ablations import ROWS as T23, load, print_task  # noqa: E402

ROWS = {
    "calculator": {"chains": T23["calculator"]["chains"], "v5": T23["calculator"]["v5"],
                   "v5, η = 1": [("t24-calculator-fork-keep-1", "trace")],
                   "v5 (prototype)": [("t24-calculator-hesitation", "visits2-next")],
                   "v5 (prototype), regions by hesitation": [("t24-calculator-hesitation", "visits2-next-hes")]},
    "recipe": {"chains": T23["recipe"]["chains"] + [("t21-recipe-seeds-248-271", "independent")],
               "v5 (prototype)": T23["recipe"]["v5"] + [("t21-recipe-seeds-248-271", "visits2-next")],
               "v5 (prototype), regions by hesitation": [("t24-recipe-hesitation", "visits2-next-hes")],
               "v5, η = 1": [("t24-recipe-fork-keep-1", "trace")]},
}
PAIRS = [("v5", "chains"), ("v5, η = 1", "chains"), ("v5, η = 1", "v5"), ("v5 (prototype)", "v5"),
         ("v5 (prototype)", "chains"), ("v5 (prototype), regions by hesitation", "v5 (prototype)"),
         ("v5 (prototype), regions by hesitation", "chains")]


def main() -> int:
    for task in ROWS:
        print_task(task, load(task, ROWS), PAIRS)
    return 0


if __name__ == "__main__":
    sys.exit(main())
