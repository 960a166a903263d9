"""One training run: a pre-trained policy, one sampler, GRPO-style updates with tree advantages."""

from __future__ import annotations

import copy
import math
import random
import sys
import time
from dataclasses import asdict, dataclass

import torch
import transformers

from allocator_client import AllocatorClient
from forest import Forest, Grower
from model import build_model, pretrain, turn_log_probs
from samplers import IndependentSampler, TraceSampler, UniformSampler, pack
from task import Prompt, make_prompts

SAMPLERS = ["independent", "uniform", "trace", "trace-learned"]


@dataclass
class Config:
    seed: int = 0
    steps: int = 30
    prompt_pool: int = 16  # distinct prompts of the seed (trained on and evaluated on)
    prompts_per_step: int = 8
    tokens_per_step: int = 512  # generated-token budget of one training step
    pretrain_steps: int = 300
    learning_rate: float = 3e-4
    eval_every: int = 5
    eval_samples: int = 8  # sampled episodes per prompt at each evaluation point
    trace_rollouts_per_tree: int = 4
    layers: int = 2
    hidden: int = 64


def seed_setup(cfg: Config):
    """The seed's prompts and its pre-trained policy, shared by every sampler (a paired comparison)."""
    prompts = make_prompts(random.Random(cfg.seed * 31 + 1), cfg.prompt_pool)
    model = build_model(cfg.seed, cfg.layers, cfg.hidden)
    t0 = time.perf_counter()
    loss = pretrain(model, cfg.seed, cfg.pretrain_steps)
    return prompts, model, {"pretrain_loss": loss, "pretrain_s": time.perf_counter() - t0}


def evaluate(model, prompts: list[Prompt], samples: int, seed: int) -> float:
    """Success rate of `samples` sampled episodes per prompt (no budget), own seeded stream."""
    forest = Forest([p for p in prompts for _ in range(samples)])
    gen = torch.Generator().manual_seed(seed)
    Grower(forest, model, gen, budget=10 ** 9).run(list(forest.roots))
    roots = [forest.nodes[r] for r in forest.roots]
    return sum(n.reward_sum for n in roots) / len(roots)


def policy_update(model, opt, forest: Forest, prompts: int) -> tuple[float, int]:
    """θ ← θ + lr·Adam(Σ_n A(n) ∇ log π(turn_n | prefix) / prompts); returns (loss, nodes used)."""
    adv = forest.advantages()
    if not adv:
        return 0.0, 0
    ids = list(adv)
    seqs = [forest.nodes[i].seq[: forest.nodes[i].span[1]] for i in ids]
    model.train()
    logp = turn_log_probs(model, seqs, [forest.nodes[i].span for i in ids])
    loss = -(torch.tensor([adv[i] for i in ids]) * logp).sum() / prompts
    opt.zero_grad()
    loss.backward()
    opt.step()
    model.eval()
    return float(loss), len(ids)


def make_sampler(name: str, cfg: Config, client: AllocatorClient | None):
    if name == "independent":
        return IndependentSampler()
    if name == "uniform":
        return UniformSampler(random.Random(cfg.seed * 13 + 5))
    return TraceSampler(client, cfg.trace_rollouts_per_tree, learn=name == "trace-learned")


def train(cfg: Config, sampler_name: str, prompts: list[Prompt], base_model) -> dict:
    model = copy.deepcopy(base_model)
    opt = torch.optim.Adam(model.parameters(), lr=cfg.learning_rate)
    gen = torch.Generator().manual_seed(cfg.seed * 1009 + 7)
    client = AllocatorClient() if sampler_name.startswith("trace") else None
    sampler = make_sampler(sampler_name, cfg, client)
    used_total = 0
    curve = [[0, evaluate(model, prompts, cfg.eval_samples, cfg.seed * 7 + 1)]]
    per_step = []
    step_s = 0.0
    try:
        for step in range(cfg.steps):
            t0 = time.perf_counter()
            batch = [prompts[(step * cfg.prompts_per_step + i) % len(prompts)] for i in range(cfg.prompts_per_step)]
            forest = Forest(batch)
            grower = Grower(forest, model, gen, cfg.tokens_per_step)
            sampler.grow(grower, model)
            loss, nodes = policy_update(model, opt, forest, len(batch))
            step_s += time.perf_counter() - t0
            used_total += grower.used
            successes = sum(1 for n in forest.nodes if n.terminal and n.outcome > 0)
            per_step.append({"tokens": grower.used, "rollouts": grower.started, "finished": grower.finished,
                             "truncated": grower.truncated, "successes": successes, "nodes": len(forest.nodes),
                             "loss": loss, "update_nodes": nodes,
                             **({"alpha": sampler.adam.alpha, "tau": sampler.adam.tau} if getattr(sampler, "adam", None) else {})})
            if (step + 1) % cfg.eval_every == 0 or step == cfg.steps - 1:
                curve.append([used_total, evaluate(model, prompts, cfg.eval_samples, cfg.seed * 7 + 1 + step + 1)])
        result = {"sampler": sampler_name, "seed": cfg.seed, "curve": curve, "final_success": curve[-1][1],
                  "mean_success": sum(c[1] for c in curve[1:]) / max(1, len(curve) - 1),
                  "tokens_used": used_total, "step_s": step_s / cfg.steps, "steps": per_step,
                  "loss_finite": all(math.isfinite(s["loss"]) for s in per_step)}
        if isinstance(sampler, TraceSampler):
            # One more sync, outside the timed steps: the service must hold the last forest exactly.
            a = pack(forest, model.config.n_embd, "s%d-p" % sampler.steps)
            client.sync_forest(a["ids"], a["tree_offset"], a["parent"], a["reward"], a["visits"], a["uncertainty"],
                               a["terminal"], a["embedding"])
            result.update({
                "allocator_s": sampler.allocator_s / cfg.steps,
                "allocator_share": sampler.allocator_s / step_s,
                "plans": sampler.plans, "planned_branches": sampler.planned_branches,
                "root_branches": sampler.root_branches, "launched": sampler.launched,
                "forests_sent": client.forests_sent, "nodes_sent": client.nodes_sent,
                "last_forest_nodes": len(forest.nodes), "plan_budget_mismatches": sampler.plan_mismatches,
                "startup_s": client.startup_s,
                "transport": client.transport, "params": sampler.params, "rule": sampler.rule,
                "service_stats": client.stats(),
            })
        return result
    finally:
        if client is not None:
            client.close()


def run_seed(args: tuple[dict, list[str]]) -> list[dict]:
    """Every sampler on one seed from the same pre-trained policy (one worker process)."""
    cfg_dict, samplers = args
    torch.set_num_threads(1)
    transformers.logging.set_verbosity_error()
    cfg = Config(**cfg_dict)
    prompts, model, info = seed_setup(cfg)
    out = []
    for name in samplers:
        t0 = time.perf_counter()
        r = train(cfg, name, prompts, model)
        print("seed %d %-13s final success %.3f (%.0f s)" % (cfg.seed, name, r["final_success"], time.perf_counter() - t0),
              file=sys.stderr, flush=True)
        r.update(info)
        r["config"] = asdict(cfg)
        out.append(r)
    return out
