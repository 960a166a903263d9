"""One training run: a pre-trained policy, one sampler, GRPO-style updates with tree advantages."""

from __future__ import annotations

import copy
import math
import random
import resource
import sys
import time
from dataclasses import asdict, dataclass, fields

import torch
import transformers

from allocator_client import AllocatorClient
from decode import max_logit_gap
from forest import Forest, Grower, fixed_uniforms, stream_uniforms
from model import build_model, packed_weighted_log_prob, pretrain, weighted_log_prob
from samplers import EntropySampler, IndependentSampler, TraceSampler, UniformSampler, pack
from tasks import CALCULATOR, Task, get_task

# Every sampler spends `tokens_per_step` generated tokens per step, except the compute-equivalence
# rows: independent chains with 1.5 and 2 times the tokens.
SAMPLERS = ["independent", "uniform", "entropy", "trace", "trace-v5", "trace-v4", "trace-v3", "trace-v2", "trace-learned", "independent-1.5x", "independent-2x"]
TOKEN_MULTIPLIERS = {"independent-1.5x": 1.5, "independent-2x": 2.0}
# The TRACE rows: the rule each passes to the service (None: the library's default rule).
TRACE_RULES = {"trace": None, "trace-v5": "v5", "trace-v4": "v4", "trace-v3": "v3", "trace-v2": "v2", "trace-learned": None}
MAX_DECODER_GAP = 1e-4  # largest logit difference allowed between decode.Decoder and transformers


@dataclass
class Config:
    seed: int = 0
    task: str = "calculator"  # a name in tasks.TASKS; "calculator" is the committed run's
    steps: int = 50
    prompt_pool: int = 32  # distinct prompts of the seed (trained on and evaluated on)
    prompts_per_step: int = 8
    tokens_per_step: int = 1024  # generated-token budget of one training step
    pretrain_steps: int = 450
    # When > 0: pre-training stops at the first check (every 25 steps) where the policy's success
    # on the seed's prompts reaches this (at most pretrain_steps): a start that is weak but not
    # saturated whatever the model's size (the GPU profile's larger model learns faster).
    pretrain_until: float = 0.0
    learning_rate: float = 5e-4
    eval_every: int = 10
    eval_samples: int = 16  # sampled episodes per prompt at each evaluation point (common random numbers)
    trace_rollouts_per_tree: int = 2
    # The update's credit, one of ADVANTAGES: "treerl-branch" (the default: TreeRL's per-leaf
    # credit with branch-mean values, README "TreeRL's credit with branch means"), the published
    # per-leaf credits "treerl-leaf" (TreeRL's: most committed folders' credit) and
    # "tree-grpo-leaf" (Tree-GRPO's), "grpo" (per rollout, reward minus its tree's mean), or
    # "treerl" (per node, counted once: the first runs' credit). results/credit/ and
    # results/branch-credit/ have the measurements.
    advantage: str = "treerl-branch"
    # The TRACE rows' turn embeddings: "hidden" (the mean hidden state, the committed run) or "sketch"
    # (the turn's token sketch, trace_alloc.sketch: what a generator without hidden states gives).
    embedding: str = "hidden"
    # What the TRACE rows send the service: "plain" (a node per generated turn, so identical turns
    # written from one node are siblings with identical embeddings: the committed runs) or "trie"
    # (a node per distinct prefix, `allocator_view.PrefixTrie`: siblings are the different
    # continuations tried from a node; level with "plain" for v4 on the recipe task, 5.5 points
    # worse for v3 on the calculator: results/tuning/README.md, t13).
    forest_view: str = "plain"
    # The uncertainty the TRACE rows send: "next" (the mean entropy of the turns written from the
    # node: how unsettled the policy is after the step, as the input format defines `uncertainty`;
    # the default since rule v5 became the library's) or "turn" (each node's own turn's mean token
    # entropy: the runs committed before, `LATER_SETTINGS` in report.py). v5 gates no uncertainty
    # gap below two finished rollouts each, which few nodes here reach, so it reads nearly every
    # gap, as v3 does; v3 fed "turn" was 4.7 [0.7, 8.7] points behind chains on the recipe task,
    # fed "next" 1.9 [-2.3, 6.2] ahead (12 seeds; README, "Which entropy").
    uncertainty: str = "next"
    # The contest gain κ the TRACE rows ask of each plan (`--contest-gain`): "" leaves the rule's
    # own default (4 for v2–v5); a number sets it. κ scales every contested fork's claim against
    # the root's fresh share of 1, so on the same evidence it sets how much of a step goes to forks
    # (README, "A larger contest gain").
    contest_gain: str = ""
    # The tree floor q0 the TRACE rows ask of each plan (`--tree-floor`): "" leaves the rule's own
    # default (1 for v3–v5); a number sets it. Each round's budget is split over the prompts in
    # proportion to q0 + the intensity of the prompt's first fork, so a large q0 (10⁶) gives every
    # prompt the same share, as chains do (README, "Which part of v5 costs the calculator").
    tree_floor: str = ""
    # The fork keep η the TRACE rows ask of each plan (`--fork-keep`): "" leaves the rule's own
    # default (0.25 for v3–v5); a number in [0, 1] sets it. A contested fork starts η of its draw
    # as new siblings at the fork itself and passes the rest down its kept children, so η = 1
    # re-samples only the contested decisions (README, "Where a contested fork's draw goes").
    fork_keep: str = ""
    # How a step's generation and update treat the prefixes rollouts share (results/shared-prefixes/
    # measures both; neither changes what is computed beyond rounding). `prefix_cache`: a rollout
    # copies its start node's keys and values from a finished rollout through it instead of
    # prefilling them again (a generator's prefix caching). `update_rows`: "leaves" forwards one row
    # per finished leaf that carries a weighted turn (`Forest.carriers`, the committed runs); "trees"
    # one row per tree, each distinct token once under a tree-shaped attention mask (`Forest.packed`);
    # "auto" whichever of the two costs less that step by `update_cost`. Off and "leaves" by
    # default, so the committed runs reproduce seed for seed.
    prefix_cache: bool = False
    update_rows: str = "leaves"
    eval_check: bool = False  # evaluate each final policy again with other random numbers (the pilot's noise split)
    layers: int = 2
    hidden: int = 64
    heads: int = 4
    device: str = "cpu"


