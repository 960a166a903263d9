"""TRACE tree rollouts inside TRL's `GRPOTrainer` (TRL 1.13): a `rollout_func`, a helper that
generates turns with a transformers causal LM, and a trainer that takes TRACE's tree advantages.

    from trace_alloc.trl import TraceRolloutFunc, HFTurnGenerator, env_reward

    rollout = TraceRolloutFunc(trace_alloc.Service(), HFTurnGenerator(stop_token_ids=[eos]), step,
                               prepare=lambda prompt: Prompt(tokenize(prompt), state_of(prompt)),
                               dim=model.config.hidden_size, max_turn_tokens=64,
                               budget=lambda trees: Budget(tokens=256 * trees))
    trainer = GRPOTrainer(model, reward_funcs=[env_reward], args=GRPOConfig(num_generations=8, ...),
                          train_dataset=prompts, processing_class=tokenizer, rollout_func=rollout)

**The contract (TRL 1.13, `GRPOTrainer._generate`).** TRL hands `rollout_func(prompts, trainer)`
this process's slice of the generation batch: every prompt repeated `num_generations` times in a
row (`num_generations_eval` in evaluation). It must return one completion per entry, in order:
`prompt_ids`, `completion_ids` and `logprobs` (lists of lists); every other key is an extra field
given to the reward functions (one value per completion), except `env_mask`, which TRL takes as
its tool mask (1: generated, trained on; 0: environment tokens, no loss).

**What this rollout_func returns.** Each run of equal prompts (at most `num_generations` long)
becomes one tree, grown by `TreeRollout` with one shared budget per call. Each entry gets one
leaf trajectory of its tree: the completion is the path's turns and observations after the
prompt, `env_mask` marks the observations, `logprobs` are the policy's (0.0 on observations),
and `env_reward` (an extra field; reward it with `env_reward`) is the episode's outcome, None
for a rollout the budget cut (TRL then counts it unscorable: out of the group statistics, zero
advantage). A tree usually has more leaves than completions are asked for: the ones returned are
chosen `selection="spread"` (round-robin over the root's subtrees, recursively: as few shared
prefixes as possible) or `"random"` (seeded); finished ones first. A tree with too few leaves
(its budget share ran out) is filled with unfinished ones, then with empty padding (one stop
token, env_mask 0, reward None: no loss, no statistics); `history` counts them.

**How GRPO's group statistics see a tree.** GRPO's group is the `num_generations` completions of
one prompt: here, leaves of one tree. Its baseline is their mean outcome and its scale their
standard deviation, as for independent samples, but tree leaves are not independent: leaves
under one branch share its prefix and their outcomes are correlated, and the allocator, not the
policy, decided how many leaves each branch has. In the loss, a turn shared by c returned
completions is pushed c times, by the sum of their advantages: a shared prefix weighs c times a
leaf's own turn, with c set by where TRACE placed rollouts rather than by how likely the policy
is to produce that prefix. What this module does about it: (1) `selection="spread"` keeps c
small among the completions GRPO sees (`history[i]["mean_copies"]` reports the mean c of a
generated token); (2) with `attach_advantages=True` and `TreeGRPOTrainer`, GRPO's sequence
advantage is replaced by TRACE's tree advantage per token (TreeRL by default, or Tree-GRPO's),
computed from *every* leaf of the tree through the values the service backed up, and spread with
`share="split"`: each copy of a shared node's token carries 1/c of the node's advantage, so every
node counts exactly once in the loss whatever c is. That exactness needs a loss that sums tokens
with one normaliser for the whole generation batch (`loss_type` "dapo", TRL's default, "dr_grpo"
or "cispo"); TreeGRPOTrainer refuses the others ("grpo", "sapo" and "luspo" average each
sequence, "bnpo" each micro-batch, so the copies of a node would weigh differently).
What TRL cannot do: take advantages from a `rollout_func` or a reward function (rewards always
pass through its group normalisation; per-token advantages need the subclass, which overrides
TRL's private `_generate_and_score_completions`, as TRL's own MiniLLM trainer does).

`HFTurnGenerator` lives in `trace_alloc.hf` (it needs transformers, not trl) and is re-exported
here. torch, transformers and trl are imported only when these classes are used.
"""
from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple, Union

