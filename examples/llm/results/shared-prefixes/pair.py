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

# (folder, {its row name → the row's name in the table}): every folder's chains are the same runs
# seed for seed, so any two rows of one seed pair.
FOLDERS = tuple((folder, {"independent": "independent", "entropy": "entropy", "independent-1.5x": "independent-1.5x"})
                for folder in ("recipe", "recipe-entropy-more"))
PAIRS = (("entropy", "independent"), ("entropy", "independent-1.5x"), ("independent-1.5x", "independent"))


def pooled_finals(folders) -> dict[tuple[str, int], float]:
    """(row, seed) → final success over `folders`; refuses a seed whose row differs between folders."""
    final: dict[tuple[str, int], float] = {}
    for folder, names in folders:
        for r in json.loads((HERE.parent / folder / "results.json").read_text())["runs"]:
            name = names.get(r["sampler"])
            if name is None:
                continue
            key = (name, r["seed"])
            if key in final and final[key] != r["final_success"]:
                raise SystemExit("%s seed %d differs between folders (%s)" % (name, r["seed"], folder))
            final[key] = r["final_success"]
    return final


def print_pairs(final: dict[tuple[str, int], float], pairs, title: str, column: str = "points") -> None:
    """One row per (a, b): a − b in points of final success over the seeds both have."""
    print("| %s | seeds | %s |" % (title, column))
    print("|---|---|---|")
    for a, b in pairs:
        seeds = sorted(s for (name, s) in final if name == a and (b, s) in final)
        m = mean_interval([100 * (final[a, s] - final[b, s]) for s in seeds])
        print("| %s − %s | %d (%d–%d) | %+.1f [%+.1f, %+.1f] |" % (a, b, len(seeds), seeds[0], seeds[-1], m["mean"], *m["ci95"]))


def main() -> None:
    print_pairs(pooled_finals(FOLDERS), PAIRS, "difference", "final success, points")


if __name__ == "__main__":
    main()
