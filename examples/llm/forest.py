"""Rollout trees of one training step, one node per agent turn, and the token budget.

A node holds the whole token sequence up to the end of its turn and the environment's answer,
so a new rollout can start at any open node. Every generated token goes through `Grower.run`,
which stops when the step's budget is spent: no sampler can spend more, and each spends all.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import torch

from model import next_token
from task import END, MAX_TURN_TOKENS, VOCAB, Prompt, prompt_tokens, step

LOG_VOCAB = math.log(VOCAB)


@dataclass
class Node:
    tree: int
    parent: int
    seq: list[int]
    span: tuple[int, int]  # this turn's generated tokens inside seq (empty for a root)
    value: int  # the environment's value after the turn
    calls: int  # tool calls made up to and including this turn
    terminal: bool = False
    outcome: float = 0.0
    visits: int = 0
    reward_sum: float = 0.0
    uncertainty: float = 0.0  # mean token entropy over the turn, divided by ln |V|
    embedding: np.ndarray | None = None
    children: list[int] = field(default_factory=list)


class Forest:
    def __init__(self, prompts: list[Prompt]):
        self.prompts = prompts
        self.nodes: list[Node] = []
        self.tree_nodes: list[list[int]] = []
        self.roots: list[int] = []
        for t, p in enumerate(prompts):
            seq = prompt_tokens(p.start, p.target)
            # A root has no siblings, so its embedding never enters a contrast.
            self.roots.append(self._add(Node(t, -1, seq, (1, len(seq)), p.start, 0, embedding=np.zeros(0))))

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
        out = step(self.prompts[p.tree], p.value, p.calls, turn)
        start = len(p.seq)
        node = Node(p.tree, parent, p.seq + turn + out.response, (start, start + len(turn)), out.value,
                    p.calls + (0 if out.done else 1), uncertainty=sum(entropies) / len(entropies) / LOG_VOCAB,
                    embedding=embedding)
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

    def local_index(self, nid: int) -> int:
        return self.tree_nodes[self.nodes[nid].tree].index(nid)

    def open_nodes(self, tree: int) -> list[int]:
        return [v for v in self.tree_nodes[tree] if not self.nodes[v].terminal]

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


@dataclass
class _Active:
    node: int
    turn: list[int] = field(default_factory=list)
    entropies: list[float] = field(default_factory=list)
    hidden: torch.Tensor | None = None  # sum of the decoding hidden states of the turn so far


class Grower:
    """Generates turns with the policy, batched, against one budget of generated tokens."""

    def __init__(self, forest: Forest, model, generator: torch.Generator, budget: int):
        self.forest, self.model, self.generator, self.budget = forest, model, generator, budget
        self.used = 0
        self.started = 0
        self.finished = 0
        self.truncated = 0
        self.generate_s = 0.0

    def remaining(self) -> int:
        return self.budget - self.used

    def run(self, starts: list[int]) -> int:
        """Rollouts from each start node (repeats allowed) to the episode's end, all in one batch;
        when the budget runs out mid-way the rollouts still going are cut (in `starts` order, last
        first). Returns how many rollouts took at least one token."""
        import time
        t0 = time.perf_counter()
        f = self.forest
        active = [_Active(s) for s in starts if not f.nodes[s].terminal]
        began = 0
        first = True
        while active and self.remaining() > 0:
            take = min(len(active), self.remaining())
            self.truncated += len(active) - take
            active = active[:take]
            if first:
                began = take
                first = False
            logits, hidden = next_token(self.model, [f.nodes[a.node].seq + a.turn for a in active])
            logp = torch.log_softmax(logits.double(), dim=-1)
            entropy = -(logp.exp() * logp).sum(dim=-1)
            tokens = torch.multinomial(logp.exp(), 1, generator=self.generator).squeeze(1).tolist()
            self.used += take
            still = []
            for a, tok, h, e in zip(active, tokens, entropy.tolist(), hidden):
                a.turn.append(tok)
                a.entropies.append(h)
                a.hidden = e if a.hidden is None else a.hidden + e
                if tok != END and len(a.turn) < MAX_TURN_TOKENS:
                    still.append(a)
                    continue
                nid = f.add_turn(a.node, a.turn, a.entropies, (a.hidden / len(a.turn)).double().numpy())
                if f.nodes[nid].terminal:
                    self.finished += 1
                else:
                    still.append(_Active(nid))
            active = still
        self.truncated += len(active)
        self.started += began
        self.generate_s += time.perf_counter() - t0
        return began
