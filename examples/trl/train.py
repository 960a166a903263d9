"""GRPO with TRL 1.13 on a tiny transformer and a multi-turn tool task: TRL's default sampling
against TRACE tree rollouts at the same token budget, step by step.

    python3 examples/trl/train.py --seeds 24 --out examples/trl/results    # the committed run
    python3 examples/trl/train.py --smoke --out /tmp/trl-smoke             # CI: 2 steps per sampler, a tiny model
    python3 examples/trl/train.py --report-only --out examples/trl/results # rewrite summary.md from results.json

Per seed: prompts of the calculator task (examples/llm/task.py), a GPT-2 built from a config and
pre-trained briefly on solved transcripts (examples/llm/model.py; nothing is downloaded), then one
`GRPOTrainer` run per sampler from the same weights and the same prompt order:

- `independent`: TRL's default sampling, `num_generations` independent episodes per prompt;
  the tokens it generates in each step become the budget of the tree samplers' same step;
- `trace`: `trace_alloc.trl.TraceRolloutFunc`, one tree per prompt grown with TRACE's plans at
  that budget (continuous placement, `concurrency`), `num_generations` leaves per prompt
  returned, GRPO's own advantages;
- `trace-treerl`: the same rollouts, trained with TreeRL's per-token tree advantages
  (`TreeGRPOTrainer`, `advantage`: the package's default, TreeRL's per-leaf credit on branch means,
  a node shared by L leaves weighing √L·A; the committed runs used TreeRL's as published);
- `trace@C`, `trace-treerl@C` (not in the default list): the same at concurrency C (an integer,
  or `round`: the round driver, 2 rollouts per tree per plan, each round waiting for all of its
  rollouts).

Writes `results.json` (every run: its wall-clock `wall_s` and each step's, tokens, reward, loss,
the rollout functions' counts, success before and after) and `summary.md` (paired differences
with 95% intervals, the seeds a ±3-point interval needs), after every finished seed.
"""

from __future__ import annotations

import argparse
import copy
import json
import multiprocessing as mp
import os
import platform
import random
import signal
import sys
import tempfile
import time
import warnings
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Optional, Union

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parents[1] / "python"))
warnings.filterwarnings("ignore")
os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")

import logging  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402
import transformers  # noqa: E402
import trl  # noqa: E402
from datasets import Dataset  # noqa: E402
from transformers import TrainerCallback  # noqa: E402
from transformers.trainer_callback import PrinterCallback  # noqa: E402
from trl import GRPOConfig, GRPOTrainer  # noqa: E402

import trace_alloc  # noqa: E402
from trace_alloc import Budget  # noqa: E402
from trace_alloc.trl import HFTurnGenerator, TraceRolloutFunc, TreeGRPOTrainer, env_reward  # noqa: E402

from episodes import END, PAD, CachedTurns, IndependentRollouts, env_step, make_prompts, prepare, prompt_text, success_rate, tokenizer  # noqa: E402
from decode import max_logit_gap  # noqa: E402  (examples/llm, on the path episodes sets)
from model import build_model, pretrain  # noqa: E402
from stats import mean_interval, paired, seeds_for_half_width  # noqa: E402
from task import MAX_TURN_TOKENS  # noqa: E402
from tasks import CALCULATOR  # noqa: E402

SAMPLERS = ["independent", "trace", "trace-treerl"]
REPO = HERE.parents[1]
#: The half-width (points) the committed run is sized for, on the paired trace − independent difference.
TARGET_POINTS = 3.0
#: Refuse to train when the cached decoder's logits leave the transformers forward pass's by more.
MAX_DECODER_GAP = 1e-4


