"""Where a training step's wall-clock goes, per sampler: generation (calls, rows per call),
the service's requests, the tree driver's own Python work, and everything else TRL does (the
loss, its forward and backward passes, the optimiser, its bookkeeping).

    python3 examples/trl/profile_step.py --out examples/trl/results/profile        # the README's profile
    python3 examples/trl/profile_step.py --steps 3 --rows independent,trace         # a quick look

Each row is one `train.run_sampler` run from the same pre-trained weights on one tuning seed
(500 by default; the committed run's seeds are never used here), timed with wall-clock timers
around the generator, `Service.request`, and the rollout function; nothing else changes. A row
is `SAMPLER` or `SAMPLER@C`, C the tree samplers' concurrency (`batch`, an integer, or `round`
for the round driver). Writes `profile.json` and `profile.md` under `--out` when given.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import sys
import time
from dataclasses import asdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import train  # noqa: E402  (sets up the paths and the libraries as the committed run does)
from train import Config, run_sampler  # noqa: E402

import torch  # noqa: E402
import transformers  # noqa: E402
from datasets import Dataset  # noqa: E402

import trace_alloc  # noqa: E402
from trace_alloc.hf import HFTurnGenerator  # noqa: E402
from trace_alloc.trl import TraceRolloutFunc  # noqa: E402

from episodes import CachedTurns, IndependentRollouts, make_prompts, prompt_text, tokenizer  # noqa: E402
from model import build_model, pretrain  # noqa: E402

DEFAULT_ROWS = "independent,trace@batch,trace-treerl@batch,trace@32,trace@16,trace@8,trace@round"


class Timers:
    """Seconds and calls per label, plus the rows of every generate call."""

    def __init__(self) -> None:
        self.seconds: dict = {}
        self.calls: dict = {}
        self.rows: list = []
        self.active = False

    def wrap(self, owner, name: str, label: str, rows=None) -> None:
        inner = getattr(owner, name)
        timers = self

        def timed(*args, **kwargs):
            if not timers.active:
                return inner(*args, **kwargs)
            t0 = time.perf_counter()
            try:
                return inner(*args, **kwargs)
            finally:
                key = label(args) if callable(label) else label
                timers.seconds[key] = timers.seconds.get(key, 0.0) + time.perf_counter() - t0
                timers.calls[key] = timers.calls.get(key, 0) + 1
                if rows is not None:
                    timers.rows.append(rows(args))

        setattr(owner, name, timed)


def instrument() -> Timers:
    timers = Timers()
    for generator in (CachedTurns, HFTurnGenerator):
        timers.wrap(generator, "__call__", "generate", rows=lambda a: len(a[1]))
    timers.wrap(trace_alloc.Service, "request", lambda a: "service " + a[1])
    timers.wrap(TraceRolloutFunc, "__call__", "rollout_func")
    timers.wrap(TraceRolloutFunc, "_output", "completions and advantages")
    timers.wrap(IndependentRollouts, "__call__", "rollout_func")
    # Only training is timed: the evaluation before and after (run_sampler's) is not part of a step.
    inner = transformers.Trainer.train

    def timed_train(self, *args, **kwargs):
        timers.active = True
        try:
            return inner(self, *args, **kwargs)
        finally:
            timers.active = False

    transformers.Trainer.train = timed_train
    return timers


def parse_row(row: str) -> tuple[str, str]:
    """`SAMPLER@C` as (sampler, Config.concurrency); no `@C`: the default."""
    name, _, concurrency = row.partition("@")
    return name, concurrency or Config.concurrency


def profile(cfg: Config, rows: list[str]) -> list[dict]:
    timers = instrument()
    prompts = make_prompts(random.Random(cfg.seed * 31 + 1), cfg.prompt_pool)
    tok = tokenizer()
    model = build_model(cfg.seed, cfg.layers, cfg.hidden)
    pretrain(model, cfg.seed, cfg.pretrain_steps)
    dataset = Dataset.from_dict({"prompt": [prompt_text(p) for p in prompts]})
    budgets = None
    out = []
    for row in rows:
        name, concurrency = parse_row(row)
        run_cfg = Config(**{**asdict(cfg), "concurrency": concurrency})
        timers.seconds, timers.calls, timers.rows = {}, {}, []
        r = run_sampler(name, run_cfg, model, tok, dataset, prompts, budgets)
        if name == "independent":
            budgets = r["tokens"]
        s, c = timers.seconds, timers.calls
        service = sum(v for k, v in s.items() if k.startswith("service "))
        rollout = s.get("rollout_func", 0.0)
        generate = s.get("generate", 0.0)
        output = s.get("completions and advantages", 0.0)
        steps = cfg.steps
        out.append({
            "row": row, "sampler": name, "concurrency": concurrency, "steps": steps, "tokens": sum(r["tokens"]),
            "wall_s": r["wall_s"], "per_step_s": r["wall_s"] / steps,
            "generate_s": generate, "generate_calls": c.get("generate", 0),
            "rows_per_call": sum(timers.rows) / max(1, len(timers.rows)),
            "service_s": service, "service_requests": sum(v for k, v in c.items() if k.startswith("service ")),
            "service_by_op": {k[8:]: [c[k], round(v, 4)] for k, v in s.items() if k.startswith("service ")},
            "output_s": output, "driver_s": max(0.0, rollout - generate - service - output),
            "trl_s": r["wall_s"] - rollout,
            "placements_per_step": (sum(x["rounds"] for x in r["rollout_calls"]) / steps) if "rollout_calls" in r else None,
            "finished_per_step": (sum(x["finished"] for x in r["rollout_calls"]) / steps) if "rollout_calls" in r else None,
        })
        print(table(out[-1:], header=not out[:-1]), end="", file=sys.stderr, flush=True)
    return out


def table(rows: list[dict], header: bool = True) -> str:
    lines = []
    if header:
        lines += ["| row | wall s / step | × independent | generate: s / step, calls / step, rows / call | service: s / step, "
                  "requests / step | driver + completions s / step | TRL's own s / step | placements / step |",
                  "|---|---|---|---|---|---|---|---|"]
    base = next((r for r in rows if r["sampler"] == "independent"), None)
    for r in rows:
        n = r["steps"]
        ratio = "%.2f" % (r["wall_s"] / base["wall_s"]) if base else "—"
        lines.append("| %s | %.3f | %s | %.3f, %.1f, %.1f | %.3f, %.1f | %.3f | %.3f | %s |" % (
            r["row"], r["per_step_s"], ratio, r["generate_s"] / n, r["generate_calls"] / n, r["rows_per_call"],
            r["service_s"] / n, r["service_requests"] / n, (r["driver_s"] + r["output_s"]) / n, r["trl_s"] / n,
            "—" if r["placements_per_step"] is None else "%.1f" % r["placements_per_step"]))
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out")
    ap.add_argument("--seed", type=int, default=500)
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--rows", default=DEFAULT_ROWS)
    ap.add_argument("--generator", choices=["cached", "hf"], default=Config.generator)
    args = ap.parse_args()
    train.setup()
    cfg = Config(seed=args.seed, steps=args.steps, generator=args.generator)
    t0 = time.perf_counter()
    load0 = os.getloadavg()
    rows = profile(cfg, args.rows.split(","))
    result = {"command": " ".join(["python3", "examples/trl/profile_step.py"] + sys.argv[1:]), "config": asdict(cfg),
              "rows": rows, "seconds": time.perf_counter() - t0,
              "machine": {"cores": os.cpu_count(), "loadavg_start": load0, "loadavg_end": os.getloadavg(),
                          "python": platform.python_version(), "torch": torch.__version__,
                          "transformers": transformers.__version__}}
    text = table(rows)
    print(text)
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        (out / "profile.json").write_text(json.dumps(result, indent=1))
        (out / "profile.md").write_text("# Where a step's wall-clock goes\n\n`%s`: seed %d, %d steps per row, the %s "
                                        "generator; load average %.1f at the start, %.1f at the end.\n\n%s" % (
                                            result["command"], cfg.seed, cfg.steps, cfg.generator, load0[0],
                                            os.getloadavg()[0], text))


if __name__ == "__main__":
    main()
