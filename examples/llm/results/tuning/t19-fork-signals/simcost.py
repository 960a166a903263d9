"""The t19 simulation table: per (environment, learner), what a fork costs under v5 and under v5
with a base fork share of 9 in every tree, that share's effect on final success, and the same
share behind the cost gate (only in trees whose base forks cost at most a third of a chain).

    python3 examples/llm/results/tuning/t19-fork-signals/simcost.py

A fork's cost is estimated from the rows' mean environment steps per started rollout s and share
of rollouts started at the prompt q, taking a fresh chain to cost what a chain costs in the
independent-chains row of the same seed (s_c): (s − q·s_c) / ((1 − q)·s_c). Seeds where the
row started (nearly) nothing below the prompt (q ≥ 0.999) have no fork cost.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[2]))
from stats import mean_interval  # noqa: E402


def load(name: str) -> dict:
    return {(r["env"], r["learner"], r["seed"]): r for r in json.loads((HERE / name).read_text())}


def fork_cost(row: dict, chains: dict) -> float | None:
    q, s, sc = row["rootShare"], row["stepsPerRollout"], chains["stepsPerRollout"]
    return None if q >= 0.999 else (s - q * sc) / ((1 - q) * sc)


def main() -> None:
    chains, v5, many, cheap = (load("sim-indep.json"), load("sim-v5.json"), load("sim-v5-base9.json"),
                               load("sim-v5-base9-cheap.json"))
    pairs = sorted({k[:2] for k in many})
    print("| environment | learner | fork cost, v5 | fork cost, v5 + base 9 | started at the prompt: v5, + base 9, + base 9 cheap | base 9 − v5 (points) | base 9 cheap − v5 | v5 − chains (points) |")
    print("|---|---|---|---|---|---|---|---|")
    for env, learner in pairs:
        keys = sorted(k for k in many if k[:2] == (env, learner))
        cv = [c for c in (fork_cost(v5[k], chains[k]) for k in keys) if c is not None]
        cm = [c for c in (fork_cost(many[k], chains[k]) for k in keys) if c is not None]
        d = mean_interval([100 * (many[k]["final"] - v5[k]["final"]) for k in keys])
        dc = mean_interval([100 * (v5[k]["final"] - chains[k]["final"]) for k in keys])
        dg = mean_interval([100 * (cheap[k]["final"] - v5[k]["final"]) for k in keys])
        q = lambda rows: sum(rows[k]["rootShare"] for k in keys) / len(keys)
        star = lambda m: " *" if m["ci95"][0] > 0 or m["ci95"][1] < 0 else ""
        print("| %s | %s | %s | %.2f | %.2f, %.2f, %.2f | %+.1f [%+.1f, %+.1f]%s | %+.1f [%+.1f, %+.1f]%s | %+.1f [%+.1f, %+.1f]%s |" % (
            env, learner, "%.2f" % (sum(cv) / len(cv)) if cv else "—", sum(cm) / len(cm), q(v5), q(many), q(cheap),
            d["mean"], *d["ci95"], star(d), dg["mean"], *dg["ci95"], star(dg), dc["mean"], *dc["ci95"], star(dc)))

    # The base share on the 2 unforked nodes of highest uncertainty (entropy forking's picks), in
    # every tree and behind the cost gate.
    top2, top2_cheap = load("sim-v5-base9top2.json"), load("sim-v5-base9top2-cheap.json")
    print()
    print("| environment | learner | fork cost, + top 2 | started at the prompt: + top 2, + top 2 cheap | top 2 − v5 (points) | top 2 cheap − v5 |")
    print("|---|---|---|---|---|---|")
    for env, learner in pairs:
        keys = sorted(k for k in many if k[:2] == (env, learner))
        ct = [c for c in (fork_cost(top2[k], chains[k]) for k in keys) if c is not None]
        d = mean_interval([100 * (top2[k]["final"] - v5[k]["final"]) for k in keys])
        dg = mean_interval([100 * (top2_cheap[k]["final"] - v5[k]["final"]) for k in keys])
        q = lambda rows: sum(rows[k]["rootShare"] for k in keys) / len(keys)
        star = lambda m: " *" if m["ci95"][0] > 0 or m["ci95"][1] < 0 else ""
        print("| %s | %s | %.2f | %.2f, %.2f | %+.1f [%+.1f, %+.1f]%s | %+.1f [%+.1f, %+.1f]%s |" % (
            env, learner, sum(ct) / len(ct), q(top2), q(top2_cheap), d["mean"], *d["ci95"], star(d), dg["mean"], *dg["ci95"], star(dg)))


if __name__ == "__main__":
    main()