@dataclass
class Config:
    """The committed run's set-up (calibrated on tuning seeds 500–503, README.md "Calibration")."""
    seed: int = 0
    steps: int = 300
    prompt_pool: int = 32
    prompts_per_step: int = 8
    num_generations: int = 8
    pretrain_steps: int = 450
    learning_rate: float = 5e-4
    loss_type: str = "dapo"  # GRPOConfig's; TreeGRPOTrainer needs one that sums tokens (dapo, dr_grpo, cispo)
    scale_rewards: str = "group"  # GRPOConfig's: divide advantages by the group's std ("group"), or not ("none")
    eval_samples: int = 32  # sampled episodes per prompt of the pool, before and after training
    eval_check: bool = False  # evaluate every final policy a second time, other random numbers (eval noise)
    rollouts_per_tree_per_round: int = 2  # the round driver's (concurrency "round")
    concurrency: str = "batch"  # the tree samplers' TraceRolloutFunc concurrency: "batch", an integer, or "round"
    layers: int = 2
    hidden: int = 64
    generator: str = "cached"  # every sampler's: "cached" (episodes.CachedTurns) or "hf" (HFTurnGenerator, model.generate)
    rule: str = ""  # the service's --rule; "" (the committed run): the library's default rule, whatever it is
    # trace-treerl's credit (trace_alloc.advantages METHODS): the package's default, TreeRL's per-leaf credit on
    # branch means; "treerl-leaf" (TreeRL's as published) is what the committed runs recorded.
    advantage: str = "treerl-branch"
    share: str = "repeat"  # and its spread over shared tokens (SHARES): each copy carries the leaf's full advantage
    # The tree samplers' TraceRolloutFunc budget_end: "finish" (rollouts running at a step's budget end run to
    # their end, the excess comes off the next steps' budgets) or "cut" (each step exact; the run before this one).
    budget_end: str = "finish"
    # The tree samplers' TraceRolloutFunc uncertainty: "next" (the package's default since rule v5 became the
    # library's) or "turn" (each node's own turn's entropy: the default before, and what the committed runs sent).
    uncertainty: str = "next"


# A few seconds per sampler. Pre-trained 300 steps, with 8 completions per prompt: a policy pre-trained
# 20 steps never solved a prompt, every reward was 0, GRPO's advantages (reward − its prompt's mean)
# were all 0 and so was every loss: the run trained nothing.
SMOKE = dict(steps=2, prompt_pool=4, prompts_per_step=2, num_generations=8, pretrain_steps=300, eval_samples=2,
             layers=1, hidden=64)
#: Settings added after runs were committed, with the behaviour those runs had (their results.json lacks the field).
LATER_SETTINGS = {"uncertainty": "turn"}
#: The set-up of the run committed before this one (4 seeds, rule v2; README.md "The earlier run").
EARLIER = dict(steps=30, prompt_pool=16, prompts_per_step=4, pretrain_steps=300, eval_samples=8, concurrency="round",
               generator="hf", rule="v2", advantage="treerl", share="split", budget_end="cut", uncertainty="turn")


def sampler_kind(sampler: str) -> str:
    """`independent`, `trace` or `trace-treerl`: a sampler's name without its `@C` (module docstring)."""
    return sampler.partition("@")[0]


def known_sampler(sampler: str) -> bool:
    kind, _, c = sampler.partition("@")
    return kind in SAMPLERS and (not c or kind != "independent" and (c in ("batch", "round") or c.isdigit() and int(c) > 0))


def concurrency_option(cfg: Config, sampler: str) -> Union[None, str, int]:
    """TraceRolloutFunc's `concurrency` for a tree sampler: `@C` in its name, else `cfg.concurrency`;
    `round`: None, the round driver."""
    value = sampler.partition("@")[2] or cfg.concurrency
    if value == "round":
        return None
    return value if value == "batch" else int(value)


class StepClock(TrainerCallback):
    """The wall-clock of every training step (rollouts, rewards, loss and update)."""

    def __init__(self) -> None:
        self.seconds: list = []
        self._t = None

    def on_step_begin(self, args, state, control, **kwargs):
        self._t = time.perf_counter()

    def on_step_end(self, args, state, control, **kwargs):
        self.seconds.append(time.perf_counter() - self._t)


