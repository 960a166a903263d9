"""Ways to spend one step's token budget on rollout trees.

- `IndependentSampler`: GRPO's independent chains, every rollout from the prompt.
- `UniformSampler`: Tree-GRPO's uniform expansion, a few full chains per prompt, then forks at
  uniformly drawn open nodes, each new branch run to the episode's end.
- `EntropySampler`: TreeRL's entropy-guided branching (ARPO branches on the same signal): a few
  full chains per prompt, then forks at the not-yet-forked open nodes whose next turn had the
  highest token entropy.
- `TraceSampler`: TRACE through `serve --stdio`: each round the forest is sent, the plan asked
  for, and `branches` new rollouts started at each allocated node, each to the episode's end
  (the plan's `depth` is not used: every rollout must reach a verifiable outcome). With `learn`,
  α and τ are ascended after each step from the gains of the rollouts each round placed.
  `embedding="sketch"` sends each turn's token sketch (`trace_alloc.sketch`, what a trainer
  whose generator returns no hidden states sends) instead of its mean hidden state.
  `view="plain"` (the default) sends one node per generated turn, so two chains that wrote the
  same first turns are identical siblings; `view="trie"` sends a node per distinct prefix
  (`allocator_view.PrefixTrie`: a rollout that wrote the same turn from the same node shares its
  child), the different continuations tried from a node, as the allocator's input describes them.
  `uncertainty="turn"` sends a node's own turn's token entropy; `"next"` the mean entropy of the
  turns written from it (the policy's uncertainty after the step, as the input format defines the
  field and the simulations give it). "turn" is the default of `TraceSampler` and `pack`, which
  the committed studies (sketch_study.py, projection_study.py) ran with; run.py passes
  `Config.uncertainty`, "next" by default.

The tree samplers' settings (2 chains, 2 forks, 2 rollouts per fork) are those of `eval/`, set
once and not tuned.
"""

from __future__ import annotations

import random
import time

import numpy as np

from allocator_client import AllocatorClient, learner, token_sketch
from forest import Forest, Grower
from allocator_view import PrefixTrie, next_turn_entropy


def interleave(per_tree: list[list[int]]) -> list[int]:
    """Round-robin over trees, so a budget cut at the end of a batch hits every tree alike."""
    out, i = [], 0
    while any(i < len(x) for x in per_tree):
        out += [x[i] for x in per_tree if i < len(x)]
        i += 1
    return out


class IndependentSampler:
    name = "independent"

    def __init__(self, chains_per_wave: int = 2):
        self.chains = chains_per_wave

    def grow(self, g: Grower, model) -> None:
        f = g.forest
        while g.remaining() > 0:
            if g.run(interleave([[r] * self.chains for r in f.roots])) == 0:
                break


class UniformSampler:
    name = "uniform"

    def __init__(self, rng: random.Random, initial_chains: int = 2, per_iteration: int = 2):
        self.rng, self.initial, self.per_iteration = rng, initial_chains, per_iteration

    def grow(self, g: Grower, model) -> None:
        f = g.forest
        g.run(interleave([[r] * self.initial for r in f.roots]))
        while g.remaining() > 0:
            picks = []
            for t in range(len(f.roots)):
                nodes = f.open_nodes(t)
                picks.append(self.rng.sample(nodes, min(self.per_iteration, len(nodes))))
            if g.run(interleave(picks)) == 0:
                break


class EntropySampler:
    name = "entropy"

    def __init__(self, initial_chains: int = 2, forks: int = 2, per_fork: int = 2):
        self.initial, self.forks, self.per_fork = initial_chains, forks, per_fork

    @staticmethod
    def decision_entropy(f: Forest, v: int) -> float:
        """The entropy of the turns decoded at node v (its children's token entropy, mean over
        them): EPTree forks where the existing chains were uncertain, i.e. before that turn.
        A node with no child yet (a cut rollout's end) has no such turn and ranks last."""
        kids = f.nodes[v].children
        return sum(f.nodes[c].uncertainty for c in kids) / len(kids) if kids else -1.0

    def grow(self, g: Grower, model) -> None:
        f = g.forest
        forked: set[int] = set()
        g.run(interleave([[r] * self.initial for r in f.roots]))
        while g.remaining() > 0:
            picks = []
            for t in range(len(f.roots)):
                candidates = [v for v in f.open_nodes(t) if v not in forked] or f.open_nodes(t)
                # Highest entropy first; ties to the older node, so the order is deterministic.
                candidates.sort(key=lambda v: (-self.decision_entropy(f, v), v))
                picks.append([v for v in candidates[: self.forks] for _ in range(self.per_fork)])
                forked.update(candidates[: self.forks])
            if g.run(interleave(picks)) == 0:
                break


