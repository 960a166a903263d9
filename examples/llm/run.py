"""Trains the tiny transformer policy with each sampler over several seeds and writes the results.

    python3 examples/llm/run.py --seeds 6 --out examples/llm/results      # the committed run
    python3 examples/llm/run.py --smoke --out /tmp/llm-smoke               # CI: 1 seed, a few steps

Writes `results.json` (every run, every step, summary with 95% intervals, the machine) and the
SVG charts `curve.svg` (success vs generated tokens) and `final.svg`.
"""

from __future__ import annotations

import argparse
import json
import math
import multiprocessing as mp
import os
import platform
import subprocess
import sys
import time
import warnings
from dataclasses import asdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
warnings.filterwarnings("ignore")

import torch  # noqa: E402
import transformers  # noqa: E402

from charts import write_charts  # noqa: E402
from stats import mean_interval, paired  # noqa: E402
from train import SAMPLERS, Config, run_seed  # noqa: E402

SMOKE = dict(steps=3, prompt_pool=8, prompts_per_step=4, tokens_per_step=192, pretrain_steps=40,
             eval_every=3, eval_samples=2, trace_rollouts_per_tree=2)


def machine() -> dict:
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), platform.processor()) \
        if os.path.exists("/proc/cpuinfo") else platform.processor()
    node = subprocess.run(["node", "--version"], capture_output=True, text=True).stdout.strip()
    commit = subprocess.run(["git", "-C", str(HERE), "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    return {"cpu": cpu, "cores": os.cpu_count(), "platform": platform.platform(), "python": platform.python_version(),
            "torch": torch.__version__, "transformers": transformers.__version__, "node": node,
            "trace_alloc_commit": commit, "loadavg_start": os.getloadavg()}


def summarize(runs: list[dict], samplers: list[str]) -> dict:
    by = {s: sorted((r for r in runs if r["sampler"] == s), key=lambda r: r["seed"]) for s in samplers}
    out = {}
    for s, rs in by.items():
        points = len(rs[0]["curve"])
        out[s] = {
            "final_success": mean_interval([r["final_success"] for r in rs]),
            "mean_success": mean_interval([r["mean_success"] for r in rs]),
            "curve": [{"tokens": rs[0]["curve"][i][0], **mean_interval([r["curve"][i][1] for r in rs])} for i in range(points)],
            "step_s": mean_interval([r["step_s"] for r in rs]),
            "rollouts_per_step": mean_interval([sum(x["rollouts"] for x in r["steps"]) / len(r["steps"]) for r in rs]),
            "successes_per_step": mean_interval([sum(x["successes"] for x in r["steps"]) / len(r["steps"]) for r in rs]),
        }
        if s.startswith("trace"):
            out[s]["allocator_share"] = mean_interval([r["allocator_share"] for r in rs])
            out[s]["allocator_ms_per_step"] = mean_interval([1e3 * r["allocator_s"] for r in rs])
            if all("root_branches" in r for r in rs):
                out[s]["root_share"] = mean_interval([r["root_branches"] / r["planned_branches"] for r in rs])
    diffs = {}
    for t in [s for s in samplers if s.startswith("trace")]:
        for base in ("independent", "uniform"):
            if base in by:
                for metric in ("final_success", "mean_success"):
                    diffs["%s - %s, %s" % (t, base, metric)] = paired([r[metric] for r in by[t]], [r[metric] for r in by[base]])
    return {"samplers": out, "paired_differences": diffs}


def _ci(v: dict, scale: float = 1.0, fmt: str = "%.1f") -> str:
    return (fmt + " [" + fmt + ", " + fmt + "]") % (scale * v["mean"], scale * v["ci95"][0], scale * v["ci95"][1])


def summary_markdown(result: dict) -> str:
    """The committed table: success in %, paired differences in points, 95% t-intervals over seeds."""
    m, c, a = result["machine"], result["config"], result["allocator"] or {}
    s = result["summary"]["samplers"]
    n = next(iter(s.values()))["final_success"]["n"]
    lines = ["# Tiny GPT-2 on the calculator task: results", "",
             "`%s` — %d seeds, %d steps × %d generated tokens, %d prompts per step; trace-alloc rule %s, %s." % (
                 result["command"], n, c["steps"], c["tokens_per_step"], c["prompts_per_step"], a.get("rule"), a.get("transport")),
             "", "| sampler | final success % | mean success during training % | rollouts / step | successful rollouts / step | step time s | allocator share of step % |",
             "|---|---|---|---|---|---|---|"]
    for name, v in s.items():
        share = _ci(v["allocator_share"], 100) if "allocator_share" in v else "—"
        lines.append("| %s | %s | %s | %s | %s | %s | %s |" % (
            name, _ci(v["final_success"], 100), _ci(v["mean_success"], 100), _ci(v["rollouts_per_step"]),
            _ci(v["successes_per_step"]), _ci(v["step_s"], 1, "%.2f"), share))
    lines += ["", "Paired differences (same seed, same pre-trained policy), percentage points:", "",
              "| difference | mean [95% CI] |", "|---|---|"]
    for k, v in result["summary"]["paired_differences"].items():
        lines.append("| %s | %s |" % (k, _ci(v, 100, "%+.1f")))
    lines += ["", "Machine: %s, %d cores, Python %s, torch %s, transformers %s, Node %s; %d processes; load average %.1f at the "
              "start, %.1f at the end (shared machine); wall %.0f s; trace-alloc commit %s." % (
                  m["cpu"], m["cores"], m["python"], m["torch"], m["transformers"], m["node"], m["processes"],
                  m["loadavg_start"][0], m["loadavg_end"][0], m["wall_s"], m["trace_alloc_commit"]), ""]
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, default=6)
    ap.add_argument("--first-seed", type=int, default=0)
    ap.add_argument("--processes", type=int, default=2)
    ap.add_argument("--out", default=str(HERE / "results"))
    ap.add_argument("--smoke", action="store_true", help="1 seed, a few steps (CI)")
    ap.add_argument("--samplers", default=",".join(SAMPLERS))
    ap.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE",
                    help="override a Config field (e.g. trace_rollouts_per_tree=2)")
    ap.add_argument("--report-only", action="store_true", help="rewrite summary and charts from OUT/results.json")
    args = ap.parse_args()
    if args.report_only:
        return report(Path(args.out), json.loads((Path(args.out) / "results.json").read_text()))
    overrides = dict(SMOKE) if args.smoke else {}
    for item in args.set:
        key, value = item.split("=", 1)
        overrides[key] = type(getattr(Config(), key))(value)
    seeds = [args.first_seed] if args.smoke else list(range(args.first_seed, args.first_seed + args.seeds))
    samplers = args.samplers.split(",")
    info = machine()
    t0 = time.time()
    jobs = [(asdict(Config(seed=s, **overrides)), samplers) for s in seeds]
    if args.processes > 1 and len(jobs) > 1:
        with mp.get_context("spawn").Pool(min(args.processes, len(jobs))) as pool:
            runs = [r for rs in pool.map(run_seed, jobs, chunksize=1) for r in rs]
    else:
        runs = [r for job in jobs for r in run_seed(job)]
    info["wall_s"] = time.time() - t0
    info["loadavg_end"] = os.getloadavg()
    info["processes"] = args.processes
    trace = next((r for r in runs if r["sampler"].startswith("trace")), None)
    result = {
        "command": "python3 examples/llm/run.py " + " ".join(sys.argv[1:]),
        "machine": info,
        "config": jobs[0][0],
        "allocator": {"transport": trace["transport"], "params": trace["params"], "rule": trace["rule"]} if trace else None,
        "summary": summarize(runs, samplers),
        "runs": runs,
    }
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_text(json.dumps(result, indent=1) + "\n")
    return report(out, result)


def report(out: Path, result: dict) -> int:
    result["summary"] = summarize(result["runs"], list(dict.fromkeys(r["sampler"] for r in result["runs"])))
    write_charts(result, out)
    (out / "summary.md").write_text(summary_markdown(result))
    for s, v in result["summary"]["samplers"].items():
        print("%-14s final %.3f [%.3f, %.3f]  mean %.3f [%.3f, %.3f]  step %.2fs%s" % (
            s, v["final_success"]["mean"], *v["final_success"]["ci95"], v["mean_success"]["mean"], *v["mean_success"]["ci95"],
            v["step_s"]["mean"], "  allocator %.1f%%" % (100 * v["allocator_share"]["mean"]) if "allocator_share" in v else ""))
    for k, v in result["summary"]["paired_differences"].items():
        print("%-40s %+.3f [%+.3f, %+.3f]" % (k, v["mean"], *v["ci95"]))
    print("wall %.0f s, written to %s" % (result["machine"]["wall_s"], out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
