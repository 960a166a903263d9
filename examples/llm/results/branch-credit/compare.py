"""v5 trained on TreeRL's credit with branch means (`--set advantage=treerl-branch`) against
independent chains and against v5 on TreeRL's published credit, on the reported seeds 0–119,
paired by seed. Chains train identically under both credits (every first turn heads one leaf),
so the chains rows are the committed ones. A last table pairs v5 on branch means with the
recipe task's other committed rows over the same 120 seeds (entropy forking and chains at 1.5×
the tokens, `../replication/pool.py`'s folders; entropy forking trained on TreeRL's published
credit, which its forked trees feel, so that row compares two credits as well as two samplers).

    python3 examples/llm/results/branch-credit/compare.py

The committed rows: seeds 0–59 from `../next-uncertainty/` (calculator; v5 is its `trace-v5`)
and `../recipe-next-uncertainty/` (recipe task; `trace-v5`), seeds 60–119 from
`../replication/calculator/` and `../replication/recipe/` (v5 is their `trace`, the default then
and now). Step times are not compared: the branch-means rows ran beside other jobs (a CI run,
language-model runs), and the credit changes neither generation nor allocation (it is one pass
over the step's nodes).
"""
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))
sys.path.insert(0, str(HERE.parent / "shared-prefixes"))
from pair import pooled_finals, print_pairs  # noqa: E402
from report import _mixed_ratio  # noqa: E402
from stats import mean_interval, signed  # noqa: E402

sys.path.insert(0, str(HERE.parent / "replication"))
from pool import RECIPE_ROWS  # noqa: E402

COMMITTED = {"calculator": [("next-uncertainty", "trace-v5"), ("replication/calculator", "trace")],
             "recipe": [("recipe-next-uncertainty", "trace-v5"), ("replication/recipe", "trace")]}


def runs(folder: Path) -> list[dict]:
    path = folder / "results.json"
    return json.loads(path.read_text())["runs"] if path.exists() else []


def rows(task: str) -> dict[str, dict[int, dict]]:
    out: dict[str, dict[int, dict]] = {"chains": {}, "v5, TreeRL's credit": {}, "v5, branch means": {}}
    for folder, v5 in COMMITTED[task]:
        for r in runs(HERE.parent / folder):
            if r["sampler"] == "independent":
                out["chains"][r["seed"]] = r
            elif r["sampler"] == v5:
                out["v5, TreeRL's credit"][r["seed"]] = r
    for r in runs(HERE / task):
        if r["sampler"] == "trace":
            out["v5, branch means"][r["seed"]] = r
    return out


def main() -> None:
    for task in ("calculator", "recipe"):
        r = rows(task)
        seeds = sorted(set.intersection(*(set(x) for x in r.values())))
        if len(seeds) < 2:
            print("%s: no seeds of the branch-means row yet\n" % task)
            continue
        print("%s, seeds %d–%d (%d paired)\n" % (task, seeds[0], seeds[-1], len(seeds)))
        print("| row | final success % | mean success % | mixed-outcome groups % |")
        print("|---|---|---|---|")
        for name, by in r.items():
            f = mean_interval([100 * by[s]["final_success"] for s in seeds])
            m = mean_interval([100 * by[s]["mean_success"] for s in seeds])
            mixed = sum(_mixed_ratio(by[s]) for s in seeds) / len(seeds)
            print("| %s | %.1f [%.1f, %.1f] | %.1f | %.1f |" % (name, f["mean"], *f["ci95"], m["mean"], 100 * mixed))
        print()
        print("| difference | final success, points | mean success, points |")
        print("|---|---|---|")
        for a, b in (("v5, branch means", "chains"), ("v5, TreeRL's credit", "chains"), ("v5, branch means", "v5, TreeRL's credit")):
            d = [100 * (r[a][s]["final_success"] - r[b][s]["final_success"]) for s in seeds]
            dm = [100 * (r[a][s]["mean_success"] - r[b][s]["mean_success"]) for s in seeds]
            print("| %s − %s | %s | %s |" % (a, b, signed(mean_interval(d)), signed(mean_interval(dm))))
        print()
    # The recipe task's other rows, as ../replication/pool.py pools them, beside v5 on branch means.
    other = ((folder, {k: v for k, v in names.items() if v != "v5"}) for folder, names in RECIPE_ROWS)
    final = pooled_finals((*other, ("branch-credit/recipe", {"trace": "v5, branch means"})))
    if any(name == "v5, branch means" for name, _ in final):
        print_pairs(final, (("v5, branch means", "chains"), ("entropy forking", "v5, branch means"),
                            ("chains at 1.5× tokens", "v5, branch means")), "recipe task, final success")


if __name__ == "__main__":
    main()