def seed_setup(cfg: Config, table: torch.Tensor):
    """The seed's prompts and its pre-trained policy, shared by every sampler (a paired comparison)."""
    task = get_task(cfg.task)
    prompts = task.make_prompts(random.Random(cfg.seed * 31 + 1), cfg.prompt_pool)
    model = build_model(cfg.seed, cfg.layers, cfg.hidden, cfg.heads, task).to(cfg.device)
    t0 = time.perf_counter()
    done = None
    if cfg.pretrain_until > 0:
        done = lambda: evaluate(model, prompts, cfg.eval_samples, table, task)["success"] >= cfg.pretrain_until  # noqa: E731
    loss, taken = pretrain(model, cfg.seed, cfg.pretrain_steps, done=done, task=task)
    return prompts, model, {"pretrain_loss": loss, "pretrain_steps_taken": taken, "pretrain_s": time.perf_counter() - t0}


def config_value(key: str, text: str):
    """A `Config` field's value from its command-line text (`run.py --set`, `tune.py --config`):
    "1", "true" or "yes" for a boolean, else the field's type applied to the text. LookupError
    when Config has no such field."""
    types = {f.name: type(f.default) for f in fields(Config)}
    if key not in types:
        raise LookupError("Config has no field %r (fields: %s)" % (key, ", ".join(types)))
    return text.lower() in ("1", "true", "yes") if types[key] is bool else types[key](text)


def eval_table(cfg: Config, stream: int = 1) -> torch.Tensor:
    """The seed's evaluation uniforms (episodes × tokens), the same for every sampler and point;
    `stream` 2 is the pilot's second, independent set."""
    gen = torch.Generator().manual_seed(cfg.seed * 7 + stream)
    return torch.rand(cfg.prompt_pool * cfg.eval_samples, get_task(cfg.task).max_episode_tokens, generator=gen,
                      dtype=torch.float64)