from ._client import Service
from ._errors import TraceAllocError
from .advantages import METHODS, SHARES
from .driver import RolloutResult, TreeRollout
from .episode import Budget, EnvStep, Prompt, Request, Turn
from .hf import HFTurnGenerator  # noqa: F401 - part of this module's interface (see the usage above)
from .learn import LearnState
from .tree import Trajectory

__all__ = ["HFTurnGenerator", "SELECTIONS", "TOKEN_SUM_LOSSES", "TraceRolloutFunc", "choose", "env_reward",
           "prompt_groups", "spread_order"]

SELECTIONS = ("spread", "random")
#: TRL loss types that sum tokens with one normaliser for the whole generation batch (each node then
#: counts once exactly). "bnpo" normalises each micro-batch on its own, "grpo", "sapo" and "luspo" each sequence.
TOKEN_SUM_LOSSES = ("dapo", "dr_grpo", "cispo")


@dataclass(frozen=True)
class Completion:
    """One returned completion: a trajectory of its tree, or padding."""
    tree: int
    trajectory: Optional[int]  # index into the run's trajectories; None for padding


def spread_order(trajectories: Sequence[Trajectory], indices: Sequence[int]) -> List[int]:
    """`indices` ordered round-robin over the subtrees of the root, recursively: the first few
    share as little prefix as possible."""
    def order(members: List[int], depth: int) -> List[int]:
        here = [j for j in members if len(trajectories[j].path) <= depth]
        below: Dict[int, List[int]] = {}
        for j in members:
            if len(trajectories[j].path) > depth:
                below.setdefault(trajectories[j].path[depth], []).append(j)
        lanes = [order(below[c], depth + 1) for c in sorted(below)]
        out = list(here)
        for i in range(max((len(lane) for lane in lanes), default=0)):
            out += [lane[i] for lane in lanes if i < len(lane)]
        return out
    return order(list(indices), 1)


def choose(result: RolloutResult, tree: int, count: int, selection: str, rng: random.Random) -> List[Completion]:
    """`count` completions of one tree: finished trajectories first, then unfinished, then padding."""
    mine = [j for j, t in enumerate(result.trajectories) if t.tree == tree]
    picked: List[int] = []
    for group in ([j for j in mine if result.trajectories[j].finished], [j for j in mine if not result.trajectories[j].finished]):
        if selection == "random":
            group = rng.sample(group, len(group))
        else:
            group = spread_order(result.trajectories, group)
        picked += group[:count - len(picked)]
    return [Completion(tree, j) for j in picked] + [Completion(tree, None)] * (count - len(picked))


def prompt_groups(prompts: Sequence[Any], size: int) -> List[Tuple[int, int]]:
    """(start, length) of each run of equal consecutive prompts, cut at `size`."""
    groups: List[Tuple[int, int]] = []
    for i, p in enumerate(prompts):
        if groups and groups[-1][1] < size and prompts[groups[-1][0]] == p:
            groups[-1] = (groups[-1][0], groups[-1][1] + 1)
        else:
            groups.append((i, 1))
    return groups


def env_reward(prompts: Any = None, completions: Any = None, env_reward: Optional[List[Optional[float]]] = None,
               **kwargs: Any) -> List[Optional[float]]:
    """The reward function for a `TraceRolloutFunc`: each completion's episode outcome (None for a
    rollout the budget cut, which TRL leaves out of its statistics)."""
    if env_reward is None:
        raise TraceAllocError("invalid_request", "env_reward needs the env_reward field a TraceRolloutFunc returns",
                              field="env_reward")
    return list(env_reward)


