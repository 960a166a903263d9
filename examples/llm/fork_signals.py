"""Per-step signals of whether forks pay, measured inside the training loop (`tune.py --signals`).

A rule that learns how much of a step goes to forks, as α and τ are learned, needs a quantity the
trainer can measure each step that says, per task, whether a fork's tokens teach more than a fresh
chain's. This module records the candidates beside every step of a tuning run, for any sampler:

- per tree, the finished fresh chains and finished forks: how many, how many succeeded, their
  generated tokens, and the depth of the nodes the forks started at (`tree_rollouts`);
- under TreeRL's per-leaf credit (`treerl-leaf`, tune.py's `--credit` default; recorded only
  under it), the policy-gradient direction each
  kind of rollout gives: the fresh chains' leaves over their whole path, the forks' leaves over the
  turns the fork wrote, and the fresh leaves in two random halves; their cosines and norms
  (`gradient_signals`, four extra backward passes per step, no parameter changed).

A rollout's start is not stored by the grower; it is the deepest ancestor of its leaf that existed
when its run (one `Grower.run`, one batch) began (`rollouts`): a run starts rollouts only at nodes
that existed then, and a node made during the run was written by the one rollout that passes
through it.
"""

from __future__ import annotations

import random


def rollouts(f) -> list[tuple[int, int, int]]:
    """(start node, leaf, generated tokens) of every finished rollout of forest `f`, whose
    `run_marks` hold the node count at the start of each run, in order."""
    marks = f.__dict__.get("run_marks", [])
    out = []
    for leaf, n in enumerate(f.nodes):
        if not n.terminal:
            continue
        mark = max((m for m in marks if m <= leaf), default=None)
        if mark is None:
            raise ValueError("leaf %d was made before any recorded run" % leaf)
        v, tokens = leaf, 0
        while v >= mark:
            a, b = f.nodes[v].span
            tokens += b - a
            v = f.nodes[v].parent
        out.append((v, leaf, tokens))
    return out


def tree_rollouts(f) -> list[dict]:
    """Per tree with a finished rollout: {"fresh": [n, successes, tokens, start depths],
    "fork": [...]} (a fresh chain starts at the prompt, a fork below it; start depths summed)."""
    per: dict[int, dict] = {}
    for start, leaf, tokens in rollouts(f):
        kind = "fresh" if f.nodes[start].parent < 0 else "fork"
        row = per.setdefault(f.nodes[leaf].tree, {"fresh": [0, 0.0, 0, 0], "fork": [0, 0.0, 0, 0]})[kind]
        row[0] += 1
        row[1] += f.nodes[leaf].outcome
        row[2] += tokens
        row[3] += f.nodes[start].depth
    return [per[t] for t in sorted(per)]


def leaf_weights(f, node_weight: dict[int, float], group: list[tuple[int, int]]) -> dict[int, float]:
    """The credit `group`'s leaves give: each (start, leaf) adds, to every node from the leaf up to
    but not including its start, that node's per-leaf share `node_weight[v] / visits(v)` (under
    TreeRL's per-leaf credit a node's weight is the sum of one such share per finished leaf below)."""
    w: dict[int, float] = {}
    for start, leaf in group:
        v = leaf
        while v != start:
            if v in node_weight:
                w[v] = w.get(v, 0.0) + node_weight[v] / f.nodes[v].visits
            v = f.nodes[v].parent
    return {v: x for v, x in w.items() if x != 0}


def split_rollouts(f) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    """(fresh chains, forks) as (start, leaf) pairs."""
    fresh, forks = [], []
    for start, leaf, _ in rollouts(f):
        (fresh if f.nodes[start].parent < 0 else forks).append((start, leaf))
    return fresh, forks


def gradient_signals(model, f, prompts: int, node_weight: dict[int, float]) -> dict:
    """Cosines and norms of the update directions of the fresh chains, the forks and two random
    halves of the fresh chains (seeded by the forest's size, so a run repeats exactly)."""
    import torch

    from model import weighted_log_prob

    def grad(w):
        if not w:
            return None
        seqs, weights = f.carriers(w)
        loss = -weighted_log_prob(model, seqs, weights) / prompts
        params = [p for p in model.parameters() if p.requires_grad]
        g = torch.autograd.grad(loss, params, allow_unused=True)
        return torch.cat([(x if x is not None else torch.zeros_like(p)).reshape(-1) for x, p in zip(g, params)])

    def cos(a, b):
        if a is None or b is None or float(a.norm()) == 0 or float(b.norm()) == 0:
            return None
        return float(torch.nn.functional.cosine_similarity(a, b, dim=0))

    fresh, forks = split_rollouts(f)
    shuffled = fresh[:]
    random.Random(len(f.nodes)).shuffle(shuffled)
    half = len(shuffled) // 2
    was_training = model.training
    model.train()
    g_fresh, g_fork = grad(leaf_weights(f, node_weight, fresh)), grad(leaf_weights(f, node_weight, forks))
    g_a, g_b = grad(leaf_weights(f, node_weight, shuffled[:half])), grad(leaf_weights(f, node_weight, shuffled[half:]))
    model.train(was_training)
    norm = lambda g: float(g.norm()) if g is not None else 0.0
    return {"g_cos_fork_fresh": cos(g_fork, g_fresh), "g_cos_half": cos(g_a, g_b), "g_norm_fresh": norm(g_fresh),
            "g_norm_fork": norm(g_fork), "g_norm_half_a": norm(g_a), "g_norm_half_b": norm(g_b),
            "n_fresh": len(fresh), "n_fork": len(forks)}


_installed = False


def install() -> None:
    """Hooks the signals into examples/llm's training loop (train.py), once per process."""
    global _installed
    if _installed:
        return
    _installed = True
    import forest as F
    import train as T

    run, metrics, update = F.Grower.run, T.tree_metrics, T.policy_update
    pending: dict = {}

    def marked_run(self, starts):
        self.forest.__dict__.setdefault("run_marks", []).append(len(self.forest.nodes))
        return run(self, starts)

    def update_with_signals(model, opt, forest, prompts, advantage="treerl-leaf", rows="leaves"):
        if advantage == "treerl-leaf":  # leaf_weights' per-leaf shares are this credit's
            pending.update(gradient_signals(model, forest, prompts, T.node_weights(forest, advantage)))
        return update(model, opt, forest, prompts, advantage, rows)

    def metrics_with_signals(forest):
        m = metrics(forest)
        m["fork_signals"] = {"trees": tree_rollouts(forest), **pending}
        pending.clear()
        return m

    F.Grower.run = marked_run
    T.policy_update = update_with_signals
    T.tree_metrics = metrics_with_signals