def service(rule: str = "") -> trace_alloc.Service:
    return trace_alloc.Service(["node", str(REPO / "dist" / "cli" / "main.js"), "serve", "--stdio", "--backend", "cpu"]
                               + (["--rule", rule] if rule else []))


def grpo_config(cfg: Config, out: str) -> GRPOConfig:
    return GRPOConfig(
        output_dir=out, per_device_train_batch_size=cfg.prompts_per_step * cfg.num_generations,
        num_generations=cfg.num_generations, gradient_accumulation_steps=1, max_steps=cfg.steps,
        learning_rate=cfg.learning_rate, beta=0.0, loss_type=cfg.loss_type,
        scale_rewards=cfg.scale_rewards, max_completion_length=CALCULATOR.max_positions,
        logging_steps=1, save_strategy="no", report_to=[], use_cpu=True, seed=cfg.seed, data_seed=cfg.seed,
        bf16=False, fp16=False, disable_tqdm=True, dataloader_num_workers=0, temperature=1.0,
    )


def run_sampler(name: str, cfg: Config, base_model, tok, dataset, prompts, budgets: list[int] | None) -> dict:
    """One GRPOTrainer run of `name` from `base_model`; budgets: the tokens of each step (tree samplers)."""
    model = copy.deepcopy(base_model)
    generate = CachedTurns() if cfg.generator == "cached" else HFTurnGenerator(stop_token_ids=[END], pad_token_id=PAD)
    evaluation_seed = cfg.seed * 7 + 1  # the same evaluation random numbers for every sampler of a seed
    before = success_rate(generate, model, prompts, cfg.eval_samples, evaluation_seed)
    ta, rule = None, None
    if name == "independent":
        rollout = IndependentRollouts(generate)
    else:
        ta = service(cfg.rule)
        calls = {"n": 0}

        def budget(trees: int) -> Budget:  # the independent run's tokens at the same step
            calls["n"] += 1
            return Budget(tokens=budgets[calls["n"] - 1])

        rule = ta.request("stats")["params"].get("rule")  # the rule the service plans with (results.json says which)
        # The credit is named (cfg.advantage, recorded in results.json), so the run reproduces whatever the package's defaults become.
        rollout = TraceRolloutFunc(ta, generate, env_step, prepare=prepare, dim=cfg.hidden, max_turn_tokens=MAX_TURN_TOKENS,
                                   budget=budget, attach_advantages=sampler_kind(name) == "trace-treerl", seed=cfg.seed,
                                   advantage=cfg.advantage, share=cfg.share, concurrency=concurrency_option(cfg, name),
                                   budget_end=cfg.budget_end, uncertainty=cfg.uncertainty,
                                   rollouts_per_round=lambda trees: cfg.rollouts_per_tree_per_round * trees)
    torch.manual_seed(cfg.seed * 1009 + 7)
    trainer_class = TreeGRPOTrainer if sampler_kind(name) == "trace-treerl" else GRPOTrainer
    clock = StepClock()
    calls_before, rows_before = getattr(generate, "calls", 0), getattr(generate, "rows", 0)
    with tempfile.TemporaryDirectory(prefix="trace-alloc-trl-") as out:
        trainer = trainer_class(model=model, reward_funcs=[env_reward], args=grpo_config(cfg, out), train_dataset=dataset,
                                processing_class=tok, rollout_func=rollout, callbacks=[clock])
        trainer.remove_callback(PrinterCallback)  # the per-step dicts; results.json keeps them
        t0 = time.perf_counter()
        try:
            trainer.train()
        finally:
            wall_s = time.perf_counter() - t0
            if ta is not None:
                ta.close()
    logs = [x for x in trainer.state.log_history if "loss" in x]
    after = success_rate(generate, model, prompts, cfg.eval_samples, evaluation_seed)
    result = {"sampler": name, "seed": cfg.seed, "success_before": before, "success_after": after,
              "rule": rule, "wall_s": wall_s, "step_s": clock.seconds,
              "steps": [{"loss": x["loss"], "reward": x.get("reward"), "reward_std": x.get("reward_std"),
                         "frac_reward_zero_std": x.get("frac_reward_zero_std")} for x in logs]}
    if cfg.eval_check:  # the same policy, other evaluation random numbers: the evaluation's own noise
        result["success_after_check"] = success_rate(generate, model, prompts, cfg.eval_samples, evaluation_seed + 500_009)
    if hasattr(generate, "calls"):
        result["generate_calls"] = generate.calls - calls_before
        result["generate_rows"] = generate.rows - rows_before
    if name == "independent":
        result["tokens"] = rollout.tokens
    else:
        result["tokens"] = [h["tokens_used"] for h in rollout.history]
        result["rollout_calls"] = rollout.history
        result["completions_per_prompt"] = cfg.num_generations
    return result


