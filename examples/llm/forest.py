"""Rollout trees of one training step, one node per agent turn, and the token budget.

A node holds the whole token sequence up to the end of its turn and the environment's answer,
so a new rollout can start at any open node. Every generated token goes through `Grower.run`,
which stops when the step's budget is spent: no sampler can spend more, and each spends all.
"""

from __future__ import annotations

import math
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np
import torch

from decode import Decoder
from tasks import CALCULATOR, Task

# The published credits' formulas live once, in the package (python/trace_alloc/advantages.py).
_PACKAGE = Path(__file__).resolve().parents[2] / "python"
if (_PACKAGE / "trace_alloc").is_dir() and str(_PACKAGE) not in sys.path:
    sys.path.insert(0, str(_PACKAGE))
from trace_alloc import TreeValues  # noqa: E402
from trace_alloc.advantages import sample_standardized, treerl_branch_advantages, treerl_leaf_advantages  # noqa: E402


@dataclass
class Node:
    tree: int
    parent: int
    seq: list[int]
    span: tuple[int, int]  # this turn's generated tokens inside seq (empty for a root)
    value: int  # the environment's value after the turn
    calls: int  # tool calls made up to and including this turn
    depth: int  # agent turns from the prompt (0 for a root)
    terminal: bool = False
    outcome: float = 0.0
    visits: int = 0
    reward_sum: float = 0.0
    uncertainty: float = 0.0  # mean token entropy over the turn, divided by ln |V|
    embedding: np.ndarray | None = None  # (hidden,) float64; empty for a root
    children: list[int] = field(default_factory=list)


