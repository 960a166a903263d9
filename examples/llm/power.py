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


def analyse(result: dict, target: float, hours: float, processes: int) -> str:
    runs = result["runs"]
    samplers = list(dict.fromkeys(r["sampler"] for r in runs))
    by = {s: sorted((r for r in runs if r["sampler"] == s), key=lambda r: r["seed"]) for s in samplers}
    seeds = [r["seed"] for r in by[samplers[0]]]
    n = len(seeds)
    if n < 3:
        raise SystemExit("power.py: the pilot has %d seeds; a spread needs at least 3" % n)
    m = result["machine"]
    lines = ["# Pilot: seed-to-seed spread and the committed run's size", "",
             "`%s` — seeds %d–%d (%d), samplers %s; load average %.1f at the start, %.1f at the end; %d processes; "
             "wall %.0f s." % (result["command"], seeds[0], seeds[-1], n, ", ".join(samplers), m["loadavg_start"][0],
                               m["loadavg_end"][0], m["processes"], m["wall_s"]), "",
             "## Spread of the paired differences (points)", "",
             "sd: standard deviation over seeds of the paired difference; sd↑: its one-sided 80%% upper confidence "
             "bound; eval share: the part of the final difference's variance that is evaluation noise; seeds: the "
             "fewest seeds for a 95%% half-width ≤ %.1f points at sd (at sd↑)." % (100 * target), "",
             "| difference | mean final | sd final | sd↑ final | eval share | seeds (sd↑) | mean of curve: sd | seeds (sd↑) |",
             "|---|---|---|---|---|---|---|---|"]
    checked = all("final_success_check" in r for r in runs)
    needed = {}
    for a, b in comparisons(samplers):
        final = [x["final_success"] - y["final_success"] for x, y in zip(by[a], by[b])]
        mean = [x["mean_success"] - y["mean_success"] for x, y in zip(by[a], by[b])]
        sf, sm = _sd(final), _sd(mean)
        share = "—"
        if checked:
            again = [x["final_success_check"] - y["final_success_check"] for x, y in zip(by[a], by[b])]
            noise = _sd([p - q for p, q in zip(final, again)]) ** 2 / 2
            share = "%.0f%%" % (100 * noise / sf ** 2) if sf > 0 else "—"
        nf, nfu = seeds_for_half_width(sf, target), seeds_for_half_width(sd_upper(sf, n), target)
        nm, nmu = seeds_for_half_width(sm, target), seeds_for_half_width(sd_upper(sm, n), target)
        needed["%s - %s" % (a, b)] = (nf, nfu)
        lines.append("| %s − %s | %+.1f | %.1f | %.1f | %s | %d (%d) | %.1f | %d (%d) |" % (
            a, b, 100 * sum(final) / n, 100 * sf, 100 * sd_upper(sf, n), share, nf, nfu, 100 * sm, nm, nmu))
    per_seed_wall = [sum(r["wall_s"] for r in runs if r["seed"] == s) + by[samplers[0]][i]["pretrain_s"] for i, s in enumerate(seeds)]
    per_seed_cpu = [sum(r["cpu_s"] for r in runs if r["seed"] == s) + by[samplers[0]][i]["pretrain_cpu_s"] for i, s in enumerate(seeds)]
    wall, cpu = sum(per_seed_wall) / n, sum(per_seed_cpu) / n
    lines += ["", "## Cost of a seed here", "",
              "| sampler | wall s per run | CPU s per run |", "|---|---|---|"]
    for s in samplers:
        lines.append("| %s | %.0f | %.0f |" % (s, sum(r["wall_s"] for r in by[s]) / n, sum(r["cpu_s"] for r in by[s]) / n))
    lines.append("| pre-training | %.0f | %.0f |" % (sum(r["pretrain_s"] for r in by[samplers[0]]) / n,
                                                     sum(r["pretrain_cpu_s"] for r in by[samplers[0]]) / n))
    affordable = processes * int(hours * 3600 // wall)
    lines += ["", "A seed with every sampler above: %.0f s of wall time in one of %d processes (%.0f CPU s: the machine gave "
              "each process %.0f%% of a core at this load). In %.1f h, %d processes finish about %d seeds at this load." % (
                  wall, m["processes"], cpu, 100 * cpu / wall, hours, processes, affordable), ""]
    key = "trace - independent"
    if key in needed:
        nf, nfu = needed[key]
        lines.append("TRACE (default rule) − independent chains, final success: %d seeds reach a half-width of %.1f points at the "
                     "pilot's sd, %d at its 80%% upper bound; about %.0f min (%.0f min) of wall time here with %d processes." % (
                         nf, 100 * target, nfu, math.ceil(nf / processes) * wall / 60, math.ceil(nfu / processes) * wall / 60,
                         processes))
    return "\n".join(lines) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("results", help="the pilot's results.json")
    ap.add_argument("--target", type=float, default=3.0, help="wanted 95%% half-width, points")
    ap.add_argument("--hours", type=float, default=1.0)
    ap.add_argument("--processes", type=int, default=2)
    args = ap.parse_args()
    result = json.loads(Path(args.results).read_text())
    sys.stdout.write(analyse(result, args.target / 100, args.hours, args.processes))
    return 0


if __name__ == "__main__":
    sys.exit(main())
