"""The step-time table of README.md here, from the four run folders beside this file.

    python3 examples/llm/results/shared-prefixes/table.py

Per task and sampler: the mean step, generation, update and allocator seconds over the seeds,
without and with the shared prefixes (`prefix_cache=true`, `update_rows=auto`), each step as a
range over seeds of its ratio to the chains step of the same seed and setting; the layout the
update took; and whether each seed's final success is the same under both settings.
"""

from __future__ import annotations

import json
from pathlib import Path

HERE = Path(__file__).resolve().parent
TASKS = ("recipe", "calculator")


def runs(folder: str) -> dict[tuple[str, int], dict]:
    data = json.loads((HERE / folder / "results.json").read_text())
    return {(r["sampler"], r["seed"]): r for r in data["runs"]}


def ratio_range(rows: dict, sampler: str) -> str:
    ratios = [r["step_s"] / rows["independent", seed]["step_s"] for (name, seed), r in rows.items() if name == sampler]
    return "%.2f–%.2f" % (min(ratios), max(ratios))


def mean(rows: dict, sampler: str, key: str) -> float:
    values = [r.get(key, 0.0) for (name, _), r in rows.items() if name == sampler]
    return sum(values) / len(values)


def main() -> None:
    print("| task | sampler | setting | step s | generation s | update s | allocator s | × chains' step | update rows (steps) |")
    print("|---|---|---|---|---|---|---|---|---|")
    same = []
    for task in TASKS:
        plain, shared = runs("%s-plain" % task), runs("%s-shared" % task)
        samplers = list(dict.fromkeys(name for name, _ in plain))
        for sampler in samplers:
            for setting, rows in (("plain", plain), ("shared", shared)):
                layouts: dict[str, int] = {}
                for (name, _), r in rows.items():
                    if name == sampler:
                        for s in r["steps"]:
                            key = s.get("update_rows", "leaves") or "none"
                            layouts[key] = layouts.get(key, 0) + 1
                print("| %s | %s | %s | %.3f | %.3f | %.3f | %.3f | %s | %s |" % (
                    task, sampler, setting, mean(rows, sampler, "step_s"), mean(rows, sampler, "generate_s"),
                    mean(rows, sampler, "update_s"), mean(rows, sampler, "allocator_s"), ratio_range(rows, sampler),
                    ", ".join("%s %d" % kv for kv in sorted(layouts.items()))))
            for (name, seed), r in sorted(plain.items()):
                if name == sampler:
                    same.append("%s %s seed %d: final %.3f plain, %.3f shared" % (
                        task, sampler, seed, r["final_success"], shared[name, seed]["final_success"]))
    print()
    for line in same:
        print("- " + line)


if __name__ == "__main__":
    main()
