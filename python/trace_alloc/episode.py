"""What a trainer hands the tree-rollout driver and gets asked for: prompts, generation requests
and the turns that answer them, environment steps, and the budget."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional, Sequence, Tuple

from ._errors import TraceAllocError


@dataclass(frozen=True)
class Prompt:
    """One prompt: the root of one rollout tree."""
    tokens: Tuple[int, ...]  # the prompt's token ids
    state: Any = None  # the environment's state before the first turn, handed to `step` (never changed by the driver)


@dataclass(frozen=True)
class Request:
    """Continue `prefix` by (part of) one agent turn: at most `max_tokens` new tokens.

    `prefix` is the prompt followed by every turn and observation on the path to `node`, then
    the tokens of the current turn generated so far (`resumed` of them: a turn the budget split
    into pieces is continued where it stopped).

    `tree_id` and `start` say where the plan placed this request's rollout: the tree and the node
    it started from (`node` moves down the tree as the rollout's turns complete; `start` stays).
    Every rollout placed at one node shares the prefix up to it, so `affinity`, the key
    `"<tree_id>/<start>"`, is what a router hashes to send those siblings to one engine, whose
    prefix cache then holds their common prefix (e.g. `zlib.crc32(r.affinity.encode()) % engines`:
    stable in every process, unlike Python's salted `hash()`)."""
    tree: int  # index of the prompt
    node: int  # the tree node the turn continues from
    prefix: Tuple[int, ...]
    max_tokens: int  # >= 1
    resumed: int = 0
    tree_id: str = ""  # the tree's id in the service ("" when the request was made outside the driver)
    start: Optional[int] = None  # the node the rollout was placed at (None: `node`)

    @property
    def affinity(self) -> str:
        """`"<tree_id>/<start>"`: equal for the rollouts one placement started (module docstring of `driver`)."""
        return "%s/%d" % (self.tree_id or self.tree, self.node if self.start is None else self.start)


@dataclass(frozen=True)
class Turn:
    """What `generate` returns for one request.

    `logprobs[i]` is the sampling policy's log-probability of `tokens[i]`; `embedding` a vector
    for the turn (e.g. the mean last-layer hidden state the turn's tokens were decoded from: a
    numpy array, a torch tensor or a list; length the driver's `dim`, or its projection's input
    dimension); `entropy` the turn's uncertainty, finite and >= 0 (e.g. mean token entropy / ln |V|).
    `stopped`: True when the policy ended the turn itself (a stop token), False when generation
    stopped at `max_tokens`; None lets the driver infer it (stopped when fewer than `max_tokens`
    tokens came back), which is wrong for a turn whose stop token is exactly its last allowed
    token, so generators should say."""
    tokens: Sequence[int]
    logprobs: Sequence[float]
    embedding: Any = None
    entropy: float = 0.0
    stopped: Optional[bool] = None


@dataclass(frozen=True)
class EnvStep:
    """The environment's answer to one complete turn."""
    observation: Sequence[int] = ()  # tokens appended after the turn (tool output); not generated, not counted
    done: bool = False  # the episode ended with this turn
    reward: float = 0.0  # the episode's outcome when done (finite); ignored otherwise
    state: Any = None  # the environment's state after the turn, handed to `step` for the next turn from here


@dataclass(frozen=True)
class Budget:
    """What one `run` may spend: generated tokens, environment steps (turns), or both (whichever
    ends first). Prompt and observation tokens are not generated and cost nothing."""
    tokens: Optional[int] = None
    steps: Optional[int] = None

    def __post_init__(self) -> None:
        if self.tokens is None and self.steps is None:
            raise TraceAllocError("invalid_options", "a budget needs tokens or steps (or both)", field="budget")
        for name in ("tokens", "steps"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
                raise TraceAllocError("invalid_options", 'budget field "%s": must be an integer >= 0, got %r'
                                      % (name, value), field=name)
