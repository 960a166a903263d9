"""t23: which part of v5 moves it against chains, paired by seed on tuning seeds.

    python3 examples/llm/results/tuning/t23_ablations.py

Ablations of the library's default rule, each a plan or example setting and nothing else:
- "no forks": `--set contest_gain=0` (the plan's `--contest-gain`). No fork claims any budget,
  so every rollout starts at a prompt; what is left of v5 is its split of each round's budget
  over the prompts (q0 + the intensity of the prompt's first fork, q0 = 1).
- "equal split": `--set tree_floor=1000000` (`--tree-floor`). Every prompt weighs the same; what
  is left of v5 is where inside a prompt's tree it starts its rollouts.
- "rounds of 4": `--set trace_rollouts_per_tree=4`: each plan places 4 rollouts per prompt
  instead of 2, half as many plans and generation batches a step; at 2 the split over prompts
  cannot move a rollout (docs/ALGORITHM.md, "Global budget"), at 4 it can, and "rounds of 4,
  equal split" takes it away again (on the recipe task only that row was run).
Chains and v5 themselves: on the calculator the `t23-calculator-v5/` run; on the recipe task
the tune.py rows of the same seeds (chains: t5-recipe-base, t6-recipe-base; v5, `visits2-next`,
the prototype that gives the service's v5 plans: t17-recipe-visits2, t17-recipe-visits2-more),
which the runs' determinism makes the same runs.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))
from report import _mixed_ratio, _steps_mean  # noqa: E402
from stats import mean_interval  # noqa: E402

# task -> row -> [(folder, sampler in that folder)]
ROWS = {
    "calculator": {
        "chains": [("t23-calculator-v5", "independent")],
        "v5": [("t23-calculator-v5", "trace")],
        "v5, no forks": [("t23-calculator-no-forks", "trace")],
        "v5, equal split": [("t23-calculator-equal-split", "trace")],
        "v5, rounds of 4": [("t23-calculator-rounds-of-4", "trace")],
        "v5, rounds of 4, equal split": [("t23-calculator-rounds-of-4-equal-split", "trace")],
    },
    "recipe": {
        "chains": [("t5-recipe-base", "independent"), ("t6-recipe-base", "independent")],
        "v5": [("t17-recipe-visits2", "visits2-next"), ("t17-recipe-visits2-more", "visits2-next")],
        "v5, no forks": [("t23-recipe-no-forks", "trace")],
        "v5, rounds of 4, equal split": [("t23-recipe-rounds-of-4-equal-split", "trace")],
    },
}
# (row, the row it is checked against): every difference below, and how many seeds end identically
PAIRS = [("v5", "chains"), ("v5, no forks", "chains"), ("v5, equal split", "v5"),
         ("v5, rounds of 4", "chains"), ("v5, rounds of 4", "v5"),
         ("v5, rounds of 4, equal split", "chains"), ("v5, rounds of 4, equal split", "v5"),
         ("v5, rounds of 4, equal split", "v5, rounds of 4")]


def runs_of(folder: str) -> list[dict]:
    """A run.py folder's runs (results.json) or a tune.py folder's (runs.json)."""
    path = HERE / folder
    for name in ("results.json", "runs.json"):
        if (path / name).exists():
            return json.loads((path / name).read_text())["runs"]
    raise SystemExit("%s: neither results.json nor runs.json" % path)


def mixed(run: dict) -> float:
    """tune.py records the share itself; run.py keeps the steps it is counted from."""
    return run["mixed"] if "mixed" in run else _mixed_ratio(run)


def forks_per_step(run: dict) -> float | None:
    if run["sampler"] == "independent":
        return 0.0
    if "forks_per_step" in run:
        return run["forks_per_step"]
    return _steps_mean(run, "fork_rollouts") if run.get("steps") else None


def load(task: str, table: dict = ROWS) -> dict[str, dict[int, dict]]:
    """Each row of `table[task]` (row -> [(folder, sampler)]) as {seed: run}."""
    rows: dict[str, dict[int, dict]] = {}
    for row, sources in table[task].items():
        got: dict[int, dict] = {}
        for folder, sampler in sources:
            for r in runs_of(folder):
                if r["sampler"] == sampler:
                    if r["seed"] in got:
                        raise SystemExit("%s: seed %d twice" % (row, r["seed"]))
                    got[r["seed"]] = r
        rows[row] = got
    return rows


def interval(xs: list[float]) -> str:
    m = mean_interval(xs)
    return "%+.1f [%+.1f, %+.1f]" % (m["mean"], m["ci95"][0], m["ci95"][1])


def print_task(task: str, rows: dict[str, dict[int, dict]], pairs: list[tuple[str, str]]) -> None:
    """One task's rows (seeds, means, mixed-outcome share, forks) and paired differences."""
    print("\n## %s task (tuning seeds)\n" % task)
    # No step times: the rows ran in separate invocations under different loads (run.py's
    # own summary.md in each folder pairs the times of the rows that ran together).
    print("| row | seeds | final % | mean % | mixed-outcome groups % | forks per step |")
    print("|---|---|---|---|---|---|")
    for row, runs in rows.items():
        seeds = sorted(runs)
        avg = lambda f: sum(f(runs[s]) for s in seeds) / len(seeds)
        fk = [forks_per_step(runs[s]) for s in seeds]
        print("| %s | %d–%d (%d) | %.1f | %.1f | %.1f | %s |" % (
            row, seeds[0], seeds[-1], len(seeds), 100 * avg(lambda r: r["final_success"]),
            100 * avg(lambda r: r["mean_success"]), 100 * avg(mixed),
            "%.1f" % (sum(fk) / len(fk)) if None not in fk else "—"))
    print("\n| difference | paired seeds | finals identical | final success, points | mean success, points |")
    print("|---|---|---|---|---|")
    for a, b in pairs:
        if a not in rows or b not in rows:
            continue
        seeds = sorted(set(rows[a]) & set(rows[b]))
        fin = [100 * (rows[a][s]["final_success"] - rows[b][s]["final_success"]) for s in seeds]
        mean = [100 * (rows[a][s]["mean_success"] - rows[b][s]["mean_success"]) for s in seeds]
        same = sum(rows[a][s]["final_success"] == rows[b][s]["final_success"] for s in seeds)
        print("| %s − %s | %d | %d | %s | %s |" % (a, b, len(seeds), same, interval(fin), interval(mean)))


def main() -> int:
    for task in ROWS:
        print_task(task, load(task), PAIRS)
    return 0


if __name__ == "__main__":
    sys.exit(main())