EMBEDDINGS = ("hidden", "sketch")
VIEWS = ("trie", "plain")
UNCERTAINTIES = ("turn", "next")


def pack(f: Forest, dim: int, prefix: str = "p", sketch=None, uncertainty: str = "turn") -> dict:
    """The forest as the columnar arrays of the binary input (one row per node, trees in order).
    With `sketch` (a `TokenSketch` of width `dim`), a node's embedding is its turn's token sketch
    (one batched call over the forest's turns) instead of its mean hidden state. `uncertainty`:
    "turn" sends each node's own turn's mean token entropy (the committed runs), "next" the next
    turns' (`next_turn_entropy`: the uncertainty after the step, as the format defines it)."""
    order = [v for nodes in f.tree_nodes for v in nodes]
    local = {}
    for nodes in f.tree_nodes:
        for i, v in enumerate(nodes):
            local[v] = i
    n = [f.nodes[v] for v in order]
    return {
        "ids": ["%s%d" % (prefix, t) for t in range(len(f.tree_nodes))],
        "tree_offset": np.cumsum([0] + [len(x) for x in f.tree_nodes]).astype(np.int64),
        "parent": np.array([local[x.parent] if x.parent >= 0 else -1 for x in n], dtype=np.int64),
        "reward": np.array([x.reward_sum / x.visits if x.visits else 0.0 for x in n], dtype=np.float64),
        "visits": np.array([x.visits for x in n], dtype=np.int64),
        "uncertainty": np.array([next_turn_entropy(f, v) for v in order] if uncertainty == "next"
                                else [x.uncertainty for x in n], dtype=np.float64),
        "terminal": np.array([x.terminal for x in n], dtype=bool),
        "embedding": (sketch.batch([x.seq[x.span[0]:x.span[1]] for x in n]) if sketch is not None  # a root's turn is empty: 0
                      else np.stack([x.embedding if x.parent >= 0 else np.zeros(dim) for x in n]).astype(np.float32)),
    }


class AlphaTauAdam:
    """SPEC §3 ascent of J = Σ w·y in (ln α, ln τ) with the library's learner (trace_alloc.learn:
    Adam, lr 0.05, α ∈ [1e−3, 1e3], τ ∈ [1e−2, 1e2])."""

    def __init__(self):
        self.learn = learner()
        self.state = self.learn.create_learn_state()

    @property
    def alpha(self) -> float:
        return self.state.alpha

    @property
    def tau(self) -> float:
        return self.state.tau

    def ascend(self, grad: tuple[float, float]) -> None:
        self.state = self.learn.ascend(self.state, grad[0], grad[1])


def outcome_gains(f: Forest, first_new: int, canon: dict | None = None) -> dict[int, float]:
    """y = 4p̂(1−p̂) of the rollouts finished since a round, per node that existed then (≥ 2 rollouts).
    With `canon` (a `PrefixTrie`'s map of each node to its prefix's first node), per prefix: a new
    rollout that rewrote an existing prefix counts at that prefix's node."""
    count: dict[int, int] = {}
    wins: dict[int, float] = {}
    for leaf in range(first_new, len(f.nodes)):
        node = f.nodes[leaf]
        if not node.terminal:
            continue
        v = node.parent
        while v >= 0:
            c = canon[v] if canon is not None else v
            if c < first_new:
                count[c] = count.get(c, 0) + 1
                wins[c] = wins.get(c, 0.0) + node.outcome
            v = f.nodes[v].parent
    return {v: 4 * (wins[v] / c) * (1 - wins[v] / c) for v, c in count.items() if c >= 2}


