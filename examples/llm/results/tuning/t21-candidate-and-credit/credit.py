"""Do entropy forking's and v5's leads over chains on the recipe task come from where they sample,
or need the tree credit? Paired by seed: each row's final success under TreeRL's per-leaf credit
(the tuning default; the t5, t6 and t17 folders) and under GRPO's per-rollout credit (the
t21-recipe-grpo-credit folders), and the interaction (row − chains under one credit, minus the
same under the other).

    python3 examples/llm/results/tuning/t21-candidate-and-credit/credit.py
"""

import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
TUNING = HERE.parent
sys.path.insert(0, str(TUNING.parents[1]))
from stats import mean_interval  # noqa: E402

LEAF = ("t5-recipe-base", "t6-recipe-base", "t17-recipe-visits2", "t17-recipe-visits2-more")
GRPO = ("t21-recipe-grpo-credit", "t21-recipe-grpo-credit-v5")
NAMES = {"independent": "chains", "entropy": "entropy forking", "visits2-next": "v5"}


def finals(folders):
    out: dict = {}
    for f in folders:
        path = TUNING / f / "runs.json"
        if not path.exists():
            continue
        for r in json.loads(path.read_text())["runs"]:
            if r["sampler"] in NAMES:
                out.setdefault(r["sampler"], {})[r["seed"]] = r
    return out


def line(name, values):
    m = mean_interval(values)
    return f"| {name} | {len(values)} | {m['mean']:+.1f} [{m['ci95'][0]:+.1f}, {m['ci95'][1]:+.1f}] |"


def main():
    leaf, grpo = finals(LEAF), finals(GRPO)
    f = lambda d, r, s: 100 * d[r][s]["final_success"]  # noqa: E731
    rows = [r for r in NAMES if r in leaf and r in grpo]
    print("Final success in points, 95% t-intervals, paired by seed (the seeds every row involved ran under both credits).\n")
    print("| difference | seeds | points |")
    print("|---|---|---|")
    for r in rows:
        if r == "independent":
            continue
        seeds = sorted(set(leaf[r]) & set(grpo[r]) & set(leaf["independent"]) & set(grpo["independent"]))
        n = NAMES[r]
        print(line(f"{n} − chains, TreeRL per-leaf credit", [f(leaf, r, s) - f(leaf, "independent", s) for s in seeds]))
        print(line(f"{n} − chains, GRPO credit", [f(grpo, r, s) - f(grpo, "independent", s) for s in seeds]))
        print(line(f"interaction: ({n} − chains) TreeRL − ({n} − chains) GRPO",
                   [(f(leaf, r, s) - f(leaf, "independent", s)) - (f(grpo, r, s) - f(grpo, "independent", s)) for s in seeds]))
    for r in rows:
        seeds = sorted(set(leaf[r]) & set(grpo[r]))
        print(line(f"{NAMES[r]}: TreeRL − GRPO credit", [f(leaf, r, s) - f(grpo, r, s) for s in seeds]))
    print()
    print("| row | credit | seeds | final % | mixed-outcome groups % | forks / chains per step |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        seeds = sorted(set(leaf[r]) & set(grpo[r]))
        for name, d in (("TreeRL per-leaf", leaf), ("GRPO", grpo)):
            runs = [d[r][s] for s in seeds]
            mean = lambda k: sum(x[k] for x in runs) / len(runs) if all(x.get(k) is not None for x in runs) else None  # noqa: E731
            forks = "—" if mean("forks_per_step") is None else f"{mean('forks_per_step'):.1f} / {mean('chains_per_step'):.1f}"
            print(f"| {NAMES[r]} | {name} | {len(seeds)} | {100 * mean('final_success'):.1f} | {100 * mean('mixed'):.1f} | {forks} |")


if __name__ == "__main__":
    main()