class TraceRolloutFunc:
    """`rollout_func(prompts, trainer)` for TRL's GRPOTrainer: TRACE tree rollouts (module docstring).

    `generate(requests, trainer) -> turns` (e.g. `HFTurnGenerator`) and `step(state, turn) ->
    EnvStep` as for `TreeRollout`; `prepare(prompt) -> Prompt`: the token ids and the
    environment's start state of one dataset prompt. `budget`: a `Budget` per call, or
    `budget(trees) -> Budget`. The other options are `TreeRollout`'s. `attach_advantages`: also
    return `tree_advantages` (per token, `advantage` spread with `share`) for `TreeGRPOTrainer`.
    The service is `service` (one of this rollout function's own). `history` keeps one dict of
    counts per call."""

    def __init__(self, service: Service, generate: Callable[[List[Request], Any], Sequence[Turn]],
                 step: Callable[[Any, Tuple[int, ...]], EnvStep], *, prepare: Callable[[Any], Prompt], dim: int,
                 max_turn_tokens: int, budget: Union[Budget, Callable[[int], Budget]], pad_token_id: Optional[int] = None,
                 selection: str = "spread", attach_advantages: bool = False, advantage: str = "treerl",
                 share: str = "split", seed: int = 0, rollouts_per_round: Optional[Callable[[int], int]] = None,
                 min_per_tree: int = 1, plan_options: Optional[Mapping[str, Any]] = None, rule: Optional[str] = None,
                 projection: Optional[Callable[[Any], Any]] = None, learn: Optional[LearnState] = None) -> None:
        if selection not in SELECTIONS:
            raise TraceAllocError("invalid_options", "selection must be one of %s, got %r" % (", ".join(SELECTIONS), selection),
                                  field="selection")
        if share not in SHARES:
            raise TraceAllocError("invalid_options", 'share must be "split" or "repeat", got %r' % (share,), field="share")
        if advantage not in METHODS:
            raise TraceAllocError("invalid_options", "advantage must be one of %s, got %r" % (", ".join(METHODS), advantage),
                                  field="advantage")
        self.generate, self.prepare, self.budget = generate, prepare, budget
        self.pad_token_id = pad_token_id
        self.selection, self.attach_advantages, self.share = selection, attach_advantages, share
        self.rollouts_per_round = rollouts_per_round
        self._trainer: Any = None
        self.driver = TreeRollout(service, lambda requests: self.generate(requests, self._trainer), step, dim=dim,
                                  max_turn_tokens=max_turn_tokens, min_per_tree=min_per_tree, plan_options=plan_options,
                                  rule=rule, projection=projection, advantage=advantage, learn=learn, tree_prefix="trl")
        self.rng = random.Random(seed)
        self.history: List[Dict[str, Any]] = []
        #: Per completion of the last call: the tree advantage of each completion token (with attach_advantages).
        self.last_token_advantages: Optional[List[List[float]]] = None
        self.last_result: Optional[RolloutResult] = None

    def __call__(self, prompts: Sequence[Any], trainer: Any) -> Dict[str, Any]:
        training = getattr(getattr(trainer, "model", None), "training", True)
        size = getattr(trainer, "num_generations" if training else "num_generations_eval", None) or len(prompts)
        groups = prompt_groups(prompts, size)
        tree_prompts = [self.prepare(prompts[start]) for start, _ in groups]
        budget = self.budget if isinstance(self.budget, Budget) else self.budget(len(groups))
        self._trainer = trainer
        per_round = self.rollouts_per_round(len(groups)) if self.rollouts_per_round else None
        self.driver.rollouts_per_round = per_round
        try:
            result = self.driver.run(tree_prompts, budget)
        finally:
            self._trainer = None
        chosen: List[Completion] = []
        for t, (_, length) in enumerate(groups):
            chosen += choose(result, t, length, self.selection, self.rng)
        return self._output(result, chosen, trainer)

    def _output(self, result: RolloutResult, chosen: List[Completion], trainer: Any) -> Dict[str, Any]:
        pad = self.pad_token_id
        if pad is None:
            tokenizer = getattr(trainer, "processing_class", None)
            pad = getattr(tokenizer, "eos_token_id", None)
        out: Dict[str, List[Any]] = {"prompt_ids": [], "completion_ids": [], "logprobs": [], "env_mask": [], "env_reward": []}
        real = [c.trajectory for c in chosen if c.trajectory is not None]
        token_adv = dict(zip(real, result.advantages.tokens(result.trajectories, real, self.share))) if real else {}
        advantages: List[List[float]] = []
        copies: Dict[Tuple[int, int], int] = {}
        for j in real:
            for v in result.trajectories[j].path[1:]:
                key = (result.trajectories[j].tree, v)
                copies[key] = copies.get(key, 0) + 1
        shared = counted = 0
        for c in chosen:
            if c.trajectory is None:
                if pad is None:
                    raise TraceAllocError("invalid_options", "a tree had too few leaves and no pad_token_id is known to pad "
                                          "with: pass pad_token_id (or a processing_class with eos_token_id)",
                                          field="pad_token_id")
                out["prompt_ids"].append(list(result.trees[c.tree].prompt))
                out["completion_ids"].append([pad])
                out["logprobs"].append([0.0])
                out["env_mask"].append([0])
                out["env_reward"].append(None)
                advantages.append([0.0])
                continue
            t = result.trajectories[c.trajectory]
            out["prompt_ids"].append(list(t.prompt_ids))
            out["completion_ids"].append(list(t.completion_ids))
            out["logprobs"].append(list(t.logprobs))
            out["env_mask"].append(list(t.env_mask))
            out["env_reward"].append(t.reward)
            advantages.append([float(x) for x in token_adv[c.trajectory]])
            for v, m in zip(t.token_nodes, t.env_mask):
                if m and v >= 0:
                    shared += copies[(t.tree, v)]
                    counted += 1
        if self.attach_advantages:
            out["tree_advantages"] = advantages
        self.last_token_advantages = advantages
        self.last_result = result
        self.history.append({
            "trees": len(result.trees), "tokens_used": result.tokens_used, "rounds": result.rounds,
            "finished": len(result.finished), "unfinished": len(result.unfinished),
            "returned_finished": sum(1 for r in out["env_reward"] if r is not None),
            "returned_unfinished": sum(1 for c, r in zip(chosen, out["env_reward"]) if c.trajectory is not None and r is None),
            "padded": sum(1 for c in chosen if c.trajectory is None),
            "mean_copies": shared / counted if counted else 0.0,
            "root_share": result.root_branches / max(1, sum(a.branches for p in result.plans for tp in p.trees for a in tp.allocations)),
            "mean_reward": _mean([t.reward for t in result.finished]),
        })
        return out


