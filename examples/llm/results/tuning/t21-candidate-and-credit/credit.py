"""Does entropy forking's lead over chains on the recipe task come from the tree credit or from
where it samples? Paired by seed: each row's final success under TreeRL's per-leaf credit (the
tuning default; the t5 and t6 folders) and under GRPO's per-rollout credit (t21-recipe-grpo-credit),
and the interaction (entropy − chains under one credit, minus the same under the other).

    python3 examples/llm/results/tuning/t21-candidate-and-credit/credit.py
"""

import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
TUNING = HERE.parent
sys.path.insert(0, str(TUNING.parents[1]))
from stats import mean_interval  # noqa: E402

LEAF = ("t5-recipe-base", "t6-recipe-base")
GRPO = ("t21-recipe-grpo-credit",)
ROWS = ("independent", "entropy")


def finals(folders):
    out: dict = {}
    for f in folders:
        for r in json.loads((TUNING / f / "runs.json").read_text())["runs"]:
            if r["sampler"] in ROWS:
                out.setdefault(r["sampler"], {})[r["seed"]] = r
    return out


def line(name, values):
    m = mean_interval(values)
    return f"| {name} | {len(values)} | {m['mean']:+.1f} [{m['ci95'][0]:+.1f}, {m['ci95'][1]:+.1f}] |"


def main():
    leaf, grpo = finals(LEAF), finals(GRPO)
    seeds = sorted(set.intersection(*(set(d[r]) for d in (leaf, grpo) for r in ROWS)))
    f = lambda d, r, s: 100 * d[r][s]["final_success"]  # noqa: E731
    print(f"Seeds {seeds[0]}–{seeds[-1]} ({len(seeds)}), final success in points, 95% t-intervals, paired by seed.\n")
    print("| difference | seeds | points |")
    print("|---|---|---|")
    print(line("entropy − chains, TreeRL per-leaf credit", [f(leaf, "entropy", s) - f(leaf, "independent", s) for s in seeds]))
    print(line("entropy − chains, GRPO credit", [f(grpo, "entropy", s) - f(grpo, "independent", s) for s in seeds]))
    print(line("interaction: (entropy − chains) TreeRL − (entropy − chains) GRPO",
               [(f(leaf, "entropy", s) - f(leaf, "independent", s)) - (f(grpo, "entropy", s) - f(grpo, "independent", s)) for s in seeds]))
    print(line("chains: TreeRL − GRPO credit", [f(leaf, "independent", s) - f(grpo, "independent", s) for s in seeds]))
    print(line("entropy: TreeRL − GRPO credit", [f(leaf, "entropy", s) - f(grpo, "entropy", s) for s in seeds]))
    print()
    print("| row | credit | final % | mixed-outcome groups % | forks / chains per step |")
    print("|---|---|---|---|---|")
    for r in ROWS:
        for name, d in (("TreeRL per-leaf", leaf), ("GRPO", grpo)):
            runs = [d[r][s] for s in seeds]
            mean = lambda k: sum(x[k] for x in runs) / len(runs) if all(x.get(k) is not None for x in runs) else None  # noqa: E731
            forks = "—" if mean("forks_per_step") is None else f"{mean('forks_per_step'):.1f} / {mean('chains_per_step'):.1f}"
            print(f"| {r} | {name} | {100 * mean('final_success'):.1f} | {100 * mean('mixed'):.1f} | {forks} |")


if __name__ == "__main__":
    main()