class Forest:
    def __init__(self, prompts: list, task: Task = CALCULATOR):
        self.prompts = prompts
        self.task = task
        self.log_vocab = math.log(task.vocab)
        self.nodes: list[Node] = []
        self.tree_nodes: list[list[int]] = []
        self.roots: list[int] = []
        self.update_rows = ""  # the rows the policy update forwarded: "leaves" or "trees" (train.policy_update)
        for t, p in enumerate(prompts):
            seq = task.prompt_tokens(p)
            # A root has no siblings, so its embedding never enters a contrast.
            self.roots.append(self._add(Node(t, -1, seq, (len(seq), len(seq)), p.start, 0, 0, embedding=np.zeros(0))))

    def _add(self, node: Node) -> int:
        nid = len(self.nodes)
        self.nodes.append(node)
        if node.parent < 0:
            self.tree_nodes.append([])
        else:
            self.nodes[node.parent].children.append(nid)
        self.tree_nodes[node.tree].append(nid)
        return nid

    def add_turn(self, parent: int, turn: list[int], entropies: list[float], embedding: np.ndarray) -> int:
        p = self.nodes[parent]
        out = self.task.step(self.prompts[p.tree], p.value, p.calls, turn)
        start = len(p.seq)
        node = Node(p.tree, parent, p.seq + turn + out.response, (start, start + len(turn)), out.value,
                    p.calls + (0 if out.done else 1), p.depth + 1,
                    uncertainty=sum(entropies) / len(entropies) / self.log_vocab, embedding=embedding)
        nid = self._add(node)
        if out.done:
            node.terminal = True
            node.outcome = out.reward
            v = nid
            while v >= 0:
                self.nodes[v].visits += 1
                self.nodes[v].reward_sum += out.reward
                v = self.nodes[v].parent
        return nid

    def value(self, nid: int) -> float:
        n = self.nodes[nid]
        return n.reward_sum / n.visits if n.visits else math.nan

    def open_nodes(self, tree: int) -> list[int]:
        return [v for v in self.tree_nodes[tree] if not self.nodes[v].terminal]

    def lost(self, nid: int) -> bool:
        """Whether no continuation of this node can still earn the reward."""
        n = self.nodes[nid]
        if n.terminal:
            return n.outcome == 0
        return not self.task.live(self.prompts[n.tree], n.value, n.calls)

    def advantages(self) -> dict[int, float]:
        """TreeRL: A(n) = ((V(n) − V(parent)) + (V(n) − V(root))) / √visits(n), nodes with outcomes."""
        out = {}
        for nid, n in enumerate(self.nodes):
            if n.parent < 0 or n.visits == 0:
                continue
            v = self.value(nid)
            a = (v - self.value(n.parent) + v - self.value(self.roots[n.tree])) / math.sqrt(n.visits)
            if a != 0:
                out[nid] = a
        return out

    def grpo_advantages(self) -> dict[int, float]:
        """GRPO on a tree: each finished rollout's advantage is its reward minus the mean of its
        tree's finished rollouts, on every turn of its path, averaged over the tree's rollouts. A
        node's weight is the sum over the rollouts through it: (Σ r − n·V(root)) / N(root)."""
        out = {}
        for nid, n in enumerate(self.nodes):
            if n.parent < 0 or n.visits == 0:
                continue
            root = self.nodes[self.roots[n.tree]]
            a = (n.reward_sum - n.visits * self.value(self.roots[n.tree])) / root.visits
            if a != 0:
                out[nid] = a
        return out

    # The published credits. Both papers train on every finished leaf: the loss is the sum, over
    # the tree's finished rollouts, of the advantage on every turn of the rollout's path, and here
    # it is averaged over the tree's rollouts (each prompt weighs the same, as in the reference
    # gradient of gradient_study.py and in `grpo_advantages`). A turn shared by L leaves appears in
    # L of the sums, so its weight is the sum of its L per-leaf values; the gradient is then the
    # per-leaf loss's exactly, computed on one carrier per subtree (`carriers`).

    def treerl_leaf_advantages(self) -> dict[int, float]:
        """TreeRL as published (Hou et al. 2025): on every finished leaf through node n, n's turn
        carries A(n) = (GA(n) + LA(n)) / √L(n), GA = V(n) − V(root), LA = V(n) − V(parent
        segment), L(n) the finished leaves below n (its visits). Weight of n: L(n)·A(n) =
        √L(n)·(GA + LA), over the tree's finished leaves."""
        return self._treerl_leaf_weights(treerl_leaf_advantages)

    def _treerl_leaf_weights(self, per_node: Callable[[TreeValues], np.ndarray]) -> dict[int, float]:
        """Each node's weight L(n)·A(n) / L(root) under a per-node TreeRL credit of the package."""
        out = {}
        for tree, nodes in enumerate(self.tree_nodes):
            local = {v: i for i, v in enumerate(nodes)}
            visits = np.array([self.nodes[v].visits for v in nodes])
            values = TreeValues(str(tree), np.array([local.get(self.nodes[v].parent, -1) for v in nodes]),
                                np.array([self.nodes[v].reward_sum for v in nodes]) / np.maximum(visits, 1), visits,
                                np.zeros(len(nodes)), np.array([self.nodes[v].terminal for v in nodes]))
            for nid, a, n_leaves in zip(nodes, per_node(values), visits):
                if a != 0:
                    out[nid] = float(n_leaves * a / visits[0])
        return out

    def treerl_branch_advantages(self) -> dict[int, float]:
        """TreeRL's per-leaf credit (`treerl_leaf_advantages`) with every V the branch mean
        (`trace_alloc.advantages.branch_values`) instead of the mean over the finished leaves:
        a fork placed below one branch no longer pulls its ancestors' values, the root's
        included, toward that branch.
        L(n), the √L weight and the parent segments are TreeRL's. On independent chains it is
        the published credit exactly."""
        return self._treerl_leaf_weights(treerl_branch_advantages)

    def tree_grpo_leaf_advantages(self) -> dict[int, float]:
        """Tree-GRPO as published (Ji et al. 2025): each finished leaf gets A = A_intra + A_inter,
        (R − mean)/(sample std + 1e-6) over the leaves under its first turn (a rollout started at
        the prompt is a new Tree-GRPO tree; a group of one gives 0) and over the prompt's leaves;
        every turn of its path carries A. Weight of a node: the sum of A over the finished leaves
        below it, over the tree's finished leaves."""
        leaf_adv: dict[int, float] = {}
        for tree, nodes in enumerate(self.tree_nodes):
            leaves = [v for v in nodes if self.nodes[v].terminal]
            groups: dict[int, list[int]] = {}
            for leaf in leaves:
                first = leaf
                while self.nodes[self.nodes[first].parent].parent >= 0:
                    first = self.nodes[first].parent
                groups.setdefault(first, []).append(leaf)
            for members in [leaves, *groups.values()]:
                for leaf, a in zip(members, sample_standardized([self.nodes[v].outcome for v in members])):
                    leaf_adv[leaf] = leaf_adv.get(leaf, 0.0) + a
        out: dict[int, float] = {}
        for leaf, a in leaf_adv.items():
            root = self.nodes[self.roots[self.nodes[leaf].tree]]
            v = leaf
            while self.nodes[v].parent >= 0:
                out[v] = out.get(v, 0.0) + a / root.visits
                v = self.nodes[v].parent
        return {v: w for v, w in out.items() if w != 0}

    def carriers(self, weights: dict[int, float]) -> tuple[list[list[int]], list[list[float]]]:
        """Sequences that hold every weighted node's turn, and per-token weights on them.

        A node's sequence is a prefix of each of its descendants', so the log-probabilities of
        all its ancestors' turns come with one forward pass over a finished leaf: each weighted
        node is put on the first finished leaf below it (every node with an outcome has one),
        and only leaves that carry a node are returned."""
        owner: dict[int, int] = {}
        for leaf, n in enumerate(self.nodes):
            if not n.terminal:
                continue
            v = leaf
            while v >= 0 and v not in owner:
                if v in weights:
                    owner[v] = leaf
                v = self.nodes[v].parent
        per_leaf: dict[int, list[float]] = {}
        for v, leaf in owner.items():
            row = per_leaf.setdefault(leaf, [0.0] * len(self.nodes[leaf].seq))
            a, b = self.nodes[v].span
            for j in range(a, b):
                row[j] = weights[v]
        leaves = sorted(per_leaf)
        return [self.nodes[leaf].seq for leaf in leaves], [per_leaf[leaf] for leaf in leaves]

    def _with_ancestors(self, nodes) -> set[int]:
        """`nodes` and every ancestor of each."""
        keep: set[int] = set()
        for v in nodes:
            while v >= 0 and v not in keep:
                keep.add(v)
                v = self.nodes[v].parent
        return keep

    def packed_lengths(self, weights: dict[int, float]) -> list[int]:
        """The token count of each of `packed`'s rows, without building them."""
        lengths: dict[int, int] = {}
        for v in self._with_ancestors(weights):
            n = self.nodes[v]
            lengths[n.tree] = lengths.get(n.tree, 0) + len(n.seq) - (len(self.nodes[n.parent].seq) if n.parent >= 0 else 0)
        return [lengths[t] for t in sorted(lengths)]

    def packed(self, weights: dict[int, float]) -> list[PackedTree]:
        """Every tree that holds a weighted node as one row in which each token appears once.

        A carrier repeats its whole prefix, so a tree with many forks is forwarded many times over
        (on the recipe task entropy forking's carriers pad to 4.4 times the tree's distinct tokens).
        Here the row holds the weighted nodes and their ancestors, each node's own tokens (the
        prompt for a root; the turn and the environment's answer otherwise) after its parent's,
        at their positions in the node's sequence; a token attends to its own node's earlier
        tokens and to its ancestors' (`PackedTree.visible`), so each token's logits are those of
        its own sequence. Nodes are in index order, and a parent's index is below its child's."""
        keep = self._with_ancestors(weights)
        rows = []
        for nodes in self.tree_nodes:
            mine = [v for v in nodes if v in keep]
            if not mine:
                continue
            slot = {v: i for i, v in enumerate(mine)}
            ancestors = np.zeros((len(mine), len(mine)), dtype=bool)  # [i, j]: node j is node i or above it
            tokens, positions, previous, weight, owner = [], [], [], [], []
            last: dict[int, int] = {}  # node → packed index of its last token
            for i, v in enumerate(mine):
                n = self.nodes[v]
                if n.parent >= 0:
                    ancestors[i] = ancestors[slot[n.parent]]
                ancestors[i, i] = True
                start = len(self.nodes[n.parent].seq) if n.parent >= 0 else 0
                a, b = n.span
                w = weights.get(v, 0.0)
                for j in range(start, len(n.seq)):
                    previous.append(len(tokens) - 1 if j > start else last.get(n.parent, -1))
                    tokens.append(n.seq[j])
                    positions.append(j)
                    weight.append(w if a <= j < b else 0.0)
                    owner.append(i)
                last[v] = len(tokens) - 1
            node_of = np.array(owner)
            # An ancestor's tokens all come before a node's, so "not after it" only bites within a node.
            visible = ancestors[node_of[:, None], node_of[None, :]] & np.tri(len(tokens), dtype=bool)
            rows.append(PackedTree(tokens, positions, previous, weight, visible))
        return rows