def run_seed(job: tuple[dict, list[str]]) -> list[dict]:
    """Every sampler of one seed, from one pre-trained policy (a worker process's job)."""
    cfg, samplers = Config(**job[0]), job[1]
    setup()
    prompts = make_prompts(random.Random(cfg.seed * 31 + 1), cfg.prompt_pool)
    tok = tokenizer()
    model = build_model(cfg.seed, cfg.layers, cfg.hidden)
    pretrain(model, cfg.seed, cfg.pretrain_steps)
    gap = max_logit_gap(model, seed=cfg.seed) if cfg.generator == "cached" else None
    if gap is not None and gap > MAX_DECODER_GAP:
        raise SystemExit("seed %d: the cached decoder's logits leave the transformers forward pass's by %.2g (> %g)"
                         % (cfg.seed, gap, MAX_DECODER_GAP))
    dataset = Dataset.from_dict({"prompt": [prompt_text(p) for p in prompts]})
    runs = []
    budgets = None
    for name in samplers:
        if name != "independent" and budgets is None:
            raise SystemExit("the tree samplers take their per-step budget from the independent run: list it first")
        r = run_sampler(name, cfg, model, tok, dataset, prompts, budgets)
        r["decoder_gap"] = gap
        if name == "independent":
            budgets = r["tokens"]
        runs.append(r)
        print("seed %d %-12s success %.3f -> %.3f, %d tokens, %.1f s" % (cfg.seed, name, r["success_before"],
              r["success_after"], sum(r["tokens"]), r["wall_s"]), file=sys.stderr, flush=True)
        print_steps(r, cfg)
    return runs


def print_steps(run: dict, cfg: Config) -> None:
    """Each training step of one run, as a user checks it: tokens, rewards, the loss, and why a loss is 0."""
    calls = run.get("rollout_calls") or [None] * len(run["steps"])
    for i, (step, tokens, call) in enumerate(zip(run["steps"], run["tokens"], calls), 1):
        trees = "" if call is None else " (%d %s, %d finished + %d cut rollouts, %.0f%% started at a prompt)" % (
            call["rounds"], "placements" if call.get("continuous") else "rounds", call["finished"], call["unfinished"],
            100 * call["root_share"])
        why = ""
        if step["loss"] == 0 and step.get("frac_reward_zero_std") == 1:
            why = "  (every prompt's %d completions got the same reward: every advantage is 0)" % cfg.num_generations
        print("    step %d: %d generated tokens%s; %d completions, mean reward %.3f (std %.3f); loss %.4f%s" % (
            i, tokens, trees, cfg.prompts_per_step * cfg.num_generations, step["reward"] or 0.0, step["reward_std"] or 0.0,
            step["loss"], why), file=sys.stderr, flush=True)


def _fmt(v: dict, digits: int = 1) -> str:
    f = "%%.%df" % digits
    return (f + " [" + f + ", " + f + "]") % (v["mean"], v["ci95"][0], v["ci95"][1])


