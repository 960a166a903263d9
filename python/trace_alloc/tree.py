"""The trainer's side of a rollout tree: what each node's turn said (tokens, log-probs, the
environment's answer), and the leaf trajectories read off it. Values and visits are not kept
here: the service backs outcomes up and `Service.values` reads them back."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, List, Optional, Tuple


@dataclass
class TreeNode:
    """One agent turn and the environment's answer (the root: the prompt, no turn)."""
    parent: int  # -1 for the root
    tokens: Tuple[int, ...] = ()  # the turn's generated tokens
    logprobs: Tuple[float, ...] = ()  # per token, the sampling policy's log-probability
    observation: Tuple[int, ...] = ()  # environment tokens after the turn
    done: bool = False  # the episode ended with this turn (a terminal node)
    reward: Optional[float] = None  # the episode's outcome, on terminal nodes
    state: Any = None  # the environment's state after the turn (dropped once the node is terminal)
    children: List[int] = field(default_factory=list)


@dataclass
class RolloutTree:
    """One prompt's tree; node 0 is the root and node indices match the service's."""
    id: str  # the tree's id in the service
    prompt: Tuple[int, ...]
    nodes: List[TreeNode]

    def path(self, node: int) -> List[int]:
        """Node indices root → node."""
        out = []
        while node >= 0:
            out.append(node)
            node = self.nodes[node].parent
        return out[::-1]

    def prefix(self, node: int) -> Tuple[int, ...]:
        """The prompt, then every turn and observation on the path to `node`: where a new turn from it starts."""
        out = list(self.prompt)
        for v in self.path(node)[1:]:
            out += self.nodes[v].tokens
            out += self.nodes[v].observation
        return tuple(out)

    def add(self, node: TreeNode) -> int:
        index = len(self.nodes)
        self.nodes.append(node)
        self.nodes[node.parent].children.append(index)
        return index


@dataclass(frozen=True)
class Trajectory:
    """One rollout as a training sample: the path from the prompt to where the rollout ended.

    The completion is every turn and observation after the prompt (for an unfinished rollout,
    ended by the budget, followed by the tokens of the turn it was cut in). Per completion token:
    `logprobs` (the policy's, 0.0 on environment tokens), `env_mask` (1 generated, 0 environment)
    and `token_nodes` (the tree node whose turn or observation holds the token, -1 for the tokens
    of a cut turn)."""
    tree: int  # index of the prompt
    leaf: int  # the last whole node of the path: the terminal node, or where an unfinished rollout stood
    start: int  # the node the rollout started from (its plan allocation)
    path: Tuple[int, ...]
    prompt_ids: Tuple[int, ...]
    completion_ids: Tuple[int, ...]
    logprobs: Tuple[float, ...]
    env_mask: Tuple[int, ...]
    token_nodes: Tuple[int, ...]
    reward: Optional[float]  # the episode's outcome; None when unfinished
    generated: int  # tokens this rollout generated (from `start` on, the cut turn included)

    @property
    def finished(self) -> bool:
        return self.reward is not None


def trajectory(tree: RolloutTree, tree_index: int, start: int, leaf: int, generated: int,
               cut: Tuple[Tuple[int, ...], Tuple[float, ...]] = ((), ())) -> Trajectory:
    """The trajectory root → `leaf` of `tree`; `cut`: the tokens and log-probs of a turn the
    budget cut (unfinished rollouts)."""
    ids: List[int] = []
    logprobs: List[float] = []
    mask: List[int] = []
    nodes: List[int] = []
    path = tree.path(leaf)
    for v in path[1:]:
        n = tree.nodes[v]
        ids += n.tokens
        logprobs += n.logprobs
        mask += [1] * len(n.tokens)
        ids += n.observation
        logprobs += [0.0] * len(n.observation)
        mask += [0] * len(n.observation)
        nodes += [v] * (len(n.tokens) + len(n.observation))
    tokens, lps = cut
    ids += tokens
    logprobs += lps
    mask += [1] * len(tokens)
    nodes += [-1] * len(tokens)
    last = tree.nodes[leaf]
    reward = last.reward if last.done and not tokens else None
    return Trajectory(tree=tree_index, leaf=leaf, start=start, path=tuple(path), prompt_ids=tree.prompt,
                      completion_ids=tuple(ids), logprobs=tuple(logprobs), env_mask=tuple(mask),
                      token_nodes=tuple(nodes), reward=reward, generated=generated)
