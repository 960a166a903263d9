"""What the TRACE rows send the allocator of a training step's forest, besides its rewards: the
tree's shape (`PrefixTrie`, one node per distinct prefix) and each node's uncertainty
(`next_turn_entropy`, the uncertainty after the step).

The trainer's forest (`forest.Forest`) keeps one node per generated turn, so two rollouts that
wrote the same turn from the same node are two children with identical text, embeddings and
entropies. The allocator's input defines a node's children as the different continuations tried
from it; `PrefixTrie` merges identical prefixes into one node, so siblings differ in what they
generated and a fork sits where rollouts actually diverged. A node's `uncertainty` in the
trainer's forest is its own turn's mean token entropy; the input format's is how unsettled the
policy is after the step, which `next_turn_entropy` reads off the turns written from the node.
Pure Python: both read only the nodes' fields (parent, children, seq, span, terminal, outcome,
uncertainty, embedding).
"""

from __future__ import annotations


class _Merged:
    """One distinct prefix of a tree: every trainer node with that token sequence (see `PrefixTrie`)."""

    def __init__(self, first, parent):
        self.parent, self.children = parent, []
        self.terminal, self.span, self.seq = first.terminal, first.span, first.seq
        self.uncertainty, self.embedding = first.uncertainty, first.embedding
        self.visits, self.reward_sum = 0, 0.0


class PrefixTrie:
    """The forest with identical prefixes merged: a node per distinct token sequence of a tree (the
    prompt, the turns and the environment's answers), so two rollouts that generated the same turn
    from the same state share its node, as in a trie, and siblings differ in what they generated.
    Ids are the trainer ids of each prefix's first node (a plan's node is a real node of the forest:
    a rollout started there starts from that prefix). Visits and rewards add up over the merged
    nodes; a turn's entropy and embedding are its first copy's (the same tokens from the same
    prefix under the same policy: the same distribution)."""

    def __init__(self, forest):
        self.roots = list(forest.roots)
        self.nodes: dict = {}
        self.tree_nodes = []
        self.canon: dict = {}
        for t, ids in enumerate(forest.tree_nodes):
            keys: dict = {}
            order = []
            for v in ids:  # creation order: a parent before its children
                x = forest.nodes[v]
                key = tuple(x.seq)
                c = keys.get(key)
                if c is None:
                    c = keys[key] = v
                    parent = self.canon[x.parent] if x.parent >= 0 else -1
                    self.nodes[v] = _Merged(x, parent)
                    if parent >= 0:
                        self.nodes[parent].children.append(v)
                    order.append(v)
                self.canon[v] = c
                if x.terminal:  # a finished rollout's outcome, backed up once along the merged path
                    u = c
                    while u >= 0:
                        self.nodes[u].visits += 1
                        self.nodes[u].reward_sum += x.outcome
                        u = self.nodes[u].parent
            self.tree_nodes.append(order)


def next_turn_entropy(f, v: int) -> float:
    """The policy's uncertainty after node v, as the input format defines `uncertainty`: the mean
    token entropy (over ln |V|) of the turns written from v, i.e. of its children's turns; 0 at a
    terminal node and at one no rollout has continued yet (`f` a `forest.Forest` or a `PrefixTrie`)."""
    n = f.nodes[v]
    if n.terminal or not n.children:
        return 0.0
    return sum(f.nodes[c].uncertainty for c in n.children) / len(n.children)
