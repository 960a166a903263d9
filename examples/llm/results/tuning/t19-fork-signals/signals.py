"""The t19 table: per row, the in-loop fork signals of `tune.py --signals` runs (fork_signals.py),
averaged per run over its steps, then over seeds; and, per signal, whether the v5 row's per-seed
values separate the two tasks.

    python3 examples/llm/results/tuning/t19-fork-signals/signals.py examples/llm/results/tuning/t19-fork-signals/calculator examples/llm/results/tuning/t19-fork-signals/recipe
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
from stats import mean_interval  # noqa: E402

SIGNALS = {
    "fork_share": "finished forks / finished rollouts",
    "fork_cost": "a fork's generated tokens / a fresh chain's",
    "success_per_token": "(fork successes per fork token) / (fresh successes per fresh token)",
    "variance": "4p̂(1−p̂), the gain α and τ learn from, forks − fresh, per tree with ≥ 2 of each",
    "variance_per_token": "4p̂(1−p̂) per rollout token, forks − fresh (×100), per tree with ≥ 2 of each",
    "cos_fork_fresh": "cosine of the forks' and the fresh chains' update directions",
    "cos_half": "cosine of two random halves of the fresh chains' update directions",
}


def run_signals(r: dict) -> dict:
    nF = sF = tF = nK = sK = tK = 0
    var, gain, cos_kf, cos_h = [], [], [], []
    for step in r["fork_signals"]:
        for tree in step["trees"]:
            f, k = tree["fresh"], tree["fork"]
            nF, sF, tF = nF + f[0], sF + f[1], tF + f[2]
            nK, sK, tK = nK + k[0], sK + k[1], tK + k[2]
            if f[0] >= 2 and k[0] >= 2:
                pf, pk = f[1] / f[0], k[1] / k[0]
                var.append(100 * (4 * pk * (1 - pk) / (k[2] / k[0]) - 4 * pf * (1 - pf) / (f[2] / f[0])))
                gain.append(4 * pk * (1 - pk) - 4 * pf * (1 - pf))
        if step.get("g_cos_fork_fresh") is not None:
            cos_kf.append(step["g_cos_fork_fresh"])
        if step.get("g_cos_half") is not None:
            cos_h.append(step["g_cos_half"])
    mean = lambda xs: sum(xs) / len(xs) if xs else None
    return {"fork_share": nK / (nK + nF) if nK + nF else None,
            "fork_cost": (tK / nK) / (tF / nF) if nK and nF and tF else None,
            "success_per_token": (sK / tK) / (sF / tF) if tK and sF and tF else None,
            "variance": mean(gain), "variance_per_token": mean(var), "cos_fork_fresh": mean(cos_kf), "cos_half": mean(cos_h)}


def load(folder: str) -> dict[str, dict[int, dict]]:
    by: dict[str, dict[int, dict]] = {}
    for r in json.loads((Path(folder) / "runs.json").read_text())["runs"]:
        by.setdefault(r["sampler"], {})[r["seed"]] = r
    return by


def fmt_interval(xs: list[float], digits: int = 2) -> str:
    if len(xs) < 2:
        return "—"
    m = mean_interval(xs)
    return "%.*f [%.*f, %.*f]" % (digits, m["mean"], digits, m["ci95"][0], digits, m["ci95"][1])


def main(folders: list[str]) -> None:
    tasks = {Path(f).name: load(f) for f in folders}
    for task, by in tasks.items():
        base = by.get("independent", {})
        print("\n### %s\n" % task)
        print("| row | seeds | final % | − chains | " + " | ".join(SIGNALS) + " |")
        print("|---|---|---|---|" + "---|" * len(SIGNALS))
        for name, runs in by.items():
            seeds = sorted(runs)
            diff = [100 * (runs[s]["final_success"] - base[s]["final_success"]) for s in seeds if s in base]
            sig = [run_signals(runs[s]) for s in seeds]
            cols = []
            for k in SIGNALS:
                xs = [x[k] for x in sig if x[k] is not None]
                cols.append(fmt_interval(xs, 3 if k == "variance" else 2) if xs else "—")
            print("| %s | %d | %.1f | %s | %s |" % (name, len(seeds), 100 * sum(runs[s]["final_success"] for s in seeds) / len(seeds),
                                                     fmt_interval(diff, 1) if name != "independent" else "—", " | ".join(cols)))
    # Within each task: does a run's signal under v5 predict how much forking in every tree
    # (base9-all) gains over v5 on the same seed? Pearson r over seeds.
    print("\n### Per seed, within a task: correlation of the v5 row's signal with base9-all − v5 (final, points)\n")
    print("| task | seeds | " + " | ".join(SIGNALS) + " |")
    print("|---|---|" + "---|" * len(SIGNALS))
    for task, by in tasks.items():
        v5, many = by.get("visits2-next", {}), by.get("base9-all", {})
        seeds = sorted(set(v5) & set(many))
        gain = [100 * (many[s]["final_success"] - v5[s]["final_success"]) for s in seeds]
        cols = []
        for k in SIGNALS:
            pairs = [(run_signals(v5[s])[k], g) for s, g in zip(seeds, gain)]
            pairs = [(x, g) for x, g in pairs if x is not None]
            cols.append("%+.2f" % pearson(pairs) if len(pairs) >= 3 else "—")
        print("| %s | %d | %s |" % (task, len(seeds), " | ".join(cols)))


def pearson(pairs: list[tuple[float, float]]) -> float:
    n = len(pairs)
    mx, my = sum(p[0] for p in pairs) / n, sum(p[1] for p in pairs) / n
    sxy = sum((x - mx) * (y - my) for x, y in pairs)
    sxx = sum((x - mx) ** 2 for x, _ in pairs)
    syy = sum((y - my) ** 2 for _, y in pairs)
    return sxy / (sxx * syy) ** 0.5 if sxx > 0 and syy > 0 else float("nan")


if __name__ == "__main__":
    main(sys.argv[1:])