def evaluate(model, prompts: list, samples: int, table: torch.Tensor, task: Task = CALCULATOR) -> dict:
    """Success of `samples` sampled episodes per prompt (temperature 1, no budget), drawn with the
    fixed uniforms of `table`: overall and by difficulty."""
    forest = Forest([p for p in prompts for _ in range(samples)], task)
    Grower(forest, model, fixed_uniforms(table), budget=10 ** 9, embed=False).run(list(forest.roots))
    wins = [forest.nodes[r].reward_sum for r in forest.roots]
    by = {}
    for d in task.difficulties:
        mine = [w for w, p in zip(wins, forest.prompts) if p.difficulty == d]
        if mine:
            by[str(d)] = sum(mine) / len(mine)
    return {"success": sum(wins) / len(wins), "by_difficulty": by}


# Per credit, the node weights A(n) of the update (forest.py says what each is).
ADVANTAGES = {"treerl": Forest.advantages, "grpo": Forest.grpo_advantages,
              "treerl-leaf": Forest.treerl_leaf_advantages, "tree-grpo-leaf": Forest.tree_grpo_leaf_advantages,
              "treerl-branch": Forest.treerl_branch_advantages}


def node_weights(forest: Forest, advantage: str) -> dict[int, float]:
    """The weight of every node's turn in the update under the credit named `advantage`."""
    if advantage not in ADVANTAGES:
        raise ValueError("advantage must be one of %s, got %r" % (", ".join(ADVANTAGES), advantage))
    return ADVANTAGES[advantage](forest)


UPDATE_ROWS = ("leaves", "trees", "auto")


def policy_update(model, opt, forest: Forest, prompts: int, advantage: str = Config.advantage,
                  rows: str = "leaves") -> tuple[float, int]:
    """θ ← θ + lr·Adam(Σ_n A(n) ∇ log π(turn_n | prefix) / prompts); returns (loss, nodes used).
    `rows`: one of UPDATE_ROWS (`Config.update_rows`); the loss is the same sum either way (every
    credit weighs only nodes with a finished rollout below them, which both layouts hold)."""
    if rows not in UPDATE_ROWS:
        raise ValueError("update_rows must be one of %s, got %r" % (", ".join(UPDATE_ROWS), rows))
    adv = node_weights(forest, advantage)
    if not adv:
        return 0.0, 0
    model.train()
    seqs, weights = forest.carriers(adv) if rows != "trees" else ([], [])
    if rows == "trees" or (rows == "auto" and update_cost(forest.packed_lengths(adv)) < update_cost([len(s) for s in seqs])):
        forest.update_rows = "trees"
        loss = -packed_weighted_log_prob(model, forest.packed(adv)) / prompts
    else:
        forest.update_rows = "leaves"
        loss = -weighted_log_prob(model, seqs, weights) / prompts
    opt.zero_grad()
    loss.backward()
    opt.step()
    model.eval()
    return float(loss.detach()), len(adv)


def update_cost(lengths: list[int]) -> float:
    """A forward and backward pass's relative cost over rows of these lengths, padded to the
    longest: positions × (1 + width / 200). Per position the feed-forward part is
    constant and attention grows with the width; fitted on this CPU (the recipe task, seed 5,
    both layouts timed on chains, chains at 2× tokens and entropy forking): a tree row of 600
    tokens cost 27 µs a position, of 1,250 tokens 49. Position count alone picked tree rows for
    chains at 2× tokens, whose rows of 1,200–1,400 tokens took 2.0–3.1 times the leaves' time."""
    width = max(lengths, default=0)
    return len(lengths) * width * (1 + width / 200)


def tree_metrics(forest: Forest) -> dict:
    """Sibling groups with ≥ 2 finished children and how many of them are mixed (children's mean
    outcomes not all equal); the turn at which each failed rollout was lost (its first node from
    which no continuation can earn the reward), counted by turn 1, 2, ...; and the generated
    tokens of the failed rollouts, all of them and those from the turn it was lost at on (what
    a fork at the last node where the episode was still winnable regenerates)."""
    scored = mixed = 0
    for n in forest.nodes:
        values = [forest.value(c) for c in n.children if forest.nodes[c].visits]
        if len(values) >= 2:
            scored += 1
            mixed += max(values) > min(values)
    lost_at: dict[str, int] = {}
    failed_tokens = decided_tokens = 0
    for leaf, n in enumerate(forest.nodes):
        if not n.terminal or n.outcome > 0:
            continue
        path = []
        v = leaf
        while forest.nodes[v].parent >= 0:
            path.append(v)
            v = forest.nodes[v].parent
        first = next(i for i in range(len(path) - 1, -1, -1) if forest.lost(path[i]))
        key = str(forest.nodes[path[first]].depth)
        lost_at[key] = lost_at.get(key, 0) + 1
        tokens = [forest.nodes[u].span[1] - forest.nodes[u].span[0] for u in path]  # leaf first
        failed_tokens += sum(tokens)
        decided_tokens += sum(tokens[: first + 1])
    return {"scored_groups": scored, "mixed_groups": mixed, "lost_at_turn": lost_at,
            "failed_tokens": failed_tokens, "tokens_from_lost_turn": decided_tokens}


