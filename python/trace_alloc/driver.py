"""The tree-rollout driver: one tree per prompt, grown round by round where the service's plans
say, every rollout run to the episode's end, outcomes backed up, and the budget spent exactly.

    driver = TreeRollout(ta, generate, step, dim=hidden_size)   # dim omitted: token sketches (below)
    result = driver.run(prompts, Budget(tokens=4096))
    result.trajectories            # leaf trajectories: token ids, log-probs, env mask, outcome
    result.values                  # per tree: mean outcome and visits per node, read back from the service
    result.advantages.tokens(...)  # TreeRL or Tree-GRPO advantages per token

**A round.** The driver asks the service for a plan over its trees (`plan` with a global budget
of `rollouts_per_round`), then starts `branches` rollouts at each allocated node: each new
rollout continues the node's prefix (the prompt, then every turn and observation on its path)
one turn at a time, in batches over all running rollouts, until the environment ends its
episode. The round's new nodes go to the service as binary columns and each finished rollout is
backed up with its outcome, all in one `extend` request (the round's growth, all or none). Rounds repeat until the budget is spent. Under the default rule every rollout runs to the
end and the plan's `depth` (a fork horizon) is not needed; the driver never truncates a rollout
at it.

**Exactly at the budget.** The budget counts the policy's generated tokens (or environment
steps, or both); prompt and observation tokens are free. Every generate request carries a
`max_tokens` such that all requests of a batch together can never pass what is left, so the run
spends exactly the budget (a root is never terminal, so there is always somewhere to start a
rollout). When the budget runs out, the rollouts still running are cut: their whole turns stay
in the tree as open nodes, their partial turn is returned in an *unfinished* trajectory
(`reward` None), and nothing is backed up for them. Starting a rollout only when its worst case
fits would leave no rollout unfinished, but an episode's worst case (turns × the longest turn)
is many times its typical length, so that rule leaves a large and variable part of the budget
unspent and makes equal-budget comparisons unequal. The cut is kept small instead: when the
remaining budget cannot cover every running turn, running rollouts are served in order, each
with its whole turn (a turn cut short resumes when tokens come free), rather than all with a
sliver; and the last rounds shrink to the number of rollouts the remaining budget is expected
to finish (what is left ÷ the mean tokens of the rollouts finished so far in the run).

**Finishing instead of cutting** (`budget_end="finish"`). Cutting biases what a run returns:
the rollouts still running at the end are the long ones, so the finished set over-represents
short episodes, and a trainer that must return a fixed number of completions per prompt (TRL)
gets the cut ones as unscorable. With `"finish"`, no new rollout starts once the budget is
spent and every started one runs to its episode's end; `tokens_used` then exceeds the budget by
what they generated (the environment must end its episodes). Since every started rollout will
finish, the continuous driver's first placement starts no more rollouts than the budget is
expected to finish at the previous run's tokens per finished rollout (`tokens_per_rollout`). A
caller that needs equal tokens over many runs subtracts each run's excess from the next budget
(`TraceRolloutFunc` does).

**Continuous placement** (`concurrency=C`): no round barrier. `C` rollouts run at once; after
every batch in which some ended, their nodes and outcomes go to the service in one `extend` and
their slots are refilled at once with one `place` request: each new rollout starts where the
round plan of `C` rollouts, made with the evidence now, wants more rollouts than are running
(docs/ALGORITHM.md, "Continuous placement"). The generator's batch stays full until the budget
ends, and the budget is spent exactly as above (no more rollouts run than the remaining budget
is expected to finish, at the tokens generated so far per ended rollout: counting the running
rollouts' tokens keeps the estimate from the short rollouts that end first). The round driver
(`concurrency=None`, the default) remains; learning α, τ needs it (it reads each round's plan
scores).

**Embeddings.** A turn's embedding is what its generator returns (`Turn.embedding`, e.g. the mean
hidden state; `dim` numbers, or `projection`'s input), or, when the generator returns none
(`embedding=None`: vLLM, SGLang, an API), a seeded sketch of the turn's token n-grams computed
here (`trace_alloc.sketch.TokenSketch`, width `dim`, default 256). One run uses one kind: a run
whose turns mix both is refused, since a sibling group would compare a hidden state with a sketch.

**Uncertainty** (`uncertainty`). A node's `uncertainty` is how unsettled the step still is
(docs/ALGORITHM.md §1); the simulated tasks give the policy's entropy at the state the step
led to, i.e. after it. With `"next"` (the default) a node is sent that quantity: the mean of its
children's turn entropies (each child node once), 0 while no turn has been written from it (and
at a terminal node); every `extend` then also updates the nodes that existed before and gained a
child. With `"turn"` (the default before rule v5, and what examples/trl's committed runs used) a
node is sent the mean entropy of its own turn (`Turn.entropy`, token-weighted over the turn's
pieces): how unsettled the policy was while writing it. Measured on examples/llm (the example
computes both itself): rule v4's final success did not separably depend on the choice (−0.2
[−2.1, +1.8] points for "next" on the calculator task, −0.9 [−2.6, +0.9] on the recipe task, 60
paired seeds each), but rules that gate no uncertainty gap between siblings visited once do: v3
gained 6.7 [1.1, 12.2] points from "next" on the recipe task (12 seeds), where with "turn" it was
separably behind independent chains (−4.7 [−8.7, −0.7]). The default rule v5 gates a gap only
once both siblings have two finished rollouts, which few nodes of a language-model tree reach, so
it reads "next" (v5 with "turn" was not measured).

**Affinity.** Every `Request` names the tree (`tree_id`) and the node its rollout was placed at
(`start`); `request.affinity` is the stable key `"<tree id>/<start>"`. Rollouts with one key
share their whole prefix up to the placement, so a router that sends equal keys to one engine
gets that prefix from the engine's prefix (KV) cache.

The driver needs a `Service` of its own (its trees are the service's only trees: the global
budget is split over every tree the service holds); it removes its trees when a run ends.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Set, Tuple, Union

import numpy as np

from ._client import Service
from ._columns import to_numpy
from ._errors import TraceAllocError
from ._plan import Plan
from ._values import TreeValues
from .advantages import DEFAULT_METHOD, METHODS, TreeAdvantages, compute_advantages
from .episode import Budget, EnvStep, Prompt, Request, Turn
from .learn import LearnState, ascend, objective_gradient, outcome_variance_gains
from .sketch import DEFAULT_WIDTH, TokenSketch
from .tree import RolloutTree, Trajectory, TreeNode, trajectory

Generate = Callable[[List[Request]], Sequence[Turn]]
Step = Callable[[Any, Tuple[int, ...]], EnvStep]

#: What happens to the rollouts still running when a run's budget is spent (`budget_end`):
#: "cut" (the default) ends them there, unfinished, so the run spends exactly its budget;
#: "finish" runs every started rollout to its episode's end, past the budget, so no rollout is
#: cut and the run spends its budget plus what those rollouts still generate.
BUDGET_ENDS = ("cut", "finish")
#: What a node's `uncertainty` is (module docstring, "Uncertainty"): its own turn's entropy, or the
#: mean entropy of the turns written from it (how unsettled things are after the step).
UNCERTAINTIES = ("turn", "next")


@dataclass(frozen=True)
class RolloutResult:
    """What one `run` grew and learned."""
    trees: Tuple[RolloutTree, ...]  # one per prompt, in prompt order
    values: Tuple[TreeValues, ...]  # per tree: mean outcome and visits per node, as the service backed them up
    trajectories: Tuple[Trajectory, ...]  # every rollout, finished or cut, in the order they ended
    advantages: TreeAdvantages
    tokens_used: int
    steps_used: int
    rounds: int
    plans: Tuple[Plan, ...]  # the plan of each round
    root_branches: int  # planned rollouts that start at a prompt (a fresh chain)
    never_started: int  # planned rollouts the budget ran out before (not among `trajectories`)

    @property
    def finished(self) -> Tuple[Trajectory, ...]:
        return tuple(t for t in self.trajectories if t.finished)

    @property
    def unfinished(self) -> Tuple[Trajectory, ...]:
        return tuple(t for t in self.trajectories if not t.finished)


@dataclass
class _Running:
    """A rollout in flight: where it stands, and the turn it is generating (maybe in pieces)."""
    tree: int
    node: int
    start: int
    generated: int = 0
    tokens: List[int] = field(default_factory=list)
    logprobs: List[float] = field(default_factory=list)
    embedding_sum: Optional[np.ndarray] = None  # token-weighted sum of the pieces' embeddings (None: sketched)
    entropy_sum: float = 0.0
    ticket: int = 0  # continuous placement: the service's ticket for this rollout's slot


@dataclass
class _Round:
    """A round's bookkeeping for the α, τ learner: the plan's scores and which rollouts it placed."""
    plan: Plan
    nodes_before: List[int]  # per tree, its size when the plan was made
    outcomes: List[Tuple[int, int, float]] = field(default_factory=list)  # (tree, start node, reward) per finished rollout


class TreeRollout:
    """Grows rollout trees with plans from `service` (docs/PROTOCOL.md; module docstring).

    `generate(requests) -> turns`: one `Turn` per `Request`, batched (module `episode`).
    `step(state, turn_tokens) -> EnvStep`: the environment's answer to a complete turn, from the
    state of the node the turn continues (the prompt's `state` at the root); it must not change
    `state` in place (a node may be continued many times).
    `dim`: the embedding dimension the service scores (after `projection`, if one is given);
    None (the default) for generators that return no embeddings: each turn is then sketched
    from its token ids by `sketch` (default `TokenSketch()`, width 256; module docstring, "Embeddings").
    `max_turn_tokens`: the longest turn; a turn that reaches it without stopping goes to the
    environment as it is. `rollouts_per_round`: rollouts one plan places (default 2 per prompt),
    `min_per_tree`: the least each tree gets per round. `plan_options`: other plan settings
    (prune_ratio, contest_gain, ...) passed on as they are. `rule`: sent with `set-params`
    only when given (the service's default rule otherwise). `projection`: applied to each
    batch of turn embeddings before they are sent (e.g. `trace_alloc.projection.RandomProjection`);
    `sketch`: the `TokenSketch` for turns without an embedding (its width must equal `dim`).
    `advantage`: one of `advantages.METHODS`. `learn`: a `LearnState` to ascend α, τ after every
    run from the gains of the rollouts each round placed (rewards must then be in [0, 1]); the new
    α, τ go to the service and stay in `learn_state`. `budget_end`: one of `BUDGET_ENDS` (the
    rollouts still running when the budget is spent are cut, or run to their end). `uncertainty`:
    one of `UNCERTAINTIES` (module docstring, "Uncertainty").
    """

    def __init__(self, service: Service, generate: Generate, step: Step, *, max_turn_tokens: int,
                 dim: Optional[int] = None, rollouts_per_round: Optional[int] = None, min_per_tree: int = 1,
                 plan_options: Optional[Mapping[str, Any]] = None, rule: Optional[str] = None,
                 projection: Optional[Callable[[Any], Any]] = None, advantage: str = DEFAULT_METHOD,
                 learn: Optional[LearnState] = None, tree_prefix: str = "rollout",
                 sketch: Optional[TokenSketch] = None, concurrency: Optional[int] = None,
                 budget_end: str = "cut", uncertainty: str = "next") -> None:
        if dim is not None and (isinstance(dim, bool) or not isinstance(dim, int) or dim < 0):
            raise TraceAllocError("invalid_options", "dim must be an integer >= 0, got %r" % (dim,), field="dim")
        if sketch is not None and not isinstance(sketch, TokenSketch):
            raise TraceAllocError("invalid_options", "sketch must be a trace_alloc.sketch.TokenSketch, got %r"
                                  % (type(sketch).__name__,), field="sketch")
        if sketch is not None and dim is not None and sketch.width != dim:
            raise TraceAllocError("invalid_options", "the sketch's width (%d) must equal dim (%d)" % (sketch.width, dim),
                                  field="sketch")
        if sketch is None and dim != 0:
            sketch = TokenSketch(DEFAULT_WIDTH if dim is None else dim)
        if not isinstance(max_turn_tokens, int) or max_turn_tokens < 1:
            raise TraceAllocError("invalid_options", "max_turn_tokens must be an integer >= 1, got %r"
                                  % (max_turn_tokens,), field="max_turn_tokens")
        if rollouts_per_round is not None and (not isinstance(rollouts_per_round, int) or rollouts_per_round < 1):
            raise TraceAllocError("invalid_options", "rollouts_per_round must be an integer >= 1, got %r"
                                  % (rollouts_per_round,), field="rollouts_per_round")
        if concurrency is not None and (isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1):
            raise TraceAllocError("invalid_options", "concurrency must be an integer >= 1, got %r" % (concurrency,),
                                  field="concurrency")
        if concurrency is not None and learn is not None:
            raise TraceAllocError("invalid_options", "learning alpha, tau needs each round's plan scores: use the round "
                                  "driver (concurrency=None) with learn", field="learn")
        if advantage not in METHODS:
            raise TraceAllocError("invalid_options", "advantage must be one of %s, got %r" % (", ".join(METHODS), advantage),
                                  field="advantage")
        if budget_end not in BUDGET_ENDS:
            raise TraceAllocError("invalid_options", "budget_end must be one of %s, got %r" % (", ".join(BUDGET_ENDS), budget_end),
                                  field="budget_end")
        if uncertainty not in UNCERTAINTIES:
            raise TraceAllocError("invalid_options", "uncertainty must be one of %s, got %r"
                                  % (", ".join(UNCERTAINTIES), uncertainty), field="uncertainty")
        self.uncertainty = uncertainty
        self.service, self.generate, self.step = service, generate, step
        self.budget_end = budget_end
        #: Generated tokens per finished rollout in the last continuous run (None before one): under
        #: budget_end="finish" it caps the next run's first placement, since every rollout started then
        #: runs to its end whatever the budget.
        self.tokens_per_rollout: Optional[float] = None
        #: True when the caller named `dim` (turns may carry embeddings), False for sketches only.
        self.dim_given = dim is not None
        self.sketch = sketch
        self.dim = dim if dim is not None else sketch.width  # type: ignore[union-attr]
        self.max_turn_tokens = max_turn_tokens
        self._sketching: Optional[bool] = None  # this run's kind of embedding, set by its first turns
        self.rollouts_per_round, self.min_per_tree = rollouts_per_round, min_per_tree
        self.concurrency = concurrency
        self.plan_options = dict(plan_options or {})
        self.projection, self.advantage = projection, advantage
        self.learn_state = learn
        self.tree_prefix = tree_prefix
        self._runs = 0
        # per tree: nodes made this round, not yet sent: (parent, uncertainty, terminal, embedding)
        self._pending: Dict[int, List[Tuple[int, float, bool, Any]]] = {}
        # uncertainty="next": per (tree, node), the sum and count of its children's turn entropies,
        # and the nodes sent before whose value changed since the last extend
        self._child_entropy: Dict[Tuple[int, int], List[float]] = {}
        self._changed: Set[Tuple[int, int]] = set()
        if rule is not None:
            service.request("set-params", rule=rule)

    # -- one run ---------------------------------------------------------------------------------

    def run(self, prompts: Sequence[Union[Prompt, Sequence[int]]], budget: Budget) -> RolloutResult:
        """Grows one tree per prompt until `budget` is spent; returns trees, values, trajectories
        and advantages, and removes the trees from the service."""
        if not prompts:
            raise TraceAllocError("invalid_value", "run needs at least one prompt", field="prompts")
        prompts = [p if isinstance(p, Prompt) else Prompt(tuple(int(x) for x in p)) for p in prompts]
        self._runs += 1
        self._pending = {}  # a run that failed may have left some behind
        self._child_entropy, self._changed = {}, set()
        self._sketching = None
        ids = ["%s%d-%d" % (self.tree_prefix, self._runs, t) for t in range(len(prompts))]
        trees = [RolloutTree(ids[t], tuple(p.tokens), [TreeNode(-1, state=p.state)]) for t, p in enumerate(prompts)]
        root = {"embedding": [0.0] * self.dim}  # a root is in no sibling group: its embedding is never scored
        self.service.add_trees([{"id": tid, "nodes": [root]} for tid in ids])
        try:
            return self._grow(trees, budget) if self.concurrency is None else self._grow_continuous(trees, budget)
        finally:
            self.service.remove_trees(ids)

    def _grow(self, trees: List[RolloutTree], budget: Budget) -> RolloutResult:
        tokens_left = math.inf if budget.tokens is None else budget.tokens
        steps_left = math.inf if budget.steps is None else budget.steps
        per_round = self.rollouts_per_round or 2 * len(trees)
        trajectories: List[Trajectory] = []
        rounds: List[_Round] = []
        plans: List[Plan] = []
        used = {"tokens": 0, "steps": 0}
        finished_tokens: List[int] = []
        root_branches = never_started = 0
        while tokens_left - used["tokens"] > 0 and steps_left - used["steps"] > 0:
            size = self._round_size(per_round, tokens_left - used["tokens"], finished_tokens, steps_left - used["steps"])
            minimum = self.min_per_tree if self.min_per_tree * len(trees) <= size else 0
            plan = self.service.plan(total_budget=size, min_per_tree=minimum, scores=self.learn_state is not None,
                                     trees=[t.id for t in trees], **self.plan_options)
            plans.append(plan)
            current = _Round(plan, [len(t.nodes) for t in trees])
            rounds.append(current)
            starts = self._starts(trees, plan)
            root_branches += sum(1 for r in starts if r.node == 0)
            ended = self._play(trees, starts, tokens_left, steps_left, used)
            self._send(trees, ended)
            for r, traj in ended:
                if traj.generated == 0:  # the budget ran out before it generated anything: no new sample
                    never_started += 1
                    continue
                trajectories.append(traj)
                if traj.finished:
                    finished_tokens.append(traj.generated)
                    current.outcomes.append((r.tree, r.start, float(traj.reward)))  # type: ignore[arg-type]
        values = tuple(self.service.values([t.id for t in trees]))
        if self.learn_state is not None:
            self._learn(trees, rounds)
        advantages = compute_advantages(self.advantage, trajectories, values)
        return RolloutResult(trees=tuple(trees), values=values, trajectories=tuple(trajectories), advantages=advantages,
                             tokens_used=used["tokens"], steps_used=used["steps"], rounds=len(rounds), plans=tuple(plans),
                             root_branches=root_branches, never_started=never_started)

    def _round_size(self, per_round: int, tokens_left: float, finished_tokens: List[int], steps_left: float) -> int:
        """`rollouts_per_round`, shrunk near the end to what the remaining budget is expected to finish."""
        size = per_round
        if finished_tokens and tokens_left < math.inf:
            size = min(size, max(1, math.ceil(tokens_left / (sum(finished_tokens) / len(finished_tokens)))))
        if steps_left < math.inf:
            size = min(size, max(1, int(steps_left)))
        return size

    @staticmethod
    def _starts(trees: List[RolloutTree], plan: Plan) -> List[_Running]:
        """The plan's branches as rollouts, round-robin over trees (a budget cut hits every tree alike)."""
        index = {t.id: i for i, t in enumerate(trees)}
        per_tree: List[List[_Running]] = [[] for _ in trees]
        for tp in plan.trees:
            t = index[tp.id]
            for a in tp.allocations:
                if trees[t].nodes[a.node].done:
                    raise TraceAllocError("service_error", "the plan placed rollouts at terminal node %d" % a.node,
                                          tree=tp.id, node=a.node)
                per_tree[t] += [_Running(t, a.node, a.node) for _ in range(a.branches)]
        out: List[_Running] = []
        for i in range(max((len(x) for x in per_tree), default=0)):
            out += [x[i] for x in per_tree if i < len(x)]
        return out

    # -- generation --------------------------------------------------------------------------------

    def _play(self, trees: List[RolloutTree], running: List[_Running], tokens_left: float, steps_left: float,
              used: Dict[str, int]) -> List[Tuple[_Running, Trajectory]]:
        """Runs the rollouts turn by turn, in batches, until each ends or the budget does."""
        ended: List[Tuple[_Running, Trajectory]] = []
        while running:
            progressed, running = self._advance(trees, running, tokens_left, steps_left, used, ended)
            if not progressed:
                break
        if self.budget_end == "finish":
            running = self._finish(trees, running, used, ended)
        ended += self._cut(trees, running)
        return ended

    def _finish(self, trees: List[RolloutTree], running: List[_Running], used: Dict[str, int],
                ended: List[Tuple[_Running, Trajectory]]) -> List[_Running]:
        """`budget_end="finish"`: the budget is spent; every rollout that has started runs to its
        episode's end, past the budget (its tokens are counted in `used`). Returns the rollouts that
        never generated a token: they are not started."""
        unstarted = [r for r in running if r.generated == 0]
        running = [r for r in running if r.generated > 0]
        while running:
            progressed, running = self._advance(trees, running, math.inf, math.inf, used, ended)
            if not progressed:  # a generator that returns no tokens for every request: nothing can finish
                return unstarted + running
        return unstarted

    def _advance(self, trees: List[RolloutTree], running: List[_Running], tokens_left: float, steps_left: float,
                 used: Dict[str, int], ended: List[Tuple[_Running, Trajectory]]) -> Tuple[bool, List[_Running]]:
        """One batch: a generate call for the first rollouts the budget grants tokens to. Rollouts
        whose episode ended go to `ended`; returns (whether anything was generated, the rollouts still
        running, in order)."""
        grants = self._grants(running, tokens_left - used["tokens"], steps_left - used["steps"])
        if not grants:
            return False, running
        batch = running[:len(grants)]
        requests = [Request(r.tree, r.node, trees[r.tree].prefix(r.node) + tuple(r.tokens), g, len(r.tokens),
                            tree_id=trees[r.tree].id, start=r.start)
                    for r, g in zip(batch, grants)]
        turns = list(self.generate(requests))
        embeddings = self._check(trees, requests, turns)
        still: List[_Running] = []
        for r, req, turn, emb in zip(batch, requests, turns, embeddings):
            n = len(turn.tokens)
            used["tokens"] += n
            r.generated += n
            r.tokens += [int(x) for x in turn.tokens]
            r.logprobs += [float(x) for x in turn.logprobs]
            if emb is not None:
                r.embedding_sum = emb * n if r.embedding_sum is None else r.embedding_sum + emb * n
            r.entropy_sum += float(turn.entropy) * n
            stopped = turn.stopped if turn.stopped is not None else n < req.max_tokens
            if not stopped and len(r.tokens) < self.max_turn_tokens:
                still.append(r)  # cut by its grant: resumes when tokens come free
                continue
            used["steps"] += 1
            if self._finish_turn(trees, r):
                t = trees[r.tree]
                ended.append((r, trajectory(t, r.tree, r.start, r.node, r.generated)))
            else:
                still.append(r)
        return True, still + running[len(grants):]

    @staticmethod
    def _cut(trees: List[RolloutTree], running: List[_Running]) -> List[Tuple[_Running, Trajectory]]:
        """The rollouts still running when the budget ran out, as unfinished trajectories."""
        return [(r, trajectory(trees[r.tree], r.tree, r.start, r.node, r.generated, (tuple(r.tokens), tuple(r.logprobs))))
                for r in running]

    # -- continuous placement ----------------------------------------------------------------------

    def _grow_continuous(self, trees: List[RolloutTree], budget: Budget) -> RolloutResult:
        """No round barrier: `concurrency` rollouts run at once; after every batch in which some
        ended, their new nodes and outcomes go to the service (`extend`) and their slots are
        refilled at once (`place`): each new rollout where the round plan of `concurrency`
        rollouts, made with the evidence now, wants more rollouts than are running
        (docs/ALGORITHM.md, "Continuous placement"). Near the end, no more rollouts run than the
        remaining budget is expected to finish."""
        tokens_left = math.inf if budget.tokens is None else budget.tokens
        steps_left = math.inf if budget.steps is None else budget.steps
        concurrency = int(self.concurrency)  # type: ignore[arg-type]
        minimum = self.min_per_tree if self.min_per_tree * len(trees) <= concurrency else 0
        used = {"tokens": 0, "steps": 0}
        trajectories: List[Trajectory] = []
        finished = 0  # rollouts ended so far (the continuous loop cuts none before the budget's end)
        root_branches = never_started = places = 0

        def refill(count: int, release: List[int]) -> List[_Running]:
            nonlocal root_branches, places
            if count == 0 and not release:
                return []
            places += 1
            index = {t.id: i for i, t in enumerate(trees)}
            out = []
            for p in self.service.place(count, concurrency, release=release, min_per_tree=minimum, **self.plan_options):
                t = index[p.tree]
                if trees[t].nodes[p.node].done:
                    raise TraceAllocError("service_error", "the service placed a rollout at terminal node %d" % p.node,
                                          tree=p.tree, node=p.node)
                out.append(_Running(t, p.node, p.node, ticket=p.ticket))
                root_branches += p.node == 0
            return out

        # The first placement: the whole concurrency under "cut" (the budget's grants bound it); under
        # "finish" no more than the budget is expected to finish at the last run's tokens per rollout,
        # since each started rollout will run to its end (without this a batch that costs more than
        # the budget overspends every run, and what a caller carries over grows without bound).
        first_estimate = self.tokens_per_rollout if self.budget_end == "finish" else None
        running = refill(self._room(concurrency, 0, tokens_left - used["tokens"], first_estimate, steps_left), [])
        while running:
            ended: List[Tuple[_Running, Trajectory]] = []
            progressed, running = self._advance(trees, running, tokens_left, steps_left, used, ended)
            if not progressed:
                break
            if not ended:
                continue
            self._send(trees, ended)
            trajectories += [traj for _, traj in ended]
            finished += len(ended)
            # Tokens per rollout: every token generated so far (the running rollouts' too) per ended
            # rollout. The mean of the ended rollouts alone is biased short (short rollouts end
            # first), which started more rollouts than the budget could finish and cut them.
            room = self._room(concurrency, len(running), tokens_left - used["tokens"], used["tokens"] / finished,
                              steps_left - used["steps"])
            running += refill(room, [r.ticket for r, _ in ended])
        if self.budget_end == "finish":
            done: List[Tuple[_Running, Trajectory]] = []
            running = self._finish(trees, running, used, done)
            self._send(trees, done)
            trajectories += [traj for _, traj in done]
        cut = self._cut(trees, running)
        self._send(trees, cut)  # the whole turns of cut rollouts stay in the trees as open nodes
        for r, traj in cut:
            if traj.generated == 0:
                never_started += 1
            else:
                trajectories.append(traj)
        done_count = sum(1 for t in trajectories if t.finished)
        if done_count:
            self.tokens_per_rollout = used["tokens"] / done_count
        values = tuple(self.service.values([t.id for t in trees]))
        advantages = compute_advantages(self.advantage, trajectories, values)
        return RolloutResult(trees=tuple(trees), values=values, trajectories=tuple(trajectories), advantages=advantages,
                             tokens_used=used["tokens"], steps_used=used["steps"], rounds=places, plans=(),
                             root_branches=root_branches, never_started=never_started)

    @staticmethod
    def _room(concurrency: int, running: int, tokens_left: float, tokens_per_rollout: Optional[float],
              steps_left: float) -> int:
        """New rollouts to start now: up to `concurrency` running, and no more running than the
        remaining budget is expected to finish (what is left ÷ `tokens_per_rollout`, the tokens
        generated so far per ended rollout; no limit before one ended; one step each for an
        environment-step budget)."""
        if tokens_left <= 0 or steps_left <= 0:
            return 0
        cap = concurrency
        if tokens_per_rollout and tokens_left < math.inf:
            cap = min(cap, max(1, math.ceil(tokens_left / tokens_per_rollout)))
        if steps_left < math.inf:
            cap = min(cap, max(1, int(steps_left)))
        return max(0, cap - running)

    def _grants(self, running: List[_Running], tokens_left: float, steps_left: float) -> List[int]:
        """Token grants for the first rollouts of `running`, in order, each its whole remaining
        turn while the budget lasts; a turn needs one environment step when it completes."""
        grants: List[int] = []
        for r in running:
            if tokens_left <= 0 or steps_left <= 0:
                break
            g = int(min(self.max_turn_tokens - len(r.tokens), tokens_left))
            grants.append(g)
            tokens_left -= g
            steps_left -= 1
        return grants

    def _check(self, trees: List[RolloutTree], requests: List[Request], turns: List[Turn]) -> List[Optional[np.ndarray]]:
        """Validates what `generate` returned; the turns' embeddings (projected) as float64 rows,
        or None for each turn when this run's turns are sketched from their tokens."""
        if len(turns) != len(requests):
            raise TraceAllocError("invalid_value", "generate returned %d turns for %d requests" % (len(turns), len(requests)),
                                  field="turns")
        for req, turn in zip(requests, turns):
            where = dict(tree=trees[req.tree].id, node=req.node)
            if not 1 <= len(turn.tokens) <= req.max_tokens:
                raise TraceAllocError("invalid_value", 'tree "%s", node %d, field "tokens": a turn must have 1 to %d tokens '
                                      "(max_tokens), got %d" % (trees[req.tree].id, req.node, req.max_tokens, len(turn.tokens)),
                                      field="tokens", **where)
            if len(turn.logprobs) != len(turn.tokens) or not all(math.isfinite(float(x)) for x in turn.logprobs):
                raise TraceAllocError("invalid_value", 'tree "%s", node %d, field "logprobs": one finite log-prob per token'
                                      % (trees[req.tree].id, req.node), field="logprobs", **where)
            if not (math.isfinite(float(turn.entropy)) and float(turn.entropy) >= 0):
                raise TraceAllocError("invalid_value", 'tree "%s", node %d, field "entropy": must be finite and >= 0, got %r'
                                      % (trees[req.tree].id, req.node, turn.entropy), field="entropy", **where)
        if self.dim == 0:
            return [np.zeros(0) for _ in turns]
        raw = [t.embedding for t in turns]
        for req, e in zip(requests, raw):
            sketched = e is None
            if self._sketching is None:
                self._sketching = sketched
            where = 'tree "%s", node %d, field "embedding": ' % (trees[req.tree].id, req.node)
            if sketched != self._sketching:
                raise TraceAllocError("invalid_value", where + "this run's turns %s an embedding and this one %s: one run "
                                      "uses hidden states or token sketches, not both (siblings would compare one with the "
                                      "other)" % (("leave out", "has one") if self._sketching else ("carry", "has none")),
                                      tree=trees[req.tree].id, node=req.node, field="embedding")
            if not sketched and not self.dim_given:
                raise TraceAllocError("invalid_value", where + "the generator returned an embedding but the driver has no "
                                      "dim: pass dim (the embedding's length, or the projection's output) to use it, or "
                                      "return embedding=None for token sketches", tree=trees[req.tree].id, node=req.node,
                                      field="embedding")
        if self._sketching:
            return [None for _ in turns]
        if self.projection is not None:
            rows = self.projection(_stack(raw))
        else:
            rows = _stack(raw)
        try:
            rows = to_numpy(rows, "embedding").astype(np.float64)
        except (TypeError, ValueError) as err:
            raise TraceAllocError("invalid_value", 'field "embedding": turn embeddings must be numbers (%s)' % err,
                                  field="embedding") from None
        if rows.ndim != 2 or rows.shape != (len(turns), self.dim) or not np.isfinite(rows).all():
            bad = rows.shape if rows.ndim != 2 or rows.shape[1] != self.dim else "non-finite values"
            raise TraceAllocError("invalid_value", 'field "embedding": turn embeddings must be %d finite numbers each '
                                  "(after the projection), got %s" % (self.dim, bad), field="embedding")
        return list(rows)

    def _finish_turn(self, trees: List[RolloutTree], r: _Running) -> bool:
        """A whole turn: the environment answers, the node joins the tree. True when the episode ended."""
        tree = trees[r.tree]
        parent = tree.nodes[r.node]
        answer = self.step(parent.state, tuple(r.tokens))
        if not isinstance(answer, EnvStep):
            raise TraceAllocError("invalid_value", 'tree "%s", node %d: step must return an EnvStep, got %r'
                                  % (tree.id, r.node, type(answer).__name__), tree=tree.id, node=r.node, field="step")
        done = bool(answer.done)
        reward = float(answer.reward) if done else None
        if reward is not None and not math.isfinite(reward):
            raise TraceAllocError("invalid_value", 'tree "%s", node %d, field "reward": must be finite, got %r'
                                  % (tree.id, r.node, answer.reward), tree=tree.id, node=r.node, field="reward")
        n = len(r.tokens)
        node = TreeNode(parent=r.node, tokens=tuple(r.tokens), logprobs=tuple(r.logprobs),
                        observation=tuple(int(x) for x in answer.observation), done=done, reward=reward,
                        state=None if done else answer.state)
        r.node = tree.add(node)
        if r.embedding_sum is None:  # no embedding from the generator: the whole turn's token sketch
            node_embedding = self.sketch(r.tokens)  # type: ignore[misc]
        else:
            node_embedding = r.embedding_sum / n  # the token-weighted mean over the turn's pieces
        turn_entropy = r.entropy_sum / n
        if self.uncertainty == "next":  # the new node's value comes from its children; its parent's changes
            stats = self._child_entropy.setdefault((r.tree, node.parent), [0.0, 0])
            stats[0] += turn_entropy
            stats[1] += 1
            self._changed.add((r.tree, node.parent))
        self._pending.setdefault(r.tree, []).append((node.parent, turn_entropy, done, node_embedding))
        r.tokens, r.logprobs, r.embedding_sum, r.entropy_sum = [], [], None, 0.0
        return done

    # -- the service -----------------------------------------------------------------------------------

    def _send(self, trees: List[RolloutTree], ended: List[Tuple[_Running, Trajectory]]) -> None:
        """The round's new nodes and every finished rollout's outcome in one `extend` request: the
        nodes as binary columns (one row per node, tree by tree in the order they were made, so
        each gets the index its `RolloutTree` gave it), the rollouts backed up through them."""
        tree_ids: List[str] = []
        parent: List[int] = []
        uncertainty: List[float] = []
        terminal: List[bool] = []
        embedding: List[Any] = []
        first: Dict[int, int] = {}  # per tree: its first node made since the last extend
        for t, nodes in sorted(self._pending.items()):
            first[t] = len(trees[t].nodes) - len(nodes)  # the pending nodes are the tree's newest, in order
            for k, (p, u, done, e) in enumerate(nodes):
                tree_ids.append(trees[t].id)
                parent.append(p)
                uncertainty.append(u if self.uncertainty == "turn" else self._next_uncertainty(t, first[t] + k))
                terminal.append(done)
                embedding.append(e)
        # nodes made since the last extend carry their value in their row: only older ones are updated
        updates = [{"tree": trees[t].id, "node": v, "uncertainty": self._next_uncertainty(t, v)}
                   for t, v in sorted(self._changed) if v < first[t]]
        self._pending, self._changed = {}, set()
        rollouts = [{"tree": trees[traj.tree].id, "leaf": traj.leaf, "reward": traj.reward}
                    for _, traj in ended if traj.finished]
        if not tree_ids:  # no new node, so no node gained a child: nothing to update either
            if rollouts:
                self.service.extend(rollouts=rollouts)
            return
        rows = np.stack([np.asarray(e, dtype=np.float64).reshape(-1) for e in embedding]) if self.dim > 0 \
            else np.zeros((len(tree_ids), 0))
        self.service.extend(np.asarray(tree_ids), np.asarray(parent, dtype=np.int64), rows,
                            uncertainty=np.asarray(uncertainty, dtype=np.float64), terminal=np.asarray(terminal, dtype=np.bool_),
                            updates=updates, rollouts=rollouts)

    def _next_uncertainty(self, t: int, v: int) -> float:
        """uncertainty="next": the mean entropy of the turns written from node v of tree t so far (0: none yet)."""
        stats = self._child_entropy.get((t, v))
        return stats[0] / stats[1] if stats else 0.0

    def _learn(self, trees: List[RolloutTree], rounds: List[_Round]) -> None:
        """One α, τ step from every round: gains of the rollouts each round placed, at the nodes
        that existed when it was planned, with that plan's scores (docs/ALGORITHM.md §3)."""
        d_a = d_b = 0.0
        count = 0
        for rnd in rounds:
            for t, tree in enumerate(trees):
                n = rnd.nodes_before[t]
                parent = np.array([tree.nodes[v].parent for v in range(n)], dtype=np.int64)
                rollouts = np.zeros(n)
                reward_sum = np.zeros(n)
                for tt, start, reward in rnd.outcomes:
                    if tt == t:
                        for v in tree.path(start):
                            rollouts[v] += 1
                            reward_sum[v] += reward
                scores = rnd.plan.tree(tree.id).scores or ()
                weight, grad_a, grad_b = np.zeros(n), np.zeros(n), np.zeros(n)
                for s in scores:
                    weight[s.node], grad_a[s.node], grad_b[s.node] = s.weight, s.grad_alpha, s.grad_tau
                g = objective_gradient(parent, weight, grad_a, grad_b, outcome_variance_gains(parent, rollouts, reward_sum))
                d_a, d_b, count = d_a + g.d_a, d_b + g.d_b, count + g.count
        if count > 0 and self.learn_state is not None:
            self.learn_state = ascend(self.learn_state, d_a, d_b)
            self.service.set_params(alpha=self.learn_state.alpha, tau=self.learn_state.tau)


def _stack(rows: List[Any]) -> Any:
    """The batch's embeddings as one matrix, staying a tensor (on its device) when they are tensors."""
    if rows and hasattr(rows[0], "detach") and hasattr(rows[0], "reshape"):
        import torch  # only reached when the caller's embeddings are torch tensors

        return torch.stack([r.reshape(-1) for r in rows])
    try:
        return np.stack([to_numpy(r, "embedding").reshape(-1) for r in rows])
    except (ValueError, TypeError) as err:
        raise TraceAllocError("invalid_value", 'field "embedding": turn embeddings must be vectors of one length (%s)' % err,
                              field="embedding") from None
