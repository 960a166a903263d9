"""Paired differences (points of final success, mean ± 95% t half-width over seeds, * separable)
between rows of simbase.ts, per (environment, learner):
    python3 examples/llm/results/tuning/t10-sim-base-share/compare.py v4 base1mixed base1 base9 base9mixed base9top2
The first name is the baseline; each name is NAME.json in this folder, or in DIR with
`--dir DIR` (a name may be a path relative to it: `--dir ../t16-sim-gate v4 ../t10-sim-base-share/indep`);
`a+b` pools the runs of a.json and b.json (made on other seeds) into one row."""
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[2]))
from stats import mean_interval  # noqa: E402


def load(name, where=HERE):
    """NAME.json's runs by (env, learner, seed); `a+b` pools a.json and b.json (other seeds)."""
    out = {}
    for part in name.split("+"):
        out.update({(r["env"], r["learner"], r["seed"]): r["final"] for r in json.loads((where / (part + ".json")).read_text())})
    return out


def main(base, names, where=HERE):
    b = load(base, where)
    rows = {n: load(n, where) for n in names}
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
    args = sys.argv[1:]
    where = HERE
    if args[:1] == ["--dir"]:
        where, args = (HERE / args[1]).resolve(), args[2:]
    main(args[0], args[1:], where)
