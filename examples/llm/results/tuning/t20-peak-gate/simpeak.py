"""The t20 simulation table: v5 with entropy forking's placement (a base share of 9 on the 2
unforked nodes of highest uncertainty) behind the peak gate, with and without the cost gate, and
behind the cost gate alone (t19's row), each against v5 on the same tuning seeds (300-319).

    python3 examples/llm/results/tuning/t20-peak-gate/simpeak.py
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
T19 = HERE.parent / "t19-fork-signals"
sys.path.insert(0, str(HERE.parents[2]))
from stats import mean_interval  # noqa: E402


def load(path: Path) -> dict:
    return {(r["env"], r["learner"], r["seed"]): r for r in json.loads(path.read_text())}


def main() -> None:
    v5 = load(T19 / "sim-v5.json")
    rows = [("top 2, cheap + peak", load(HERE / "sim-v5-top2-cheap-peak.json")),
            ("top 2, peak", load(HERE / "sim-v5-top2-peak.json")),
            ("top 2, cheap (t19)", load(T19 / "sim-v5-base9top2-cheap.json"))]
    pairs = sorted({k[:2] for k in v5})
    print("| environment | learner | started at the prompt: v5, %s | %s |" % (", ".join(n for n, _ in rows),
                                                                        " | ".join("%s − v5 (points)" % n for n, _ in rows)))
    print("|---|---|---|" + "---|" * len(rows))
    behind = {n: 0 for n, _ in rows}
    for env, learner in pairs:
        keys = sorted(k for k in v5 if k[:2] == (env, learner))
        q = lambda r: sum(r[k]["rootShare"] for k in keys) / len(keys)
        cells = []
        for name, r in rows:
            d = mean_interval([100 * (r[k]["final"] - v5[k]["final"]) for k in keys])
            sep = d["ci95"][0] > 0 or d["ci95"][1] < 0
            behind[name] += int(d["ci95"][1] < 0)
            cells.append("%+.1f [%+.1f, %+.1f]%s" % (d["mean"], *d["ci95"], " *" if sep else ""))
        print("| %s | %s | %.2f, %s | %s |" % (env, learner, q(v5), ", ".join("%.2f" % q(r) for _, r in rows), " | ".join(cells)))
    print()
    print("Separably behind v5 (* and negative): " + ", ".join("%s on %d of %d pairs" % (n, b, len(pairs)) for n, b in behind.items()))


if __name__ == "__main__":
    main()