def summarize(runs: list[dict], samplers: list[str]) -> dict:
    """Per sampler: success and wall-clock with 95% intervals; per tree sampler, the paired
    differences against `independent` (success after training, points; wall-clock ratio) and the
    seeds a ±TARGET_POINTS interval needs at the measured spread."""
    by = {s: sorted((r for r in runs if r["sampler"] == s), key=lambda r: r["seed"]) for s in samplers}
    out: dict = {"samplers": {}, "paired": {}}
    for s, rs in by.items():
        if not rs:
            continue
        mixed = [1 - x["frac_reward_zero_std"] for r in rs for x in r["steps"] if x.get("frac_reward_zero_std") is not None]
        rewards = [x["reward"] for r in rs for x in r["steps"] if x["reward"] is not None]
        out["samplers"][s] = {
            "seeds": len(rs),
            "success_before": mean_interval([100 * r["success_before"] for r in rs]),
            "success_after": mean_interval([100 * r["success_after"] for r in rs]),
            "change": mean_interval([100 * (r["success_after"] - r["success_before"]) for r in rs]),
            "wall_s": mean_interval([r["wall_s"] for r in rs]),
            "step_s": mean_interval([r["wall_s"] / len(r["tokens"]) for r in rs]),
            "tokens_per_step": float(np.mean([t for r in rs for t in r["tokens"]])),
            "mixed_group_share": float(np.mean(mixed)) if mixed else None,
            "mean_reward": float(np.mean(rewards)) if rewards else None,
            "generate_calls_per_step": float(np.mean([r["generate_calls"] / len(r["tokens"]) for r in rs]))
            if all("generate_calls" in r for r in rs) else None,
        }
    base = {r["seed"]: r for r in by.get("independent", [])}
    for s, rs in by.items():
        pairs = [(r, base[r["seed"]]) for r in rs if s != "independent" and r["seed"] in base]
        if not pairs:
            continue
        d = mean_interval([100 * (a["success_after"] - b["success_after"]) for a, b in pairs])
        entry = {"success_after": d, "wall_ratio": mean_interval([a["wall_s"] / b["wall_s"] for a, b in pairs]),
                 "seeds_for_target": seeds_for_half_width(d["sd"], TARGET_POINTS) if len(pairs) >= 3 else None}
        if len(pairs) >= 3:
            k = len(pairs) - 1  # the sd's one-sided 80% upper bound (Wilson–Hilferty chi-square quantile)
            sd_up = d["sd"] * (k / (k * (1 - 2 / (9 * k) - 0.8416 * (2 / (9 * k)) ** 0.5) ** 3)) ** 0.5
            entry["sd_upper80"] = sd_up
            entry["seeds_for_target_upper"] = seeds_for_half_width(sd_up, TARGET_POINTS)
        if all("success_after_check" in r for pair in pairs for r in pair):
            again = [100 * (a["success_after_check"] - b["success_after_check"]) for a, b in pairs]
            noise = mean_interval([x - y for x, y in zip([100 * (a["success_after"] - b["success_after"]) for a, b in pairs],
                                                         again)])["sd"] ** 2 / 2
            entry["eval_noise_share"] = noise / d["sd"] ** 2 if d["sd"] > 0 else None
        out["paired"][s] = entry
    trace = [c for r in runs if r["sampler"] != "independent" for c in r.get("rollout_calls", [])]
    if trace:
        out["trees"] = {k: float(np.mean([c[k] for c in trace])) for k in
                        ("rounds", "finished", "unfinished", "root_share", "mean_copies", "padded")}
    return out


def rule_of(result: dict) -> str:
    """The rule the tree samplers' service planned with: what the runs recorded, else the config's."""
    rules = sorted({r["rule"] for r in result["runs"] if r.get("rule")})
    return ", ".join(rules) or result["config"].get("rule") or "the default"