@dataclass
class PackedTree:
    """One tree's tokens for the policy update, each once (`Forest.packed`). L tokens:"""
    tokens: list[int]  # (L,) token ids, a node's tokens after its parent's
    positions: list[int]  # (L,) each token's position in its own sequence
    previous: list[int]  # (L,) the packed index of the token before it in its sequence, −1 for the first
    weights: list[float]  # (L,) the weight of log π(token | its sequence before it)
    visible: np.ndarray  # (L, L) bool: [i, j] token i attends to token j


# Uniform random numbers for the next token of each rollout: (rollout index in the run, tokens it
# has generated so far) per active rollout → a tensor of uniforms, one per rollout.
Uniforms = Callable[[list[int], list[int]], torch.Tensor]


def stream_uniforms(generator: torch.Generator) -> Uniforms:
    """Fresh uniforms from a seeded generator (training)."""
    return lambda rows, tokens: torch.rand(len(rows), generator=generator, dtype=torch.float64)


def fixed_uniforms(table: torch.Tensor) -> Uniforms:
    """The same uniform for the same (episode, token) every time (evaluation: common random
    numbers, so two policies that agree on a prefix sample the same next token)."""
    return lambda rows, tokens: table[torch.tensor(rows), torch.tensor(tokens)]


def sample(logits: torch.Tensor, u: torch.Tensor) -> tuple[list[int], list[float]]:
    """Inverse-CDF sampling of one token per row from softmax(logits) at the uniforms `u`;
    returns the tokens and each row's entropy (nats)."""
    logp = torch.log_softmax(logits.double().cpu(), dim=-1)
    p = logp.exp()
    entropy = -(p * logp).sum(dim=-1)
    cdf = p.cumsum(dim=-1)
    tokens = torch.searchsorted(cdf, u[:, None].double()).squeeze(1).clamp(max=logits.shape[1] - 1)
    return tokens.tolist(), entropy.tolist()


