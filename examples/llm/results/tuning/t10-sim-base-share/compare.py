"""Paired differences (points of final success, mean ± 95% t half-width over seeds, * separable)
between rows of simbase.ts, per (environment, learner):
    python3 examples/llm/results/tuning/t10-sim-base-share/compare.py v4 base1mixed base1 base9 base9mixed base9top2
The first name is the baseline; each name is NAME.json in this folder."""
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[2]))
from stats import mean_interval  # noqa: E402


def load(name):
    return {(r["env"], r["learner"], r["seed"]): r["final"] for r in json.loads((HERE / (name + ".json")).read_text())}


def main(base, names):
    b = load(base)
    rows = {n: load(n) for n in names}
    print("| environment | learner | " + " | ".join("%s − %s" % (n, base) for n in names) + " |")
    print("|---|---|" + "---|" * len(names))
    for env, learner in sorted({(e, l) for e, l, _ in b}):
        cells = []
        for n in names:
            d = [100 * (rows[n][k] - b[k]) for k in b if k[:2] == (env, learner) and k in rows[n]]
            m = mean_interval(d)
            lo, hi = m["ci95"]
            cells.append("%+.1f [%+.1f, %+.1f]%s" % (m["mean"], lo, hi, " *" if lo > 0 or hi < 0 else ""))
        print("| %s | %s | %s |" % (env, learner, " | ".join(cells)))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
