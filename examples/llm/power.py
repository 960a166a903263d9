"""From a pilot run to the committed run's size: the seed-to-seed spread of each paired
difference, how much of it is evaluation noise, what a seed costs here, and how many seeds a
95% interval of a given half-width needs.

    python3 examples/llm/power.py PILOT/results.json --target 3 --hours 1 > PILOT/power.md

The pilot must use seeds the committed run does not (tuning only on seeds the reports do not
use) and `--set eval_check=1`, which evaluates every final policy a second time with other
random numbers: the two evaluations of a paired difference differ only by evaluation noise, so
half the variance of their difference is the evaluation noise's share.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from report import comparisons  # noqa: E402
from stats import mean_interval, seeds_for_half_width  # noqa: E402

Z80 = 0.8416  # one-sided 80% normal quantile


def chi2_quantile(p_lower_z: float, k: int) -> float:
    """Wilson–Hilferty approximation of the chi-square quantile with k degrees of freedom at the
    normal quantile z (z = −0.8416 for the 20% quantile)."""
    return k * (1 - 2 / (9 * k) + p_lower_z * math.sqrt(2 / (9 * k))) ** 3


def sd_upper(sd: float, n: int) -> float:
    """One-sided 80% upper confidence bound of a standard deviation estimated from n values."""
    k = n - 1
    return sd * math.sqrt(k / chi2_quantile(-Z80, k))


def _sd(xs: list[float]) -> float:
    return mean_interval(xs)["sd"]


def analyse(result: dict, target: float, hours: float, processes: int, plan: tuple[int, int] | None) -> str:
    runs = result["runs"]
    samplers = list(dict.fromkeys(r["sampler"] for r in runs))
    by = {s: sorted((r for r in runs if r["sampler"] == s), key=lambda r: r["seed"]) for s in samplers}
    seeds = sorted({r["seed"] for r in runs})
    m = result["machine"]
    lines = ["# Pilot: seed-to-seed spread and the committed run's size", "",
             "`%s` — seeds %d–%d, samplers %s; load average %.1f at the start, %.1f at the end; %d processes; "
             "wall %.0f s." % (result["command"], seeds[0], seeds[-1], ", ".join("%s (%d seeds)" % (s, len(by[s])) for s in samplers),
                               m["loadavg_start"][0], m["loadavg_end"][0], m["processes"], m["wall_s"]), "",
             "## Spread of the paired differences (points)", "",
             "sd: standard deviation over seeds of the paired difference; sd↑: its one-sided 80%% upper confidence "
             "bound; eval share: the part of the final difference's variance that is evaluation noise; seeds: the "
             "fewest seeds for a 95%% half-width ≤ %.1f points at sd (at sd↑)." % (100 * target), "",
             "| difference | seeds | mean final | sd final | sd↑ final | eval share | seeds needed (sd↑) | mean of curve: sd | seeds needed (sd↑) |",
             "|---|---|---|---|---|---|---|---|---|"]
    needed = {}
    for a, b in comparisons(samplers):
        common = sorted({r["seed"] for r in by[a]} & {r["seed"] for r in by[b]})
        n = len(common)
        if n < 3:
            continue
        ra = [r for r in by[a] if r["seed"] in common]
        rb = [r for r in by[b] if r["seed"] in common]
        final = [x["final_success"] - y["final_success"] for x, y in zip(ra, rb)]
        mean = [x["mean_success"] - y["mean_success"] for x, y in zip(ra, rb)]
        sf, sm = _sd(final), _sd(mean)
        share = "—"
        if all("final_success_check" in r for r in ra + rb) and sf > 0:
            again = [x["final_success_check"] - y["final_success_check"] for x, y in zip(ra, rb)]
            noise = _sd([p - q for p, q in zip(final, again)]) ** 2 / 2
            share = "%.0f%%" % (100 * noise / sf ** 2)
        nf, nfu = seeds_for_half_width(sf, target), seeds_for_half_width(sd_upper(sf, n), target)
        nm, nmu = seeds_for_half_width(sm, target), seeds_for_half_width(sd_upper(sm, n), target)
        needed["%s - %s" % (a, b)] = (nf, nfu, sf, n)
        lines.append("| %s − %s | %d | %+.1f | %.1f | %.1f | %s | %d (%d) | %.1f | %d (%d) |" % (
            a, b, n, 100 * sum(final) / n, 100 * sf, 100 * sd_upper(sf, n), share, nf, nfu, 100 * sm, nm, nmu))
    first = {}
    for r in runs:
        first.setdefault(r["seed"], r)
    pre_wall = sum(r["pretrain_s"] for r in first.values()) / len(first)
    pre_cpu = sum(r["pretrain_cpu_s"] for r in first.values()) / len(first)
    wall = {s: sum(r["wall_s"] for r in by[s]) / len(by[s]) for s in samplers}
    cpu = {s: sum(r["cpu_s"] for r in by[s]) / len(by[s]) for s in samplers}
    lines += ["", "## Cost here (means over the seeds each sampler ran)", "",
              "| sampler | wall s per run | CPU s per run (trainer and its service) |", "|---|---|---|"]
    for s in samplers:
        lines.append("| %s | %.0f | %.1f |" % (s, wall[s], cpu[s]))
    lines.append("| pre-training, per seed | %.0f | %.1f |" % (pre_wall, pre_cpu))
    share = sum(cpu.values()) / sum(wall.values())
    full_cpu, full_wall = pre_cpu + sum(cpu.values()), pre_wall + sum(wall.values())
    pair = [s for s in ("independent", "trace") if s in samplers]
    pair_cpu, pair_wall = pre_cpu + sum(cpu[s] for s in pair), pre_wall + sum(wall[s] for s in pair)
    lines += ["", "A seed with every sampler above: %.0f CPU s, %.0f s of wall time in one of %d processes at this load "
              "(each process got %.0f%% of a core); with %s only: %.0f CPU s, %.0f s." % (
                  full_cpu, full_wall, m["processes"], 100 * share, " and ".join(pair), pair_cpu, pair_wall)]
    key = "trace - independent"
    if key in needed:
        nf, nfu, sf, n = needed[key]
        lines += ["", "TRACE (default rule) − independent chains, final success: %d seeds reach a half-width of %.1f points "
                  "at the pilot's sd (%.1f points over %d seeds), %d at its 80%% upper bound." % (nf, 100 * target, 100 * sf, n, nfu)]
    if plan:
        total, full = plan
        c = full * full_cpu + (total - full) * pair_cpu
        w = full * full_wall + (total - full) * pair_wall
        lines += ["", "Plan: %d seeds, the first %d with every sampler: %.0f CPU s; wall with %d processes about %.0f min "
                  "on an idle machine (a process per core) and %.0f min at this pilot's load." % (
                      total, full, c, processes, c / processes / 60, w / processes / 60)]
    lines += ["", "In %.1f h at this load, %d processes finish about %d seeds with every sampler, or %d with %s only." % (
        hours, processes, processes * int(hours * 3600 // full_wall), processes * int(hours * 3600 // pair_wall), " and ".join(pair))]
    return "\n".join(lines) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("results", help="the pilot's results.json")
    ap.add_argument("--target", type=float, default=3.0, help="wanted 95%% half-width, points")
    ap.add_argument("--hours", type=float, default=1.0)
    ap.add_argument("--processes", type=int, default=2)
    ap.add_argument("--plan", default=None, metavar="N,K", help="cost of a run of N seeds, the first K with every sampler")
    args = ap.parse_args()
    result = json.loads(Path(args.results).read_text())
    plan = tuple(int(x) for x in args.plan.split(",")) if args.plan else None
    sys.stdout.write(analyse(result, args.target / 100, args.hours, args.processes, plan))
    return 0


if __name__ == "__main__":
    sys.exit(main())