def summary(result: dict) -> str:
    cfg = Config(**result["config"])
    runs, samplers = result["runs"], result["samplers"]
    summ = summarize(runs, samplers)
    seeds = sorted({r["seed"] for r in runs})
    m = result["machine"]
    # A run grown with --resume: the wall-clock of every invocation together, loads from the first's
    # start to the last's end (each invocation's own line is listed below the tables).
    invs = [inv["machine"] for inv in result.get("invocations", [])] if len(result.get("invocations", [])) > 1 else [m]
    wall = "Wall %.0f s%s" % (sum(x.get("wall_s", 0.0) for x in invs), " in %d invocations" % len(invs) if len(invs) > 1 else "")
    lines = ["# TRL GRPO: TRL's default sampling vs TRACE tree rollouts at equal tokens", "",
             "`%s`: %d seeds (%s), %d steps, %d prompts × %d completions per step, tree concurrency %s, rule %s, "
             "budget end %s, trace-treerl's credit %s (%s); success = mean "
             "outcome of %d sampled episodes per prompt on the %d-prompt pool; 95%% t-intervals over seeds. %s, "
             "%d process(es), load average %.1f at the start and %.1f at the end." % (
                 result.get("command", "train.py"), len(seeds), "%d–%d" % (seeds[0], seeds[-1]) if seeds else "none",
                 cfg.steps, cfg.prompts_per_step, cfg.num_generations, cfg.concurrency, rule_of(result),
                 # Runs recorded before budget_end existed cut their rollouts at each step's budget.
                 result["config"].get("budget_end", "cut"), cfg.advantage,
                 cfg.share, cfg.eval_samples, cfg.prompt_pool,
                 wall, m.get("processes", 1), invs[0].get("loadavg_start", [0.0])[0], invs[-1].get("loadavg_end", [0.0])[0]), "",
             "| sampler | success before % | success after % | change (points) | wall_s per run | s / step | "
             "generated tokens / step | generate calls / step | mixed-outcome groups | mean reward trained on |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for s in samplers:
        v = summ["samplers"].get(s)
        if v is None:
            continue
        lines.append("| %s | %s | %s | %s | %s | %.3f | %.0f | %s | %s | %s |" % (
            s, _fmt(v["success_before"]), _fmt(v["success_after"]), _fmt(v["change"]), _fmt(v["wall_s"]),
            v["step_s"]["mean"], v["tokens_per_step"],
            "—" if v["generate_calls_per_step"] is None else "%.1f" % v["generate_calls_per_step"],
            "—" if v["mixed_group_share"] is None else "%.1f%%" % (100 * v["mixed_group_share"]),
            "—" if v["mean_reward"] is None else "%.3f" % v["mean_reward"]))
    if summ["paired"]:
        lines += ["", "Paired by seed, against `independent` (success after training; wall-clock of the training run):", "",
                  "| sampler − independent | success after, points | sd | seeds for ±%.0f (at sd↑80%%) | evaluation noise share "
                  "| wall-clock ratio |" % TARGET_POINTS, "|---|---|---|---|---|---|"]
        for s, e in summ["paired"].items():
            need = "—" if e["seeds_for_target"] is None else "%d (%d)" % (e["seeds_for_target"], e["seeds_for_target_upper"])
            share = "—" if e.get("eval_noise_share") is None else "%.0f%%" % (100 * e["eval_noise_share"])
            lines.append("| %s | %s | %.1f | %s | %s | %s |" % (s, _fmt(e["success_after"]), e["success_after"]["sd"], need,
                                                              share, _fmt(e["wall_ratio"], 2)))
    t = summ.get("trees")
    if t:
        lines += ["", "Tree rollouts per step (all tree samplers): %.1f placements (continuous) or rounds, %.1f finished and "
                  "%.1f cut rollouts, %.1f%% of placed rollouts from a prompt, mean copies of a returned generated token "
                  "%.2f, %.2f padded completions per step (of %d)." % (
                      t["rounds"], t["finished"], t["unfinished"], 100 * t["root_share"], t["mean_copies"], t["padded"],
                      cfg.prompts_per_step * cfg.num_generations)]
    if len(result.get("invocations", [])) > 1:
        lines += ["", "Invocations (`--resume` keeps the runs before it):", ""]
        lines += ["- `%s`: wall %.0f s, %d process(es), load average %.1f → %.1f" % (
            inv["command"], inv["machine"].get("wall_s", 0.0), inv["machine"].get("processes", 1),
            inv["machine"].get("loadavg_start", [0.0])[0], inv["machine"].get("loadavg_end", [0.0])[0])
                  for inv in result["invocations"]]
    gaps = [r["decoder_gap"] for r in runs if r.get("decoder_gap") is not None]
    if gaps:
        lines += ["", "Cached decoder against the transformers forward pass: largest logit difference %.1e." % max(gaps)]
    return "\n".join(lines) + "\n"


def setup() -> None:
    """One thread per process, quiet libraries: what every run and worker does first."""
    torch.set_num_threads(1)
    transformers.logging.set_verbosity_error()
    # TRL warns for every completion no reward function scored: the rollouts the budget cut, by design.
    logging.getLogger("trl").setLevel(logging.ERROR)


def run_jobs(jobs: list[tuple[dict, list[str]]], processes: int, done) -> list[dict]:
    """Seeds in `processes` spawned worker processes (each starts its own services); `done(runs)`
    after each finished seed."""
    runs: list[dict] = []
    if processes > 1 and len(jobs) > 1:
        with mp.get_context("spawn").Pool(min(processes, len(jobs))) as pool:
            for rs in pool.imap_unordered(run_seed, jobs, chunksize=1):
                runs += rs
                done(runs)
        return runs
    for job in jobs:
        runs += run_seed(job)
        done(runs)
    return runs


def resume(old: dict, result: dict, jobs: list[tuple[dict, list[str]]], samplers: list[str]):
    """`--resume`: the runs of OUT/results.json to keep and the jobs still to run. Refused when the
    kept runs were made under other settings (every Config field but the seed must agree) or
    when a seed to run holds some of the asked samplers already: the tree samplers take
    `independent`'s tokens of the same run, so a seed runs all its samplers or none. `result`
    takes the kept run's samplers and command first, and every invocation with its machine."""
    new = result["config"]
    # A setting added after the kept runs were made is read as the behaviour they had (LATER_SETTINGS).
    kept = {**LATER_SETTINGS, **old["config"]}
    differ = sorted(k for k in set(kept) | set(new) if k != "seed" and kept.get(k) != new.get(k))
    if differ:
        raise SystemExit("--resume: the kept runs were made with other settings: %s" % ", ".join(
            "%s %r (kept) against %r" % (k, kept.get(k), new.get(k)) for k in differ))
    # rule "" follows the library's default, which has changed (v4, v5): kept and new runs would be two rules.
    if not new.get("rule"):
        ta = service()
        try:
            now = ta.request("stats")["params"].get("rule")
        finally:
            ta.close()
        other = next((r for r in old["runs"] if r.get("rule") and r["rule"] != now), None)
        if other:
            raise SystemExit("--resume: seed %d's %s run planned under rule %s, the library's default then; the default "
                             "is now %s, so new runs would not be the same experiment; use another --out" % (
                                 other["seed"], other["sampler"], other["rule"], now))
    have = {(r["seed"], r["sampler"]) for r in old["runs"]}
    todo = []
    for cfg, names in jobs:
        held = [m for m in names if (cfg["seed"], m) in have]
        if held and len(held) < len(names):
            raise SystemExit("--resume: seed %d holds %s but not %s; run those samplers into another folder"
                             % (cfg["seed"], ", ".join(held), ", ".join(m for m in names if m not in held)))
        if not held:
            todo.append((cfg, names))
    result["samplers"] = old["samplers"] + [m for m in samplers if m not in old["samplers"]]
    result["invocations"] = old.get("invocations") or [{"command": old["command"], "machine": old["machine"]}]
    result["invocations"].append({"command": result["command"], "machine": result["machine"]})
    result["command"] = old["command"] + " ; " + result["command"]
    seeds = {r["seed"] for r in old["runs"]} | {cfg["seed"] for cfg, _ in jobs}
    result["seeds"] = len(seeds)
    return old["runs"], todo


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--smoke", action="store_true", help="1 seed, 2 steps per sampler, a tiny model (the CI test)")
    ap.add_argument("--earlier", action="store_true", help="the set-up of the run committed before this one (README.md)")
    ap.add_argument("--seeds", type=int, default=24)
    ap.add_argument("--first-seed", type=int, default=0)
    ap.add_argument("--processes", type=int, default=1, help="seeds run in this many worker processes")
    ap.add_argument("--samplers", default=",".join(SAMPLERS))
    ap.add_argument("--steps", type=int)
    ap.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE", help="override a Config field")
    ap.add_argument("--report-only", action="store_true", help="rewrite summary.md from results.json")
    ap.add_argument("--resume", action="store_true",
                    help="keep the runs in OUT/results.json (refused unless made with the same settings) and train only "
                         "the seeds that hold none of --samplers; a seed holding some of them but not all is refused")
    args = ap.parse_args()
    out = Path(args.out)
    if args.report_only:
        (out / "summary.md").write_text(summary(json.loads((out / "results.json").read_text())))
        return
    setup()
    samplers = args.samplers.split(",")
    unknown = [s for s in samplers if not known_sampler(s)]
    if unknown or samplers[0] != "independent":
        raise SystemExit("--samplers: %s (known: %s, trace@C, trace-treerl@C with C batch, round or an integer; "
                         "independent first: the tree samplers take its tokens per step)"
                         % ("unknown " + ", ".join(unknown) if unknown else "independent must come first", ", ".join(SAMPLERS)))
    overrides = dict(SMOKE) if args.smoke else dict(EARLIER) if args.earlier else {}
    if args.steps:
        overrides["steps"] = args.steps
    types = {f.name: type(f.default) for f in fields(Config)}
    for item in args.set:
        key, _, value = item.partition("=")
        if key not in types:
            raise SystemExit("--set: Config has no field %r (fields: %s)" % (key, ", ".join(types)))
        overrides[key] = value.lower() in ("1", "true", "yes") if types[key] is bool else types[key](value)
    seeds = 1 if args.smoke else args.seeds
    base = Config(**overrides)
    jobs = [({**asdict(base), "seed": s}, samplers) for s in range(args.first_seed, args.first_seed + seeds)]
    t0 = time.perf_counter()
    result = {"command": " ".join(["python3", "examples/trl/train.py"] + sys.argv[1:]), "config": asdict(base),
              "seeds": seeds, "samplers": samplers, "runs": [],
              "machine": {"cores": os.cpu_count(), "processes": args.processes, "loadavg_start": os.getloadavg(),
                          "python": platform.python_version(), "torch": torch.__version__,
                          "transformers": transformers.__version__, "trl": trl.__version__}}
    out.mkdir(parents=True, exist_ok=True)
    kept: list[dict] = []
    if args.resume and (out / "results.json").exists():
        kept, jobs = resume(json.loads((out / "results.json").read_text()), result, jobs, samplers)
    order = result["samplers"]

    def write(new: list[dict]) -> None:
        """results.json and summary.md from the seeds finished so far (a run stopped early keeps them)."""
        runs = kept + new
        result["runs"] = sorted(runs, key=lambda r: (r["seed"], order.index(r["sampler"])))
        result["seeds_done"] = len({r["seed"] for r in runs})
        result["machine"].update(wall_s=time.perf_counter() - t0, loadavg_end=os.getloadavg())
        (out / "results.json").write_text(json.dumps(result, separators=(",", ":")))  # compact: every step of every run
        (out / "summary.md").write_text(summary(result))

    signal.signal(signal.SIGTERM, lambda *_: sys.exit(124))  # stopped from outside: the pool's exit ends the workers
    write(run_jobs(jobs, args.processes, write))
    print("wrote %s (every step's tokens, rewards and loss) and %s" % (out / "results.json", out / "summary.md"),
          file=sys.stderr, flush=True)
    print(json.dumps({"seconds": result["machine"]["wall_s"], "runs": len(result["runs"])}))


if __name__ == "__main__":
    main()