def make_sampler(name: str, cfg: Config, client: AllocatorClient | None):
    if name.startswith("independent"):
        return IndependentSampler()
    if name == "uniform":
        return UniformSampler(random.Random(cfg.seed * 13 + 5))
    if name == "entropy":
        return EntropySampler()
    def number(field: str) -> float | None:
        text = getattr(cfg, field)
        try:
            return float(text) if text else None
        except ValueError:
            raise ValueError("%s must be a number or empty (the rule's default), got %r" % (field, text)) from None
    return TraceSampler(name, client, cfg.trace_rollouts_per_tree, learn=name == "trace-learned", embedding=cfg.embedding,
                        view=cfg.forest_view, uncertainty=cfg.uncertainty, contest_gain=number("contest_gain"),
                        tree_floor=number("tree_floor"), fork_keep=number("fork_keep"))


def train(cfg: Config, sampler_name: str, prompts: list, base_model, table: torch.Tensor, first: dict,
          check_table: torch.Tensor | None = None) -> dict:
    """One sampler from the seed's pre-trained policy; `first` is that policy's evaluation; with
    `check_table`, the final policy is evaluated again with those random numbers."""
    task = get_task(cfg.task)
    model = copy.deepcopy(base_model)
    opt = torch.optim.Adam(model.parameters(), lr=cfg.learning_rate)
    uniforms = stream_uniforms(torch.Generator().manual_seed(cfg.seed * 1009 + 7))
    client = AllocatorClient(TRACE_RULES[sampler_name]) if sampler_name in TRACE_RULES else None
    sampler = make_sampler(sampler_name, cfg, client)
    budget = int(round(cfg.tokens_per_step * TOKEN_MULTIPLIERS.get(sampler_name, 1.0)))
    used_total = 0
    curve = [[0, first["success"]]]
    per_step = []
    step_s = generate_s = update_s = 0.0
    try:
        for step in range(cfg.steps):
            t0 = time.perf_counter()
            batch = [prompts[(step * cfg.prompts_per_step + i) % len(prompts)] for i in range(cfg.prompts_per_step)]
            forest = Forest(batch, task)
            # Sketched TRACE rows record no hidden state (the same tokens are sampled either way).
            grower = Grower(forest, model, uniforms, budget, embed=getattr(sampler, "sketch", None) is None,
                            prefix_cache=cfg.prefix_cache)
            sampler.grow(grower, model)
            t1 = time.perf_counter()
            loss, nodes = policy_update(model, opt, forest, len(batch), cfg.advantage, cfg.update_rows)
            t2 = time.perf_counter()
            step_s += t2 - t0
            update_s += t2 - t1
            generate_s += grower.generate_s
            used_total += grower.used
            if grower.used != budget:
                raise AssertionError("%s spent %d tokens in step %d, not its budget %d" % (sampler_name, grower.used, step, budget))
            successes = sum(1 for n in forest.nodes if n.terminal and n.outcome > 0)
            per_step.append({"tokens": grower.used, "rollouts": grower.started, "finished": grower.finished,
                             "truncated": grower.truncated, "successes": successes, "nodes": len(forest.nodes),
                             "batches": grower.runs, "loss": loss, "update_nodes": nodes, **tree_metrics(forest),
                             "update_rows": forest.update_rows, "cached_prefix_tokens": grower.cached_prefix_tokens,
                             "chain_rollouts": grower.chain_rollouts, "chain_tokens": grower.chain_tokens,
                             "fork_rollouts": grower.fork_rollouts, "fork_tokens": grower.fork_tokens,
                             **({"alpha": sampler.adam.alpha, "tau": sampler.adam.tau} if getattr(sampler, "adam", None) else {})})
            if (step + 1) % cfg.eval_every == 0 or step == cfg.steps - 1:
                last = evaluate(model, prompts, cfg.eval_samples, table, task)
                curve.append([used_total, last["success"]])
        result = {"sampler": sampler_name, "seed": cfg.seed, "curve": curve, "final_success": curve[-1][1],
                  "mean_success": sum(c[1] for c in curve[1:]) / max(1, len(curve) - 1),
                  "start_by_difficulty": first["by_difficulty"], "final_by_difficulty": last["by_difficulty"],
                  "tokens_per_step": budget, "tokens_used": used_total, "step_s": step_s / cfg.steps,
                  "generate_s": generate_s / cfg.steps, "update_s": update_s / cfg.steps, "steps": per_step,
                  "loss_finite": all(math.isfinite(s["loss"]) for s in per_step)}
        if check_table is not None:
            result["final_success_check"] = evaluate(model, prompts, cfg.eval_samples, check_table, task)["success"]
        if isinstance(sampler, TraceSampler):
            # One more sync, outside the timed steps: the service must hold the last forest exactly.
            sent = sampler.sent(forest)
            a = pack(sent, sampler.dim(model), "s%d-p" % sampler.steps, sampler.sketch, sampler.uncertainty)
            client.sync_forest(a["ids"], a["tree_offset"], a["parent"], a["reward"], a["visits"], a["uncertainty"],
                               a["terminal"], a["embedding"])
            result.update({
                "allocator_s": sampler.allocator_s / cfg.steps,
                "allocator_share": sampler.allocator_s / step_s,
                "plans": sampler.plans, "planned_branches": sampler.planned_branches,
                "root_branches": sampler.root_branches, "launched": sampler.launched,
                "forests_sent": client.forests_sent, "nodes_sent": client.nodes_sent,
                "last_forest_nodes": len(sent.nodes), "last_forest_turns": len(forest.nodes), "plan_budget_mismatches": sampler.plan_mismatches,
                "startup_s": client.startup_s, "transport": client.transport, "params": sampler.params,
                "rule": sampler.rule, "rule_asked": TRACE_RULES[sampler_name], "service_stats": client.stats(),
            })
        return result
    finally:
        if client is not None:
            client.close()


