"""TRACE tree rollouts inside TRL's `GRPOTrainer`: a `rollout_func`, a reward function, and a
trainer that takes TRACE's tree advantages. Supported: trl >= 1.13, < 1.14 (the package's `trl`
extra), checked when this module is imported (`SUPPORTED_TRL`, `check_trl_version`).

    from trace_alloc.trl import TraceRolloutFunc, HFTurnGenerator, env_reward

    rollout = TraceRolloutFunc(trace_alloc.Service(), HFTurnGenerator(stop_token_ids=[eos], pad_token_id=pad), step,
                               prepare=lambda prompt: Prompt(tokenize(prompt), state_of(prompt)),
                               dim=model.config.hidden_size, max_turn_tokens=64,
                               budget=lambda trees: Budget(tokens=256 * trees))
    trainer = GRPOTrainer(model, reward_funcs=[env_reward], args=GRPOConfig(num_generations=8, ...),
                          train_dataset=prompts, processing_class=tokenizer, rollout_func=rollout)

(A complete script that runs as written: python/README.md, "In TRL's GRPOTrainer".)

**Which TRL hooks, and why.** Public ones wherever they can do the job: the rollouts come through
`rollout_func` and the rewards through a reward function (`env_reward`). `environment_factory`
does not fit: with it TRL generates the turns itself (through the tokenizer's chat template and
tool-calling parser), so nothing could decide where rollouts start. TRL has no public way to take
per-token advantages, so `TreeGRPOTrainer` overrides one private method,
`GRPOTrainer._generate_and_score_completions` (`PRIVATE_HOOK`), as TRL's own MiniLLM trainer
does; everything that touches it is in `_tree_trainer_class`, which checks that it exists and
returns what is replaced, and `python/tests/test_trl_trainer.py` runs it inside the real trainer
on every TRL version the local package index offers (1.13.0 only, when this was written).
`rollout_func` is marked experimental by TRL and may change in a release: that, and the private
method, is why the supported range is one minor version. Outside it, importing this module raises
`TraceAllocError` (code `unsupported_version`) naming both versions; `TRACE_ALLOC_TRL_ANY_VERSION=1`
(`OVERRIDE_ENV`) skips the check, untested. Without trl installed the module still imports (the
rollout function needs no trl); `TreeGRPOTrainer` then says what to install.

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
advantage; only with `budget_end="cut"`). A tree usually has more leaves than completions are asked for: the ones returned are
chosen `selection="spread"` (round-robin over the root's subtrees, recursively: as few shared
prefixes as possible) or `"random"` (seeded); finished ones first. A tree with too few leaves
(its budget share ran out) is filled with unfinished ones, then with empty padding (one stop
token, env_mask 0, reward None: no loss, no statistics); `history` counts them.

**Concurrency.** By default (`concurrency=BATCH`) the trees grow with the driver's continuous
placement (`TreeRollout(concurrency=C)`) at C = the number of completions the call returns,
TRL's generation batch: that many rollouts run at once and each slot is refilled as its rollout
ends, so the generator's batch stays as full as TRL's default sampling keeps it. An integer, or
a function of the number of trees, sets another C; `concurrency=None` is the round driver
(`rollouts_per_round` per plan, each round waiting for all of its rollouts; `learn` needs it).
The trade-off: at the chains' tokens a step holds about one batch of rollouts, so at C = the
batch most of them start at once, from the prompts, before any outcome is known; a smaller C
places more of them on evidence, but the same tokens then take more, smaller generate calls
(examples/trl measures both).

**Budget.** The budget of a call is usually the tokens TRL's default sampling would spend. By
default (`budget_end="finish"`) no rollout is cut: once the budget is spent no new rollout
starts, the running ones finish their episodes, and what they spent past the budget is taken
off the next calls' budgets (`excess`, at most half of a call's budget at a time), so the
tokens of a whole training run equal the budgets' total plus at most the last call's excess.
Cutting instead (`budget_end="cut"`, each call exact) returns the rollouts still running at the
end, which are the long ones, as unscorable completions, and fills their places with the
short rollouts that had time to finish (examples/trl measures both).

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
advantage is replaced by TRACE's tree advantage per token, computed from *every* leaf of the tree
through the values the service backed up: the credit `advantage` (default: the package's default
credit, `trace_alloc.advantages`) spread over the returned completions' tokens with `share`
(default: the package's default spread; `share="split"` gives each copy of a shared node's token
1/c of the node's advantage, so every node counts exactly once whatever c is; `"repeat"` gives
every copy all of it, as the papers weight leaves). Either weighting is what it claims only with
a loss that sums tokens with one normaliser for the whole generation batch (`loss_type` "dapo",
TRL's default, "dr_grpo" or "cispo"); TreeGRPOTrainer refuses the others ("grpo", "sapo" and
"luspo" average each sequence, "bnpo" each micro-batch, so the copies of a node would weigh
differently).

`HFTurnGenerator` lives in `trace_alloc.hf` (it needs transformers, not trl) and is re-exported
here; any `trace_alloc.generators.TokenTurns` works as `generate` too (no hidden states: leave
`dim` out and the driver sketches each turn from its token ids). torch, transformers and trl are
imported only when these classes are used.
"""
from __future__ import annotations

