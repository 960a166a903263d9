"""GRPO with TRL 1.13 on a tiny transformer and a multi-turn tool task: TRL's default sampling
against TRACE tree rollouts at the same token budget, step by step.

    python3 examples/trl/train.py --out examples/trl/results      # the committed run
    python3 examples/trl/train.py --smoke --out /tmp/trl-smoke    # CI: 2 steps per sampler, a tiny model

Per seed: prompts of the calculator task (examples/llm/task.py), a GPT-2 built from a config and
pre-trained briefly on solved transcripts (examples/llm/model.py; nothing is downloaded), then one
`GRPOTrainer` run per sampler from the same weights and the same prompt order:

- `independent`: TRL's default sampling, `num_generations` independent episodes per prompt;
  the tokens it generates in each step become the budget of the tree samplers' same step;
- `trace`: `trace_alloc.trl.TraceRolloutFunc`, one tree per prompt grown with TRACE's plans at
  that budget, `num_generations` leaves per prompt returned, GRPO's own advantages;
- `trace-treerl`: the same rollouts, trained with TreeRL's per-token tree advantages
  (`TreeGRPOTrainer`, each shared node counted once).

Writes `results.json` (every step's tokens, reward, loss, the rollout functions' counts, success
before and after) and `summary.md`.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import platform
import sys
import tempfile
import time
import warnings
from dataclasses import asdict, dataclass
from pathlib import Path

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
from transformers.trainer_callback import PrinterCallback  # noqa: E402
from trl import GRPOConfig, GRPOTrainer  # noqa: E402

import trace_alloc  # noqa: E402
from trace_alloc import Budget  # noqa: E402
from trace_alloc.trl import HFTurnGenerator, TraceRolloutFunc, TreeGRPOTrainer, env_reward  # noqa: E402

from episodes import END, PAD, IndependentRollouts, env_step, make_prompts, prepare, prompt_text, success_rate, tokenizer  # noqa: E402
from model import MAX_POSITIONS, build_model, pretrain  # noqa: E402
from stats import mean_interval, paired  # noqa: E402
from task import MAX_TURN_TOKENS  # noqa: E402

import random  # noqa: E402

SAMPLERS = ["independent", "trace", "trace-treerl"]
REPO = HERE.parents[1]


@dataclass
class Config:
    seed: int = 0
    steps: int = 30
    prompt_pool: int = 16
    prompts_per_step: int = 4
    num_generations: int = 8
    pretrain_steps: int = 300
    learning_rate: float = 5e-4
    eval_samples: int = 8
    rollouts_per_tree_per_round: int = 2
    layers: int = 2
    hidden: int = 64


# A few seconds per sampler. Pre-trained 300 steps, with 8 completions per prompt: a policy pre-trained
# 20 steps never solved a prompt, every reward was 0, GRPO's advantages (reward − its prompt's mean)
# were all 0 and so was every loss: the run trained nothing.
SMOKE = dict(steps=2, prompt_pool=4, prompts_per_step=2, num_generations=8, pretrain_steps=300, eval_samples=2,
             layers=1, hidden=64)


def service() -> trace_alloc.Service:
    return trace_alloc.Service(["node", str(REPO / "dist" / "cli" / "main.js"), "serve", "--stdio", "--backend", "cpu"])


def grpo_config(cfg: Config, out: str) -> GRPOConfig:
    return GRPOConfig(
        output_dir=out, per_device_train_batch_size=cfg.prompts_per_step * cfg.num_generations,
        num_generations=cfg.num_generations, gradient_accumulation_steps=1, max_steps=cfg.steps,
        learning_rate=cfg.learning_rate, beta=0.0, loss_type="dapo", max_completion_length=MAX_POSITIONS,
        logging_steps=1, save_strategy="no", report_to=[], use_cpu=True, seed=cfg.seed, data_seed=cfg.seed,
        bf16=False, fp16=False, disable_tqdm=True, dataloader_num_workers=0, temperature=1.0,
    )


def run_sampler(name: str, cfg: Config, base_model, tok, dataset, prompts, budgets: list[int] | None) -> dict:
    """One GRPOTrainer run of `name` from `base_model`; budgets: the tokens of each step (tree samplers)."""
    model = copy.deepcopy(base_model)
    generate = HFTurnGenerator(stop_token_ids=[END], pad_token_id=PAD)
    before = success_rate(generate, model, prompts, cfg.eval_samples, cfg.seed * 7 + 1)
    ta = None
    if name == "independent":
        rollout = IndependentRollouts(generate)
    else:
        ta = service()
        calls = {"n": 0}

        def budget(trees: int) -> Budget:  # the independent run's tokens at the same step
            calls["n"] += 1
            return Budget(tokens=budgets[calls["n"] - 1])

        # The committed run's credit, named so that it reproduces whatever trace_alloc.advantages' defaults become.
        rollout = TraceRolloutFunc(ta, generate, env_step, prepare=prepare, dim=cfg.hidden, max_turn_tokens=MAX_TURN_TOKENS,
                                   budget=budget, attach_advantages=name == "trace-treerl", seed=cfg.seed,
                                   advantage="treerl", share="split",
                                   rollouts_per_round=lambda trees: cfg.rollouts_per_tree_per_round * trees)
    torch.manual_seed(cfg.seed * 1009 + 7)
    trainer_class = TreeGRPOTrainer if name == "trace-treerl" else GRPOTrainer
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="trace-alloc-trl-") as out:
        trainer = trainer_class(model=model, reward_funcs=[env_reward], args=grpo_config(cfg, out), train_dataset=dataset,
                                processing_class=tok, rollout_func=rollout)
        trainer.remove_callback(PrinterCallback)  # the per-step dicts; results.json keeps them
        try:
            trainer.train()
        finally:
            if ta is not None:
                ta.close()
    train_s = time.perf_counter() - t0
    logs = [x for x in trainer.state.log_history if "loss" in x]
    after = success_rate(generate, model, prompts, cfg.eval_samples, cfg.seed * 7 + 1)
    result = {"sampler": name, "seed": cfg.seed, "success_before": before, "success_after": after, "train_s": train_s,
              "steps": [{"loss": x["loss"], "reward": x.get("reward"), "reward_std": x.get("reward_std"),
                         "frac_reward_zero_std": x.get("frac_reward_zero_std")} for x in logs]}
    if name == "independent":
        result["tokens"] = rollout.tokens
    else:
        result["tokens"] = [h["tokens_used"] for h in rollout.history]
        result["rollout_calls"] = rollout.history
        result["completions_per_prompt"] = cfg.num_generations
    return result


def run_seed(cfg: Config, samplers: list[str]) -> list[dict]:
    prompts = make_prompts(random.Random(cfg.seed * 31 + 1), cfg.prompt_pool)
    tok = tokenizer()
    model = build_model(cfg.seed, cfg.layers, cfg.hidden)
    pretrain(model, cfg.seed, cfg.pretrain_steps)
    dataset = Dataset.from_dict({"prompt": [prompt_text(p) for p in prompts]})
    runs = []
    budgets = None
    for name in samplers:
        if name != "independent" and budgets is None:
            raise SystemExit("the tree samplers take their per-step budget from the independent run: list it first")
        r = run_sampler(name, cfg, model, tok, dataset, prompts, budgets)
        if name == "independent":
            budgets = r["tokens"]
        runs.append(r)
        print("seed %d %-12s success %.3f -> %.3f, %d tokens, %.0f s" % (cfg.seed, name, r["success_before"],
              r["success_after"], sum(r["tokens"]), r["train_s"]), file=sys.stderr, flush=True)
        print_steps(r, cfg)
    return runs


def print_steps(run: dict, cfg: Config) -> None:
    """Each training step of one run, as a user checks it: tokens, rewards, the loss, and why a loss is 0."""
    calls = run.get("rollout_calls") or [None] * len(run["steps"])
    for i, (step, tokens, call) in enumerate(zip(run["steps"], run["tokens"], calls), 1):
        trees = "" if call is None else " (%d rounds, %d finished + %d cut rollouts, %.0f%% started at a prompt)" % (
            call["rounds"], call["finished"], call["unfinished"], 100 * call["root_share"])
        why = ""
        if step["loss"] == 0 and step.get("frac_reward_zero_std") == 1:
            why = "  (every prompt's %d completions got the same reward: every advantage is 0)" % cfg.num_generations
        print("    step %d: %d generated tokens%s; %d completions, mean reward %.3f (std %.3f); loss %.4f%s" % (
            i, tokens, trees, cfg.prompts_per_step * cfg.num_generations, step["reward"] or 0.0, step["reward_std"] or 0.0,
            step["loss"], why), file=sys.stderr, flush=True)


def summary(runs: list[dict], samplers: list[str], cfg: Config, seeds: int) -> str:
    lines = ["# TRL GRPO: TRL's default sampling vs TRACE tree rollouts at equal tokens", "",
             "%d seeds × %d steps, %d prompts × %d completions per step; success = mean outcome of %d sampled episodes "
             "per prompt on the %d-prompt pool; 95%% t-intervals over seeds." % (seeds, cfg.steps, cfg.prompts_per_step,
             cfg.num_generations, cfg.eval_samples, cfg.prompt_pool), "",
             "| sampler | success before % | success after % | change (points) | generated tokens / step | mean reward of returned completions |",
             "|---|---|---|---|---|---|"]
    for s in samplers:
        rs = [r for r in runs if r["sampler"] == s]
        change = mean_interval([100 * (r["success_after"] - r["success_before"]) for r in rs])
        fmt = lambda v: "%.1f [%.1f, %.1f]" % (v["mean"], v["ci95"][0], v["ci95"][1])  # noqa: E731
        rewards = [x["reward"] for r in rs for x in r["steps"] if x["reward"] is not None]
        lines.append("| %s | %s | %s | %s | %.0f | %.3f |" % (
            s, fmt(mean_interval([100 * r["success_before"] for r in rs])), fmt(mean_interval([100 * r["success_after"] for r in rs])),
            fmt(change), np.mean([t for r in rs for t in r["tokens"]]), np.mean(rewards) if rewards else float("nan")))
    base = sorted((r for r in runs if r["sampler"] == "independent"), key=lambda r: r["seed"])
    for s in samplers:
        if s == "independent" or not base:
            continue
        rs = sorted((r for r in runs if r["sampler"] == s), key=lambda r: r["seed"])
        d = paired([100 * r["success_after"] for r in rs], [100 * r["success_after"] for r in base])
        lines.append("")
        lines.append("%s − independent, success after training, paired by seed: %.1f [%.1f, %.1f] points." % (
            s, d["mean"], d["ci95"][0], d["ci95"][1]))
    trace = [c for r in runs if r["sampler"] != "independent" for c in r.get("rollout_calls", [])]
    if trace:
        lines += ["", "Tree rollouts per step (both tree samplers): %.1f rounds, %.1f finished and %.1f cut rollouts per step, "
                  "%.1f%% of planned rollouts from a prompt, mean copies of a returned generated token %.2f, "
                  "%.2f padded completions per step (of %d)." % (
                      np.mean([c["rounds"] for c in trace]), np.mean([c["finished"] for c in trace]),
                      np.mean([c["unfinished"] for c in trace]), 100 * np.mean([c["root_share"] for c in trace]),
                      np.mean([c["mean_copies"] for c in trace]), np.mean([c["padded"] for c in trace]),
                      cfg.prompts_per_step * cfg.num_generations)]
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--smoke", action="store_true", help="2 steps per sampler, a tiny model (the CI test)")
    ap.add_argument("--seeds", type=int, default=4)
    ap.add_argument("--first-seed", type=int, default=0)
    ap.add_argument("--samplers", default=",".join(SAMPLERS))
    ap.add_argument("--steps", type=int)
    ap.add_argument("--report-only", action="store_true", help="rewrite summary.md from results.json")
    args = ap.parse_args()
    if args.report_only:
        r = json.loads((Path(args.out) / "results.json").read_text())
        (Path(args.out) / "summary.md").write_text(summary(r["runs"], r["samplers"], Config(**r["config"]), r["seeds"]))
        return
    torch.set_num_threads(1)
    transformers.logging.set_verbosity_error()
    # TRL warns for every completion no reward function scored: the rollouts the budget cut, by design.
    logging.getLogger("trl").setLevel(logging.ERROR)
    samplers = args.samplers.split(",")
    base = Config(**SMOKE) if args.smoke else Config()
    if args.steps:
        base.steps = args.steps
    seeds = 1 if args.smoke else args.seeds
    t0 = time.perf_counter()
    runs = []
    for s in range(args.first_seed, args.first_seed + seeds):
        cfg = Config(**{**asdict(base), "seed": s})
        runs += run_seed(cfg, samplers)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    result = {"config": asdict(base), "seeds": seeds, "samplers": samplers, "runs": runs, "seconds": time.perf_counter() - t0,
              "machine": {"cores": os.cpu_count(), "loadavg_end": os.getloadavg(), "python": platform.python_version(),
                          "torch": torch.__version__, "transformers": transformers.__version__, "trl": trl.__version__}}
    (out / "results.json").write_text(json.dumps(result, indent=1))
    (out / "summary.md").write_text(summary(runs, samplers, base, seeds))
    print("wrote %s (every step's tokens, rewards and loss) and %s" % (out / "results.json", out / "summary.md"),
          file=sys.stderr, flush=True)
    print(json.dumps({"seconds": result["seconds"], "runs": len(runs)}))


if __name__ == "__main__":
    main()
