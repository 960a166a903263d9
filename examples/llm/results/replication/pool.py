"""v5 against independent chains on 60 fresh seeds (60–119), beside the committed 60 (0–59).

    python3 examples/llm/results/replication/pool.py

The committed runs of the library's default rule v5 (`../recipe-next-uncertainty/` and
`../next-uncertainty/`, row `trace-v5`) were level with chains on both tasks. This folder repeats
the two rows on seeds no report or tuning run had used, with the same settings (`run.py
--first-seed 60 --seeds 60 --samplers independent,trace --set uncertainty=next`; the `trace` row is
the library's default rule, v5, as `rule` in each run records). The analysis was fixed before the
runs: v5 − chains in final and mean success, points, 95% t-interval over seeds, on the new seeds
alone (the replication), on the committed seeds, and on all 120 pooled; and, on the new seeds,
v5's step time as a multiple of chains' step in the same seed's run. The committed folders ran
v5 in an invocation of its own, on another day's machine load, so their step times do not pair.

A second table pairs v5 on the recipe task with the rows the committed recipe folders ran on
fewer seeds (`../recipe/`, `../recipe-entropy-more/`: entropy forking and chains at 1.5× the
tokens, seeds 0–51), and with those two rows on seeds 52–119 (`recipe-other-rows/`, run after
the first table's results were known; the analysis was fixed before it ran). Every folder's
chains are the same runs seed for seed, so any two rows of one seed pair.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))
sys.path.insert(0, str(HERE.parent / "shared-prefixes"))
from pair import pooled_finals, print_pairs  # noqa: E402
from stats import mean_interval  # noqa: E402

# task → (committed folder, its v5 row; replication folder, its v5 row)
TASKS = {
    "recipe": (("recipe-next-uncertainty", "trace-v5"), ("replication/recipe", "trace")),
    "calculator": (("next-uncertainty", "trace-v5"), ("replication/calculator", "trace")),
}


def runs(folder: str, v5: str) -> dict[int, dict[str, dict]]:
    """seed → {"chains": run, "v5": run} of one folder; refuses a v5 row that planned with another rule."""
    out: dict[int, dict[str, dict]] = {}
    for r in json.loads((HERE.parent / folder / "results.json").read_text())["runs"]:
        if r["sampler"] == v5:
            if r.get("rule") != "v5":
                raise SystemExit("%s seed %d: row %s planned with rule %r, not v5" % (folder, r["seed"], v5, r.get("rule")))
            out.setdefault(r["seed"], {})["v5"] = r
        elif r["sampler"] == "independent":
            out.setdefault(r["seed"], {})["chains"] = r
    return {s: pair for s, pair in out.items() if len(pair) == 2}


def line(label: str, pairs: dict[int, dict[str, dict]], timed: bool) -> str:
    seeds = sorted(pairs)
    cells = []
    for key in ("final_success", "mean_success"):
        m = mean_interval([100 * (pairs[s]["v5"][key] - pairs[s]["chains"][key]) for s in seeds])
        cells.append("%+.1f [%+.1f, %+.1f]" % (m["mean"], *m["ci95"]))
    if timed:
        step = mean_interval([pairs[s]["v5"]["step_s"] / pairs[s]["chains"]["step_s"] for s in seeds])
        cells.append("%.2f [%.2f, %.2f]" % (step["mean"], *step["ci95"]))
    else:
        cells.append("— (rows run apart)")
    return "| %s | %d (%d–%d) | %s |" % (label, len(seeds), seeds[0], seeds[-1], " | ".join(cells))


# (folder, {its row name → the row's name in the second table}), as `pair.pooled_finals` reads them.
RECIPE_ROWS = (
    ("recipe", {"independent": "chains", "entropy": "entropy forking", "independent-1.5x": "chains at 1.5× tokens"}),
    ("recipe-entropy-more", {"independent": "chains", "entropy": "entropy forking", "independent-1.5x": "chains at 1.5× tokens"}),
    ("recipe-next-uncertainty", {"independent": "chains", "trace-v5": "v5"}),
    ("replication/recipe", {"independent": "chains", "trace": "v5"}),
    ("replication/recipe-other-rows", {"entropy": "entropy forking", "independent-1.5x": "chains at 1.5× tokens"}),
)
RECIPE_PAIRS = (("v5", "chains"), ("entropy forking", "chains"), ("chains at 1.5× tokens", "chains"),
                ("entropy forking", "v5"), ("v5", "chains at 1.5× tokens"), ("entropy forking", "chains at 1.5× tokens"))


def main() -> None:
    print("| task, seeds | seeds | v5 − chains, final success (points) | mean success (points) | v5 step ÷ chains' step, same run |")
    print("|---|---|---|---|---|")
    for task, (committed, fresh) in TASKS.items():
        old, new = runs(*committed), runs(*fresh)
        if set(old) & set(new):
            raise SystemExit("%s: seeds %s are in both folders" % (task, sorted(set(old) & set(new))))
        print(line("%s, replication" % task, new, True))
        print(line("%s, committed" % task, old, False))
        print(line("%s, pooled" % task, {**old, **new}, False))
    print()
    print_pairs(pooled_finals(RECIPE_ROWS), RECIPE_PAIRS, "recipe task, final success")

if __name__ == "__main__":
    main()