@dataclass
class _Active:
    index: int  # the rollout's place in the `starts` of its run
    node: int
    fork: bool  # started below a prompt (a fork), not at it (a fresh chain)
    tokens: int = 0  # generated so far by this rollout
    turn: list[int] = field(default_factory=list)
    entropies: list[float] = field(default_factory=list)


class Grower:
    """Generates turns with the policy, batched, against one budget of generated tokens.
    With `embed` False (evaluation) nodes get no embedding."""

    def __init__(self, forest: Forest, model, uniforms: Uniforms, budget: int, embed: bool = True,
                 prefix_cache: bool = False):
        self.forest, self.model, self.uniforms, self.budget, self.embed = forest, model, uniforms, budget, embed
        # With `prefix_cache`, a rollout copies its start node's keys and values (a prompt's too)
        # from a finished rollout that passed through that node instead of computing them again
        # (a generator's prefix caching); `cached_prefix_tokens` counts the tokens copied. Valid
        # while the policy is unchanged: a Grower serves one step.
        self.prefix_cache = prefix_cache
        self._held: dict[int, tuple[torch.Tensor, torch.Tensor]] = {}  # node → a finished row's keys and values
        self.cached_prefix_tokens = 0
        self.used = 0
        self.started = 0
        self.finished = 0
        self.truncated = 0
        self.runs = 0
        self.generate_s = 0.0
        # Generated tokens of the rollouts that reached the episode's end (cut ones left out), for
        # fresh chains and for forks: what a fork costs against a chain.
        self.chain_rollouts = self.chain_tokens = self.fork_rollouts = self.fork_tokens = 0

    def remaining(self) -> int:
        return self.budget - self.used

    def run(self, starts: list[int]) -> int:
        """Rollouts from each start node (repeats allowed) to the episode's end, all in one batch;
        when the budget runs out mid-way the rollouts still going are cut (in `starts` order, last
        first; a cut rollout's partial turn is dropped). Returns how many took at least one token."""
        t0 = time.perf_counter()
        f = self.forest
        active = [_Active(i, s, f.nodes[s].parent >= 0) for i, s in enumerate(starts) if not f.nodes[s].terminal]
        if not active or self.remaining() <= 0:
            self.truncated += len(active)
            return 0
        self.runs += 1
        cached = None
        if self.prefix_cache:
            cached = []
            for a in active:
                kv, n = self._held.get(a.node), len(f.nodes[a.node].seq) - 1
                cached.append((kv[0][:, :, :n], kv[1][:, :, :n]) if kv is not None else None)
                self.cached_prefix_tokens += n if kv is not None else 0
        decoder = Decoder(self.model, [f.nodes[a.node].seq for a in active], f.task.max_sequence, cached)
        end, cap = f.task.end, f.task.max_turn_tokens
        # Per row, the sum of the hidden states the current turn's tokens were decoded from.
        turn_hidden = torch.zeros_like(decoder.hidden) if self.embed else None
        began = min(len(active), self.remaining())
        empty = np.zeros(0)
        while active:
            take = min(len(active), self.remaining())
            self.truncated += len(active) - take
            if take == 0:
                break
            if take < len(active):
                decoder.keep(list(range(take)))
                active = active[:take]
                turn_hidden = turn_hidden[:take] if self.embed else None
            tokens, entropies = sample(decoder.logits, self.uniforms([a.index for a in active], [a.tokens for a in active]))
            ended = []  # rows whose turn ended and whose rollout goes on
            if self.embed:
                turn_hidden = turn_hidden + decoder.hidden
                done_rows = [r for r, (a, tok) in enumerate(zip(active, tokens)) if tok == end or len(a.turn) + 1 == cap]
                means = (turn_hidden[done_rows].double().cpu().numpy() if done_rows else None)
                mean_of = {r: i for i, r in enumerate(done_rows)}
            self.used += take
            chunks, still = [], []
            for row, (a, tok, e) in enumerate(zip(active, tokens, entropies)):
                a.turn.append(tok)
                a.tokens += 1
                a.entropies.append(e)
                chunk = [tok]
                if tok == end or len(a.turn) == cap:
                    embedding = means[mean_of[row]] / len(a.turn) if self.embed else empty
                    nid = f.add_turn(a.node, a.turn, a.entropies, embedding)
                    if f.nodes[nid].terminal:
                        self.finished += 1
                        if self.prefix_cache:
                            self._hold(decoder, row, f.nodes[nid].parent)
                        if a.fork:
                            self.fork_rollouts += 1
                            self.fork_tokens += a.tokens
                        else:
                            self.chain_rollouts += 1
                            self.chain_tokens += a.tokens
                        chunks.append([])  # dropped below
                        continue
                    chunk += f.nodes[nid].seq[f.nodes[nid].span[1]:]  # the environment's answer
                    a.node, a.turn, a.entropies = nid, [], []
                    ended.append(len(still))
                chunks.append(chunk)
                still.append(row)
            if not still:
                break
            if len(still) < len(active):
                active = [active[r] for r in still]
                decoder.keep(still)
                chunks = [chunks[r] for r in still]
                turn_hidden = turn_hidden[still] if self.embed else None
            if self.embed and ended:
                turn_hidden[ended] = 0.0
            decoder.feed(chunks)
        self.started += began
        self.generate_s += time.perf_counter() - t0
        return began

    def _hold(self, decoder: Decoder, row: int, node: int) -> None:
        """Keeps `row`'s keys and values for `node` and its ancestors that have none yet (a row
        holds every token of its rollout's open nodes: an environment's answer is fed with the
        next turn's first token)."""
        path = []
        while node >= 0 and node not in self._held:
            path.append(node)
            node = self.forest.nodes[node].parent
        if path:
            kv = decoder.row_cache(row)
            for v in path:
                self._held[v] = kv
