"""The fresh-seed check of the default credit (README.md here fixes the analysis): v5 on the
default credit (`treerl-branch`) − independent chains on each task, and on the calculator v5 on
the default credit − v5 on TreeRL's published credit (`treerl-leaf`), points of final and mean
success, 95% t-intervals over paired seeds.

    python3 examples/llm/results/branch-credit/fresh/compare.py

Chains train identically under both credits (every first turn heads one leaf), so the
`independent` row of `calculator/` pairs with both v5 rows. Step times pair only within one
invocation: v5's step over chains' is given for the folders that ran both.
"""
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[2]))
from report import _mixed_ratio  # noqa: E402
from stats import mean_interval, signed  # noqa: E402


def rows(folder: str, credit: str) -> dict[str, dict[int, dict]]:
    """sampler → seed → run of one folder; refuses a run trained on another credit or planned by another rule."""
    path = HERE / folder / "results.json"
    out: dict[str, dict[int, dict]] = {}
    if not path.exists():
        return out
    for r in json.loads(path.read_text())["runs"]:
        if r["config"]["advantage"] != credit:
            raise SystemExit("%s seed %d: %s trained on %r, not %r" % (folder, r["seed"], r["sampler"], r["config"]["advantage"], credit))
        if r["sampler"] == "trace" and r.get("rule") != "v5":
            raise SystemExit("%s seed %d: trace planned with rule %r, not v5" % (folder, r["seed"], r.get("rule")))
        out.setdefault(r["sampler"], {})[r["seed"]] = r
    return out


def line(label: str, a: dict[int, dict], b: dict[int, dict], timed: bool) -> str:
    seeds = sorted(set(a) & set(b))
    if len(seeds) < 2:
        return "| %s | %d | — | — | — | — |" % (label, len(seeds))
    final = mean_interval([100 * (a[s]["final_success"] - b[s]["final_success"]) for s in seeds])
    mean = mean_interval([100 * (a[s]["mean_success"] - b[s]["mean_success"]) for s in seeds])
    mixed = "%.1f / %.1f" % tuple(100 * sum(_mixed_ratio(x[s]) for s in seeds) / len(seeds) for x in (a, b))
    step = "—"
    if timed:
        t = mean_interval([a[s]["step_s"] / b[s]["step_s"] for s in seeds])
        step = "%.2f [%.2f, %.2f]" % (t["mean"], *t["ci95"])
    return "| %s | %d (%d–%d) | %s | %s | %s | %s |" % (label, len(seeds), seeds[0], seeds[-1], signed(final), signed(mean), mixed, step)


def main() -> None:
    calc, leaf, recipe = rows("calculator", "treerl-branch"), rows("calculator-leaf", "treerl-leaf"), rows("recipe", "treerl-branch")
    print("| difference | seeds | final success, points | mean success, points | mixed-outcome groups %, a / b | step a ÷ step b, same run |")
    print("|---|---|---|---|---|---|")
    print(line("calculator: v5 (default credit) − chains", calc.get("trace", {}), calc.get("independent", {}), True))
    print(line("recipe task: v5 (default credit) − chains", recipe.get("trace", {}), recipe.get("independent", {}), True))
    print(line("calculator: v5 (default credit) − v5 (TreeRL's credit)", calc.get("trace", {}), leaf.get("trace", {}), False))
    print(line("calculator: v5 (TreeRL's credit) − chains", leaf.get("trace", {}), calc.get("independent", {}), False))


if __name__ == "__main__":
    main()
