"""Entropy forking against chains at equal tokens and at 1.5× the tokens, on every reported seed
that has both rows: `../recipe/` (seeds 0–59 of chains, 0–11 of the other rows) with
`../recipe-entropy-more/` (entropy forking and chains at 1.5×, seeds 12 on).

    python3 examples/llm/results/shared-prefixes/pair.py

With shared prefixes entropy forking's step costs about what chains at 1.5× the tokens cost
(README.md here), so its difference with that row is its difference at about equal wall-clock.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))
from stats import mean_interval  # noqa: E402

FOLDERS = ("recipe", "recipe-entropy-more")
PAIRS = (("entropy", "independent"), ("entropy", "independent-1.5x"), ("independent-1.5x", "independent"))


def main() -> None:
    final: dict[tuple[str, int], float] = {}
    for folder in FOLDERS:
        for r in json.loads((HERE.parent / folder / "results.json").read_text())["runs"]:
            key = (r["sampler"], r["seed"])
            if key in final:
                raise SystemExit("%s seed %d is in two folders" % key)
            final[key] = r["final_success"]
    print("| difference | seeds | final success, points |")
    print("|---|---|---|")
    for a, b in PAIRS:
        seeds = sorted(s for (name, s) in final if name == a and (b, s) in final)
        m = mean_interval([100 * (final[a, s] - final[b, s]) for s in seeds])
        print("| %s − %s | %d (%d–%d) | %+.1f [%+.1f, %+.1f] |" % (a, b, len(seeds), seeds[0], seeds[-1], m["mean"], *m["ci95"]))


if __name__ == "__main__":
    main()
