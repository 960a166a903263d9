"""Two `run.py` folders that differ in one setting (an ablation), paired by sampler and seed.

    python3 examples/llm/compare.py BASE ABLATION [--samplers A,B] [--out FILE]

For every sampler both folders ran, on the seeds both ran: each folder's final and mean success,
mixed-outcome share and step time, and BASE − ABLATION paired by seed; then, within each folder,
every other sampler against independent chains on those same seeds, so the ablation's effect on
the comparison the run is about (TRACE against chains) reads off one table. The setting that
differs is named from the two folders' configs; folders that differ in no setting, or in the
task, are refused. `--samplers` keeps only the named samplers (each must have run in both), so a
sampler one folder ran on fewer seeds does not shorten the others' pairing; an entry `B:A` pairs
the base's sampler B with the ablation's sampler A (e.g. `trace:trace-v3`: v3 under the ablated
setting against v4 under the base's).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from report import BASELINE, _mixed_ratio, _task, as_run
from stats import mean_interval, paired


def load(folder: Path) -> dict:
    path = folder / "results.json"
    try:
        return json.loads(path.read_text())
    except FileNotFoundError:
        raise SystemExit("%s: no results.json (a run.py --out folder is expected)" % folder)


def differing_settings(a: dict, b: dict) -> dict[str, tuple]:
    """The run-wide config fields whose values differ (the seed is per run, not a setting); a setting
    added since one folder was made counts there at the value it had then (`LATER_SETTINGS`)."""
    a, b = as_run(a), as_run(b)
    keys = (set(a) | set(b)) - {"seed"}
    return {k: (a.get(k), b.get(k)) for k in sorted(keys) if a.get(k) != b.get(k)}


def _runs(r: dict) -> dict[tuple[str, int], dict]:
    return {(x["sampler"], x["seed"]): x for x in r["runs"]}


def _fmt(v: dict, sign: bool = True) -> str:
    f = "%+.1f [%+.1f, %+.1f]" if sign else "%.1f [%.1f, %.1f]"
    return f % (100 * v["mean"], 100 * v["ci95"][0], 100 * v["ci95"][1])


def compare(base: dict, ablation: dict, names: tuple[str, str], only: list[str] | None = None) -> str:
    if _task(base) != _task(ablation):  # runs made before --task have no task field: the calculator
        raise SystemExit("the two folders trained different tasks (%s, %s)" % (_task(base), _task(ablation)))
    diff = differing_settings({**base["config"], "task": _task(base)}, {**ablation["config"], "task": _task(ablation)})
    if not diff:
        raise SystemExit("the two folders' runs share every setting: nothing is ablated")
    rb, ra = _runs(base), _runs(ablation)
    in_base = set(k[0] for k in rb)
    in_ablation = list(dict.fromkeys(x["sampler"] for x in ablation["runs"]))
    # (base sampler, ablation sampler) pairs: each sampler both ran against itself, or as --samplers names them
    if only is None:
        pairs = [(m, m) for m in in_ablation if m in in_base]
        if not pairs:
            raise SystemExit("no sampler ran in both folders")
    else:
        pairs = [tuple(m.split(":", 1)) if ":" in m else (m, m) for m in only]
        missing = [m for m, (mb, ma) in zip(only, pairs) if mb not in in_base or ma not in in_ablation]
        if missing:
            raise SystemExit("--samplers: %s did not run in both folders (base ran: %s; ablation ran: %s)"
                             % (", ".join(missing), ", ".join(sorted(in_base)), ", ".join(in_ablation)))
    seeds = sorted({k[1] for k in rb} & {k[1] for k in ra})
    seeds = [s for s in seeds if all((mb, s) in rb and (ma, s) in ra for mb, ma in pairs)]
    if not seeds:
        raise SystemExit("no seed ran every shared sampler in both folders")
    setting = "; ".join("`%s`: %s → %s" % (k, v[0], v[1]) for k, v in diff.items())
    lines = ["# Ablation: %s against %s" % names, "",
             "Setting changed: %s. Seeds %s (%d), the ones both folders ran for every sampler below; "
             "success in points, mean [95%% t-interval over seeds], differences paired by seed." % (
                 setting, _seed_range(seeds), len(seeds)), "",
             "| sampler | %s final | %s final | Δ final (%s − %s) | Δ mean | mixed-outcome groups %% (%s / %s) | step s (%s / %s) |" % (
                 names + names + names + names),
             "| --- | --- | --- | --- | --- | --- | --- |"]
    col = lambda runs, m, key: [runs[(m, s)][key] for s in seeds]  # noqa: E731
    label = lambda mb, ma: mb if mb == ma else "%s / %s" % (mb, ma)  # noqa: E731
    for mb, ma in pairs:
        fb, fa = col(rb, mb, "final_success"), col(ra, ma, "final_success")
        sb, sa = col(rb, mb, "mean_success"), col(ra, ma, "mean_success")
        mix = [sum(_mixed_ratio(runs[(m, s)]) for s in seeds) / len(seeds) for runs, m in ((rb, mb), (ra, ma))]
        step = [sum(runs[(m, s)]["step_s"] for s in seeds) / len(seeds) for runs, m in ((rb, mb), (ra, ma))]
        lines.append("| %s | %s | %s | %s | %s | %.1f / %.1f | %.2f / %.2f |" % (
            label(mb, ma), _fmt(mean_interval(fb), False), _fmt(mean_interval(fa), False), _fmt(paired(fb, fa)),
            _fmt(paired(sb, sa)), 100 * mix[0], 100 * mix[1], step[0], step[1]))
    if (BASELINE, BASELINE) in pairs and len(pairs) > 1:
        lines += ["", "Against independent chains within each folder, same seeds:", "",
                  "| difference | %s: Δ final | %s: Δ final | %s: Δ mean | %s: Δ mean |" % (names + names),
                  "| --- | --- | --- | --- | --- |"]
        for mb, ma in pairs:
            if (mb, ma) == (BASELINE, BASELINE):
                continue
            cells = [_fmt(paired(col(runs, m, k), col(runs, BASELINE, k)))
                     for k in ("final_success", "mean_success") for runs, m in ((rb, mb), (ra, ma))]
            lines.append("| %s − %s | %s |" % (label(mb, ma), BASELINE, " | ".join(cells)))
    lines += ["", "Step times come from each folder's own runs, made at other times and loads; compare them "
              "within a folder, not across.", "",
              "Commands:", "", "- %s: `%s`" % (names[0], base["command"]),
              "- %s: `%s`" % (names[1], ablation["command"])]
    return "\n".join(lines) + "\n"


def _seed_range(seeds: list[int]) -> str:
    return "%d–%d" % (seeds[0], seeds[-1]) if seeds == list(range(seeds[0], seeds[-1] + 1)) else ", ".join(map(str, seeds))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("base", type=Path)
    ap.add_argument("ablation", type=Path)
    ap.add_argument("--names", default="base,ablation", help="the two folders' names in the table")
    ap.add_argument("--samplers", help="only these samplers, comma-separated; B:A pairs the base's B with the "
                    "ablation's A (default: every sampler both ran, each with itself)")
    ap.add_argument("--out", type=Path, help="write the table here (default: standard output)")
    args = ap.parse_args(argv)
    names = tuple(args.names.split(","))
    if len(names) != 2:
        raise SystemExit("--names takes two names, comma-separated")
    only = None if args.samplers is None else [m for m in args.samplers.split(",") if m]
    text = compare(load(args.base), load(args.ablation), names, only)
    if args.out:
        args.out.write_text(text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