class TraceSampler:
    def __init__(self, name: str, client: AllocatorClient, rollouts_per_tree: int = 2, learn: bool = False,
                 embedding: str = "hidden", view: str = "plain", uncertainty: str = "turn",
                 contest_gain: float | None = None, tree_floor: float | None = None,
                 fork_keep: float | None = None):
        if embedding not in EMBEDDINGS:
            raise ValueError("embedding must be one of %s, got %r" % (", ".join(EMBEDDINGS), embedding))
        if view not in VIEWS:
            raise ValueError("view must be one of %s, got %r" % (", ".join(VIEWS), view))
        if uncertainty not in UNCERTAINTIES:
            raise ValueError("uncertainty must be one of %s, got %r" % (", ".join(UNCERTAINTIES), uncertainty))
        self.view, self.uncertainty = view, uncertainty
        # None: the rule's own default; a number is sent with every plan as `contestGain`,
        # `treeFloor`, `forkKeep`.
        self.settings = {k: v for k, v in (("contest_gain", contest_gain), ("tree_floor", tree_floor),
                                           ("fork_keep", fork_keep)) if v is not None}
        self.name, self.client, self.per_tree, self.learn = name, client, rollouts_per_tree, learn
        self.sketch = token_sketch() if embedding == "sketch" else None
        self.adam = AlphaTauAdam() if learn else None
        self.allocator_s = 0.0
        self.planned_branches = 0
        self.launched = 0
        self.rule = None
        self.params = None
        self.steps = 0
        self.plans = 0
        self.root_branches = 0  # planned branches that start at a prompt (a fresh chain)
        self.plan_mismatches = 0  # rounds whose branches + unallocated differ from the budget asked for

    def grow(self, g: Grower, model) -> None:
        f = g.forest
        rounds = []
        self.steps += 1
        prefix = "s%d-p" % self.steps
        while g.remaining() > 0:
            t1 = time.perf_counter()
            sent = self.sent(f)
            arrays = pack(sent, self.dim(model), prefix, self.sketch, self.uncertainty)
            self.client.sync_forest(arrays["ids"], arrays["tree_offset"], arrays["parent"], arrays["reward"],
                                       arrays["visits"], arrays["uncertainty"], arrays["terminal"],
                                       arrays["embedding"])
            plan = self.client.plan(total_budget=self.per_tree * len(f.roots), min_per_tree=1, scores=self.learn,
                                    **self.settings)
            t2 = time.perf_counter()
            self.allocator_s += t2 - t1
            self.plans += 1
            self.params = plan["params"]
            self.rule = plan.get("rule", plan["params"].get("rule"))
            total = self.per_tree * len(f.roots)
            placed = sum(a["branches"] for tree in plan["trees"] for a in tree["allocations"])
            if placed + plan.get("unallocated", 0) + sum(t["unallocated"] for t in plan["trees"]) != total:
                self.plan_mismatches += 1
            per_tree = []
            for tree in plan["trees"]:
                t = int(tree["id"][len(prefix):])
                nodes = sent.tree_nodes[t]
                starts = []
                for a in tree["allocations"]:
                    v = nodes[a["node"]]
                    if f.nodes[v].terminal:
                        raise AssertionError("plan allocated to terminal node %d of tree %s" % (a["node"], tree["id"]))
                    starts += [v] * a["branches"]
                    self.planned_branches += a["branches"]
                    if a["node"] == 0:
                        self.root_branches += a["branches"]
                per_tree.append(starts)
            starts = interleave(per_tree)
            self.launched += len(starts)
            if self.learn:
                rounds.append((plan, len(f.nodes), sent.tree_nodes))
            if g.run(starts) == 0:
                break
        if self.learn:
            self._update(f, rounds, prefix)

    def sent(self, f: Forest):
        """The forest as the service sees it: `f` itself, or its prefix trie under `view="trie"`.
        Either way a plan's node is a trainer node (a trie node's id is its prefix's first node)."""
        return PrefixTrie(f) if self.view == "trie" else f

    def dim(self, model) -> int:
        """The embedding width sent: the policy's hidden size, or the sketch's width."""
        return self.sketch.width if self.sketch is not None else model.config.n_embd

    def _update(self, f: Forest, rounds, prefix: str) -> None:
        t0 = time.perf_counter()
        dA = dB = 0.0
        used = 0
        canon = PrefixTrie(f).canon if self.view == "trie" else None
        for plan, first_new, tree_nodes in rounds:
            gains = outcome_gains(f, first_new, canon)
            for tree in plan["trees"]:
                nodes = tree_nodes[int(tree["id"][len(prefix):])]
                for s in tree.get("scores", []):
                    y = gains.get(nodes[s["node"]])
                    if y is None:
                        continue
                    dA += s["weight"] * y * s["gradAlpha"]
                    dB += s["weight"] * y * s["gradTau"]
                    used += 1
        if used:
            self.adam.ascend((dA, dB))
            self.client.set_params(alpha=self.adam.alpha, tau=self.adam.tau)
        self.allocator_s += time.perf_counter() - t0