def _mean(xs: Sequence[Optional[float]]) -> Optional[float]:
    vals = [float(x) for x in xs if x is not None]
    return sum(vals) / len(vals) if vals else None


def _tree_trainer_class() -> type:
    import torch
    from trl import GRPOTrainer

    class TreeGRPOTrainer(GRPOTrainer):  # type: ignore[misc, valid-type]
        """`GRPOTrainer` whose advantages are TRACE's tree advantages, per token: needs
        `rollout_func=TraceRolloutFunc(..., attach_advantages=True)` and a token-summed
        `loss_type` (module docstring)."""

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            if not isinstance(self.rollout_func, TraceRolloutFunc) or not self.rollout_func.attach_advantages:
                raise TraceAllocError("invalid_options", "TreeGRPOTrainer needs rollout_func=TraceRolloutFunc(..., "
                                      "attach_advantages=True)", field="rollout_func")
            if self.loss_type not in TOKEN_SUM_LOSSES:
                raise TraceAllocError("invalid_options", "loss_type %r averages each sequence on its own, so a node shared "
                                      "by several completions would not count once; use one of %s"
                                      % (self.loss_type, ", ".join(TOKEN_SUM_LOSSES)), field="loss_type")

        def _generate_and_score_completions(self, inputs: Any) -> Any:
            output = super()._generate_and_score_completions(inputs)
            per_token = self.rollout_func.last_token_advantages
            ids = output["completion_ids"]
            if per_token is None or len(per_token) != ids.shape[0]:
                raise TraceAllocError("internal", "tree advantages for %s completions, the batch has %d"
                                      % (None if per_token is None else len(per_token), ids.shape[0]))
            advantages = torch.zeros(ids.shape, dtype=torch.float32, device=ids.device)
            for i, row in enumerate(per_token):
                advantages[i, :len(row)] = torch.tensor(row, dtype=torch.float32)
            output["advantages"] = advantages
            return output

    TreeGRPOTrainer.__qualname__ = "TreeGRPOTrainer"  # it is this module's attribute once built
    return TreeGRPOTrainer


def __getattr__(name: str) -> Any:
    # `TreeGRPOTrainer` subclasses trl's GRPOTrainer: built on first use, so importing this module needs no trl.
    if name == "TreeGRPOTrainer":
        cls = _tree_trainer_class()
        globals()[name] = cls
        return cls
    raise AttributeError(name)
