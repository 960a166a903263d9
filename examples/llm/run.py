"""Trains the GPT-2 policy with each sampler over several seeds and writes the results.

    python3 examples/llm/run.py --seeds 60 --full-seeds 12 --out examples/llm/results   # the committed run
    python3 examples/llm/run.py --smoke --out /tmp/llm-smoke                 # CI: 1 seed, a few steps
    python3 examples/llm/run.py --task recipe --smoke --out /tmp/llm-smoke   # the same on the recipe task
    python3 examples/llm/run.py --profile h200 --out OUT                     # the borrowed-GPU run (device/run.sh)

Writes `results.json` (every run, every step, the summary with 95% intervals, the machine),
`summary.md` and the SVG charts `curve.svg` (success vs generated tokens) and `final.svg`.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import platform
import signal
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

from allocator_client import default_rule, service_command  # noqa: E402
from charts import write_charts  # noqa: E402
from report import as_run, markdown, summarize  # noqa: E402
from tasks import TASKS, get_task  # noqa: E402
from train import SAMPLERS, Config, config_value, run_seed  # noqa: E402

# The comparison the committed run is sized for (`--full-seeds`).
PRIMARY = ("independent", "trace")
# Settings that differ from `Config`'s defaults (the committed CPU run), by profile. A task's own
# settings (`tasks.Task.settings`: "cpu" under every profile, then its entry for the profile) come
# on top, and `--set` last.
PROFILES = {
    "cpu": {},
    # CI: every sampler, a few steps, small enough for well under a minute. 150 pre-training steps:
    # with 40 no rollout succeeded, every advantage was 0 and nothing was trained.
    "smoke": dict(steps=3, prompt_pool=8, prompts_per_step=4, tokens_per_step=160, pretrain_steps=150,
                  eval_every=3, eval_samples=2),
    # The borrowed H200: an 8-layer, 256-wide GPT-2 (6.3 M parameters) on the committed run's task,
    # samplers and tokens per step; pre-trained until 15% success (its size learns faster), and
    # 30 steps, sized so that 64 seeds fit the device time (an estimate; README.md).
    "h200": dict(layers=8, hidden=256, heads=8, device="cuda", pretrain_steps=1500, pretrain_until=0.15,
                 steps=30, eval_every=10),
    # The H200 profile's code path at a tiny size on the CPU (device/run.sh --tiny, its test).
    "h200-tiny": dict(layers=8, hidden=32, heads=4, steps=2, prompt_pool=8, prompts_per_step=4, tokens_per_step=96,
                      pretrain_steps=50, pretrain_until=0.9, eval_every=2, eval_samples=2),
}


def machine(processes: int) -> dict:
    cpu = platform.processor()
    if os.path.exists("/proc/cpuinfo"):
        cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), cpu)
    try:
        node = subprocess.run([service_command()[0], "--version"], capture_output=True, text=True).stdout.strip()
    except OSError:
        node = "missing"
    try:
        commit = subprocess.run(["git", "-C", str(HERE), "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    except OSError:  # no git (the GPU machine): the bundle's commit
        commit = ""
    gpu = torch.cuda.get_device_name(0) if torch.cuda.is_available() else None
    return {"cpu": cpu, "cores": os.cpu_count(), "gpu": gpu, "platform": platform.platform(),
            "python": platform.python_version(), "torch": torch.__version__, "transformers": transformers.__version__,
            "node": node, "trace_alloc_commit": commit or os.environ.get("TRACE_ALLOC_COMMIT", "?"),
            "loadavg_start": os.getloadavg(), "processes": processes}


def run_jobs(jobs: list[tuple[dict, list[str], float]], processes: int, done) -> list[dict]:
    """Seeds in `processes` worker processes (spawned: CUDA and the services start fresh in each);
    `done(runs)` is called with the runs so far each time a seed finishes."""
    runs: list[dict] = []
    if processes > 1 and len(jobs) > 1:
        with mp.get_context("spawn").Pool(min(processes, len(jobs))) as pool:
            for rs in pool.imap_unordered(run_seed, jobs, chunksize=1):
                if rs:
                    runs += rs
                    done(runs)
        return runs
    for job in jobs:
        rs = run_seed(job)
        if rs:
            runs += rs
            done(runs)
    return runs


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, default=60)
    ap.add_argument("--first-seed", type=int, default=0)
    ap.add_argument("--processes", type=int, default=2)
    ap.add_argument("--out", default=str(HERE / "results"))
    ap.add_argument("--profile", choices=sorted(PROFILES), default="cpu")
    ap.add_argument("--task", choices=sorted(TASKS), default="calculator",
                    help="the task trained on (tasks.py; --set task=NAME does the same)")
    ap.add_argument("--smoke", action="store_true", help="--profile smoke --seeds 1 (CI)")
    ap.add_argument("--samplers", default=",".join(SAMPLERS))
    ap.add_argument("--full-seeds", type=int, default=12, metavar="K",
                    help="only the first K seeds run every sampler; later seeds run independent and trace only "
                         "(the comparison the run is sized for)")
    ap.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE",
                    help="override a Config field (e.g. steps=20)")
    ap.add_argument("--stop-after-s", type=float, default=None,
                    help="start no seed after this many seconds, except each process's first (seeds in flight finish); "
                         "the summary counts the seeds done")
    ap.add_argument("--report-only", action="store_true", help="rewrite summary and charts from OUT/results.json")
    ap.add_argument("--resume", action="store_true",
                    help="keep the runs already in OUT/results.json and run only the (seed, sampler) pairs it lacks: "
                         "the same command with more --seeds, --full-seeds or --samplers extends a run (refused when "
                         "the kept runs were trained with other settings)")
    args = ap.parse_args()
    out = Path(args.out)
    if args.report_only:
        return report(out, json.loads((out / "results.json").read_text()))
    if args.smoke:
        args.profile, args.seeds = "smoke", 1
    sets = [item.split("=", 1) for item in args.set]
    for key, value in sets:
        if key == "task":
            if value not in TASKS:
                raise SystemExit("--set task: unknown task %r (known: %s)" % (value, ", ".join(TASKS)))
            args.task = value
    task = get_task(args.task)
    overrides = {**task.settings.get("cpu", {}), **PROFILES[args.profile],
                 **(task.settings.get(args.profile, {}) if args.profile != "cpu" else {})}
    if task.name != Config.task:
        overrides["task"] = task.name
    for key, value in sets:
        try:
            overrides[key] = config_value(key, value)
        except LookupError as err:
            raise SystemExit("--set: %s" % err) from None
    samplers = args.samplers.split(",")
    unknown = [s for s in samplers if s not in SAMPLERS]
    if unknown:
        raise SystemExit("--samplers: unknown %s (known: %s)" % (", ".join(unknown), ", ".join(SAMPLERS)))
    info = machine(args.processes)
    t0 = time.time()
    stop_at = t0 + args.stop_after_s if args.stop_after_s is not None else float("inf")
    # Every process runs its first seed whatever the clock says (starting the workers can take a
    # minute on a loaded machine); later seeds start only before the limit.
    full = args.full_seeds
    primary = [s for s in samplers if s in PRIMARY]
    command = "python3 examples/llm/run.py " + " ".join(sys.argv[1:])
    kept, invocations = [], []
    if args.resume and (out / "results.json").exists():
        kept, invocations = resumable(json.loads((out / "results.json").read_text()), Config(**overrides), out)
    done_pairs = {(r["seed"], r["sampler"]) for r in kept}
    wanted = [(s, [x for x in (samplers if i < full else primary) if (s, x) not in done_pairs])
              for i, s in enumerate(range(args.first_seed, args.first_seed + args.seeds))]
    wanted = [(s, todo) for s, todo in wanted if todo]
    jobs = [(asdict(Config(seed=s, **overrides)), todo, stop_at if i >= args.processes else float("inf"))
            for i, (s, todo) in enumerate(wanted)]
    if args.resume:
        print("--resume: %d runs kept from %s, %d (seed, sampler) pairs to run" % (
            len(kept), out / "results.json", sum(len(todo) for _, todo in wanted)), file=sys.stderr)
    # Every sampler any kept or new run used, in the order asked (kept ones not asked come last).
    samplers = samplers + [x for x in dict.fromkeys(r["sampler"] for r in kept) if x not in samplers]
    result = {
        "command": " ; ".join([i["command"] for i in invocations] + [command]),
        "invocations": invocations + [{"command": command, "machine": info}],
        "profile": args.profile,
        "task": task.name,
        "machine": info,
        "config": asdict(Config(seed=args.first_seed, **overrides)),
        "seeds_asked": args.seeds,
    }
    out.mkdir(parents=True, exist_ok=True)

    def write(runs: list[dict], final: bool = False) -> int:
        """results.json, summary.md and the charts from the seeds finished so far (a run stopped
        from outside keeps what it had)."""
        info["wall_s"] = time.time() - t0
        info["loadavg_end"] = os.getloadavg()
        every = sorted(kept + runs, key=lambda r: (r["seed"], samplers.index(r["sampler"])))
        trace = next((r for r in every if r["sampler"] == "trace"), None)
        result.update(
            finished=final,
            allocator={"transport": trace["transport"], "default_rule": trace["rule"]} if trace else None,
            decoder_gap=max((r["decoder_gap"] for r in every), default=None),
            runs=every,
        )
        result["summary"] = summarize(every, samplers) if every else None
        (out / "results.json").write_text(json.dumps(result, separators=(",", ":")) + "\n")
        return report(out, result, quiet=not final)

    # Stopped from outside (`timeout`): leave through the pool's exit, which ends the workers and
    # with them their services; the seeds finished so far are already written.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(124))
    runs = run_jobs(jobs, args.processes, write)
    return write(runs, final=True)


def resumable(previous: dict, config: Config, out: Path, default_rows: bool = True) -> tuple[list[dict], list[dict]]:
    """The runs of an earlier results.json that a resumed run keeps, and the invocations that made
    them. Every kept run must have been trained with this run's settings (all but the seed):
    runs under other settings are not the same experiment, and mixing them would pair them. With
    `default_rows`, the rows that follow the library's default rule must have followed the one in
    force now (merge.py checks the two folders against each other instead)."""
    want = {k: v for k, v in asdict(config).items() if k != "seed"}
    # A setting added after a run was made is read as the behaviour runs had before it existed
    # (`as_run`: uncertainty "turn", whose default has moved), else at its default.
    for r in previous["runs"]:
        had = {k: v for k, v in {**asdict(Config()), **as_run(r["config"])}.items() if k != "seed"}
        diff = sorted(k for k in set(want) | set(had) if want.get(k) != had.get(k))
        if diff:
            raise SystemExit("--resume: %s: seed %d's %s run was trained with other settings (%s: %s there, %s here); "
                             "use another --out" % (out / "results.json", r["seed"], r["sampler"], diff[0],
                                                    had.get(diff[0]), want.get(diff[0])))
    # A row that asks for no rule follows the library's default, which has changed (v3, v4, v5):
    # its kept runs and its new ones would be different rules under one name.
    following = [r for r in previous["runs"] if default_rows and "rule_asked" in r and r["rule_asked"] is None]
    now = default_rule() if following else None
    for r in following:
        if r["rule"] != now:
            raise SystemExit("--resume: %s: seed %d's %s run followed the library's default rule when it was %s; "
                             "the default is now %s, so new runs of that row would not be the same experiment; "
                             "use another --out" % (out / "results.json", r["seed"], r["sampler"], r["rule"], now))
    invocations = previous.get("invocations") or [{"command": previous["command"], "machine": previous["machine"]}]
    return previous["runs"], invocations


def report(out: Path, result: dict, quiet: bool = False) -> int:
    if not result["runs"]:
        print("no seed finished before --stop-after-s: nothing to report", file=sys.stderr)
        return 1
    result["summary"] = summarize(result["runs"], list(dict.fromkeys(r["sampler"] for r in result["runs"])))
    write_charts(result, out)
    (out / "summary.md").write_text(markdown(result))
    if quiet:
        return 0
    if result.get("profile") == "smoke":
        smoke_report(out, result)
        return 0
    for s, v in result["summary"]["samplers"].items():
        print("%-16s final %.3f [%.3f, %.3f]  mean %.3f [%.3f, %.3f]  step %.2fs%s" % (
            s, v["final_success"]["mean"], *v["final_success"]["ci95"], v["mean_success"]["mean"], *v["mean_success"]["ci95"],
            v["step_s"]["mean"], "  allocator %.1f%%" % (100 * v["allocator_share"]["mean"]) if "allocator_share" in v else ""))
    for k, v in result["summary"]["paired_differences"].items():
        print("%-48s %+.3f [%+.3f, %+.3f]" % (k, v["mean"], *v["ci95"]))
    print("wall %.0f s, written to %s" % (result["machine"]["wall_s"], out))
    return 0


def smoke_report(out: Path, result: dict) -> None:
    """What a smoke run did, sampler by sampler and step by step: one seed's success rates over a
    few episodes compare nothing, so its paired differences are not printed."""
    cfg = result["config"]
    print("smoke run: seed %d, %d steps per sampler, %d prompts per step, the %s task, a %d-layer GPT-2 pre-trained %d "
          "steps; success = mean outcome of %d episodes per prompt on the %d-prompt pool (too few to compare samplers)"
          % (cfg["seed"], cfg["steps"], cfg["prompts_per_step"], cfg.get("task", "calculator"), cfg["layers"],
             cfg["pretrain_steps"], cfg["eval_samples"], cfg["prompt_pool"]))
    for r in result["runs"]:
        print("%-16s success %.3f -> %.3f" % (r["sampler"], r["curve"][0][1], r["final_success"]))
        for i, step in enumerate(r["steps"], 1):
            why = ("  (no sibling group had mixed outcomes: every advantage is 0)"
                   if step["loss"] == 0 and step.get("mixed_groups") == 0 else "")
            print("    step %d: %d generated tokens, %d rollouts (%d finished, %d succeeded), %d of %d groups mixed, loss %.4f%s"
                  % (i, step["tokens"], step["rollouts"], step["finished"], step["successes"], step.get("mixed_groups", 0),
                     step.get("scored_groups", 0), step["loss"], why))
    print("wall %.0f s; results.json, summary.md and the charts are in %s" % (result["machine"]["wall_s"], out))


if __name__ == "__main__":
    sys.exit(main())
