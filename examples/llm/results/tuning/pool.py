"""Paired differences in final success between tune.py rows, pooled over several tune.py output
folders (a row's runs are matched by seed; a seed a row lacks is left out of that pair).

    python3 examples/llm/results/tuning/pool.py t5-recipe-base t5-recipe-v4 t6-recipe-base
"""

import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))
from stats import mean_interval  # noqa: E402


def main(folders):
    rows: dict = {}
    for f in folders:
        for r in json.loads((HERE / f / "runs.json").read_text())["runs"]:
            rows.setdefault(r["sampler"], {})[r["seed"]] = r["final_success"]
    names = list(rows)
    for a in names:
        for b in names:
            seeds = sorted(set(rows[a]) & set(rows[b]))
            if a == b or len(seeds) < 2:
                continue
            m = mean_interval([100 * (rows[a][s] - rows[b][s]) for s in seeds])
            print(f"{a} − {b}: {len(seeds)} seeds, {m['mean']:+.1f} [{m['ci95'][0]:+.1f}, {m['ci95'][1]:+.1f}]")


if __name__ == "__main__":
    main(sys.argv[1:])