import os
import random
import re
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple, Union

from ._client import Service
from ._errors import TraceAllocError
from .advantages import METHODS, SHARES
from .sketch import TokenSketch
from .driver import RolloutResult, TreeRollout
from .episode import Budget, EnvStep, Prompt, Request, Turn
from .hf import HFTurnGenerator  # noqa: F401 - part of this module's interface (see the usage above)
from .learn import LearnState
from .tree import Trajectory

__all__ = ["BATCH", "HFTurnGenerator", "OVERRIDE_ENV", "PRIVATE_HOOK", "SELECTIONS", "SUPPORTED_TRL", "TOKEN_SUM_LOSSES",
           "TraceRolloutFunc", "check_trl_version", "choose", "env_reward", "installed_trl_version", "prompt_groups",
           "spread_order"]

#: The TRL versions this module is tested with (the `trl` extra of pyproject.toml says the same).
SUPPORTED_TRL = ">=1.13,<1.14"
_SUPPORTED_RANGE = ((1, 13), (1, 14))  # [lowest, first unsupported): (major, minor)
#: Set to 1 to use this module with a TRL outside SUPPORTED_TRL (untested).
OVERRIDE_ENV = "TRACE_ALLOC_TRL_ANY_VERSION"
#: The one private GRPOTrainer method TreeGRPOTrainer overrides (module docstring).
PRIVATE_HOOK = "_generate_and_score_completions"


def installed_trl_version() -> Optional[str]:
    """The installed trl's version, read from its package metadata (trl is not imported), or None."""
    from importlib import metadata

    try:
        return metadata.version("trl")
    except metadata.PackageNotFoundError:
        return None


def check_trl_version(version: Optional[str]) -> None:
    """Raises `TraceAllocError` (code `unsupported_version`) when `version` is outside SUPPORTED_TRL,
    unless OVERRIDE_ENV is 1; None (trl not installed) passes (module docstring)."""
    if version is None or os.environ.get(OVERRIDE_ENV) == "1":
        return
    numbers = re.match(r"(\d+)\.(\d+)", version)
    release = (int(numbers.group(1)), int(numbers.group(2))) if numbers else None
    if release is None or not _SUPPORTED_RANGE[0] <= release < _SUPPORTED_RANGE[1]:
        raise TraceAllocError("unsupported_version", "trl %s is installed, but trace_alloc.trl supports trl %s "
                              "(the package's [trl] extra: pip install 'trl%s'); set %s=1 to use it anyway, untested"
                              % (version, SUPPORTED_TRL, SUPPORTED_TRL, OVERRIDE_ENV), field="trl")


check_trl_version(installed_trl_version())