def _cpu_s() -> float:
    """CPU seconds of this process and its finished children (the allocator services)."""
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def run_seed(args: tuple[dict, list[str], float]) -> list[dict]:
    """Every sampler on one seed from the same pre-trained policy (one worker process); nothing
    when the seed would start after `stop_at` (a `time.time()`)."""
    cfg_dict, samplers, stop_at = args
    if time.time() > stop_at:
        return []
    torch.set_num_threads(1)
    transformers.logging.set_verbosity_error()
    cfg = Config(**cfg_dict)
    table = eval_table(cfg)
    c0 = _cpu_s()
    prompts, model, info = seed_setup(cfg, table)
    info["pretrain_cpu_s"] = _cpu_s() - c0
    info["decoder_gap"] = max_logit_gap(model, max_sequence=get_task(cfg.task).max_sequence)
    if not info["decoder_gap"] <= MAX_DECODER_GAP:
        raise AssertionError("seed %d: the decoder's logits differ from the transformers forward pass by %g (> %g)"
                             % (cfg.seed, info["decoder_gap"], MAX_DECODER_GAP))
    check = eval_table(cfg, 2) if cfg.eval_check else None
    first = evaluate(model, prompts, cfg.eval_samples, table, get_task(cfg.task))
    out = []
    for name in samplers:
        t0, c0 = time.perf_counter(), _cpu_s()
        r = train(cfg, name, prompts, model, table, first, check)
        r["wall_s"], r["cpu_s"] = time.perf_counter() - t0, _cpu_s() - c0
        print("seed %d %-16s final success %.3f (%.0f s)" % (cfg.seed, name, r["final_success"], r["wall_s"]),
              file=sys.stderr, flush=True)
        r.update(info)
        r["config"] = asdict(cfg)
        out.append(r)
    return out