SELECTIONS = ("spread", "random")
#: `concurrency=BATCH` (the default): keep as many rollouts running as the call returns completions
#: (TRL's generation batch), refilling each slot as its rollout ends (the driver's continuous placement).
BATCH = "batch"
Concurrency = Union[None, str, int, Callable[[int], int]]
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

    `generate(requests, trainer) -> turns` (e.g. `HFTurnGenerator`, or `generators.TokenTurns`)
    and `step(state, turn_ids) -> EnvStep` as for `TreeRollout` (`turn_ids`: the turn's token ids,
    a tuple); `prepare(prompt) -> Prompt`: the token ids and the environment's start state of one
    dataset prompt. `budget`: a `Budget` per call, or `budget(trees) -> Budget`. The other options
    are `TreeRollout`'s (`dim` None: token sketches). `concurrency`: BATCH (the default: the
    call's number of completions), an integer, `concurrency(trees) -> int`, or None for the round
    driver (module docstring). `budget_end`: "finish" (the default) runs every started rollout
    to its end and takes what it spent past the budget off the next calls' budgets (`excess`),
    "cut" ends them at the budget, unfinished (module docstring, "Budget"). `attach_advantages`: also return
    `tree_advantages` (per token, `advantage` spread with `share`; None: the package's defaults,
    `trace_alloc.advantages`) for `TreeGRPOTrainer`.
    The service is `service` (one of this rollout function's own). `history` keeps one dict of
    counts per call."""

    def __init__(self, service: Service, generate: Callable[[List[Request], Any], Sequence[Turn]],
                 step: Callable[[Any, Tuple[int, ...]], EnvStep], *, prepare: Callable[[Any], Prompt],
                 max_turn_tokens: int, budget: Union[Budget, Callable[[int], Budget]], dim: Optional[int] = None,
                 pad_token_id: Optional[int] = None, selection: str = "spread", attach_advantages: bool = False,
                 advantage: Optional[str] = None, share: Optional[str] = None, seed: int = 0,
                 concurrency: Concurrency = BATCH,
                 rollouts_per_round: Optional[Callable[[int], int]] = None, min_per_tree: int = 1,
                 plan_options: Optional[Mapping[str, Any]] = None, rule: Optional[str] = None,
                 projection: Optional[Callable[[Any], Any]] = None, learn: Optional[LearnState] = None,
                 sketch: Optional[TokenSketch] = None, budget_end: str = "finish", uncertainty: str = "next") -> None:
        if selection not in SELECTIONS:
            raise TraceAllocError("invalid_options", "selection must be one of %s, got %r" % (", ".join(SELECTIONS), selection),
                                  field="selection")
        if share is not None and share not in SHARES:
            raise TraceAllocError("invalid_options", "share must be one of %s, got %r" % (", ".join(SHARES), share),
                                  field="share")
        if advantage is not None and advantage not in METHODS:
            raise TraceAllocError("invalid_options", "advantage must be one of %s, got %r" % (", ".join(METHODS), advantage),
                                  field="advantage")
        self.generate, self.prepare, self.budget = generate, prepare, budget
        self.pad_token_id = pad_token_id
        self.selection, self.attach_advantages, self.share = selection, attach_advantages, share
        if not (concurrency is None or concurrency == BATCH or callable(concurrency) or _positive_int(concurrency)):
            raise TraceAllocError("invalid_options", "concurrency must be %r, None (the round driver), an integer >= 1 or "
                                  "a function of the number of trees, got %r" % (BATCH, concurrency), field="concurrency")
        if concurrency is not None and learn is not None:
            raise TraceAllocError("invalid_options", "learning alpha, tau needs each round's plan scores: pass "
                                  "concurrency=None (the round driver) with learn", field="concurrency")
        self.concurrency = concurrency
        self.rollouts_per_round = rollouts_per_round
        self._trainer: Any = None
        credit = {} if advantage is None else {"advantage": advantage}  # None: the driver's default, from trace_alloc.advantages
        self.driver = TreeRollout(service, lambda requests: self.generate(requests, self._trainer), step, dim=dim,
                                  max_turn_tokens=max_turn_tokens, min_per_tree=min_per_tree, plan_options=plan_options,
                                  rule=rule, projection=projection, learn=learn, tree_prefix="trl", sketch=sketch,
                                  budget_end=budget_end, uncertainty=uncertainty, **credit)
        #: Generated tokens spent past the budgets so far (budget_end="finish"), taken off the next calls' budgets.
        self.excess = 0
        self._last_budget: Optional[int] = None
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
        asked = budget.tokens
        if asked is not None and self.excess > 0:
            # Finished rollouts ran past earlier budgets: take that off this one (at most half of it,
            # so a call always has tokens to spend), so the tokens of all calls stay equal to the budgets'.
            take = min(self.excess, asked // 2)
            budget = Budget(tokens=asked - take, steps=budget.steps)
        self._trainer = trainer
        per_round = self.rollouts_per_round(len(groups)) if self.rollouts_per_round else None
        self.driver.rollouts_per_round = per_round
        self.driver.concurrency = self._concurrency(len(prompts), len(groups))
        try:
            result = self.driver.run(tree_prompts, budget)
        finally:
            self._trainer = None
        self._last_budget = budget.tokens
        if asked is not None:  # never negative: a call that spent less than asked earns no credit
            self.excess = max(0, self.excess + result.tokens_used - asked)
        chosen: List[Completion] = []
        for t, (_, length) in enumerate(groups):
            chosen += choose(result, t, length, self.selection, self.rng)
        return self._output(result, chosen, trainer)

    def _concurrency(self, completions: int, trees: int) -> Optional[int]:
        """This call's concurrency: TRL's generation batch (`completions`) for BATCH, None for the round driver."""
        if self.concurrency is None:
            return None
        value = completions if self.concurrency == BATCH else self.concurrency(trees) if callable(self.concurrency) \
            else self.concurrency
        if not _positive_int(value):
            raise TraceAllocError("invalid_options", "concurrency(%d trees) must be an integer >= 1, got %r" % (trees, value),
                                  field="concurrency")
        return int(value)

    def _output(self, result: RolloutResult, chosen: List[Completion], trainer: Any) -> Dict[str, Any]:
        pad = self.pad_token_id
        if pad is None:
            tokenizer = getattr(trainer, "processing_class", None)
            pad = getattr(tokenizer, "eos_token_id", None)
        out: Dict[str, List[Any]] = {"prompt_ids": [], "completion_ids": [], "logprobs": [], "env_mask": [], "env_reward": []}
        real = [c.trajectory for c in chosen if c.trajectory is not None]
        spread = {} if self.share is None else {"share": self.share}  # None: the package's default spread
        token_adv = dict(zip(real, result.advantages.tokens(result.trajectories, real, **spread))) if real else {}
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
            "tokens_budget": self._last_budget, "excess": self.excess,
            "finished": len(result.finished), "unfinished": len(result.unfinished),
            "returned_finished": sum(1 for r in out["env_reward"] if r is not None),
            "returned_unfinished": sum(1 for c, r in zip(chosen, out["env_reward"]) if c.trajectory is not None and r is None),
            "padded": sum(1 for c in chosen if c.trajectory is None),
            "mean_copies": shared / counted if counted else 0.0,
            "continuous": self.driver.concurrency is not None, "concurrency": self.driver.concurrency,
            # Every placed rollout is a trajectory or never started, in both drivers (the continuous one keeps no plans).
            "root_share": result.root_branches / max(1, len(result.trajectories) + result.never_started),
            "mean_reward": _mean([t.reward for t in result.finished]),
        })
        return out


def _positive_int(x: Any) -> bool:
    return isinstance(x, int) and not isinstance(x, bool) and x >= 1


def _mean(xs: Sequence[Optional[float]]) -> Optional[float]:
    vals = [float(x) for x in xs if x is not None]
    return sum(vals) / len(vals) if vals else None


def _tree_trainer_class(base: Optional[type] = None) -> type:
    """`TreeGRPOTrainer` over `base` (TRL's GRPOTrainer by default): the one place that touches
    TRL's private API, the override of PRIVATE_HOOK (module docstring)."""
    import torch

    if base is None:
        try:
            from trl import GRPOTrainer as base
        except ImportError as err:
            raise TraceAllocError("missing_dependency", "TreeGRPOTrainer needs trl %s (the package's [trl] extra): %s"
                                  % (SUPPORTED_TRL, err), field="trl") from None
    if not callable(getattr(base, PRIVATE_HOOK, None)):
        raise TraceAllocError("unsupported_version", "%s.%s does not exist in trl %s: TreeGRPOTrainer replaces the advantages "
                              "it returns and supports trl %s" % (base.__name__, PRIVATE_HOOK, installed_trl_version(),
                                                                  SUPPORTED_TRL), field="trl")

    class TreeGRPOTrainer(base):  # type: ignore[misc, valid-type]
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

    def with_tree_advantages(self: Any, inputs: Any) -> Any:
        """TRL's scored batch, its (B,) sequence advantages replaced by the (B, T) tree advantages
        the rollout function attached (TRL's loss takes either shape)."""
        output = getattr(super(TreeGRPOTrainer, self), PRIVATE_HOOK)(inputs)
        if not isinstance(output, dict) or "advantages" not in output or "completion_ids" not in output:
            raise TraceAllocError("unsupported_version", "%s returned no advantages and completion_ids to replace (trl %s; "
                                  "supported: %s)" % (PRIVATE_HOOK, installed_trl_version(), SUPPORTED_TRL), field="trl")
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

    with_tree_advantages.__name__ = PRIVATE_HOOK
    setattr(TreeGRPOTrainer, PRIVATE_HOOK, with_tree_advantages)
    TreeGRPOTrainer.__qualname__ = "TreeGRPOTrainer"  # it is this module's attribute once built
    return TreeGRPOTrainer


def __getattr__(name: str) -> Any:
    # `TreeGRPOTrainer` subclasses trl's GRPOTrainer: built on first use, so importing this module needs no trl.
    if name == "TreeGRPOTrainer":
        cls = _tree_trainer_class()
        globals()[name] = cls
        return cls
    raise AttributeError(name)
