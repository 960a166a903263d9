"""The tasks a run can train on (`run.py --task NAME`), each as one `Task`.

- `calculator` (`task.py`, the default and the committed run's): reach a target with calculator
  calls of 2–4 tokens; a fork there costs almost a whole chain.

Everything else (trees, decoding, samplers, updates, evaluation) reads the task only through
this interface.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any, Callable

import task as calculator


@dataclass(frozen=True)
class Task:
    name: str
    tokens: list[str]
    pad: int
    bos: int
    end: int  # the token that ends a turn
    max_turn_tokens: int  # a turn with no `end` by this many tokens is cut there (and malformed)
    max_episode_tokens: int  # generated tokens of the longest episode
    max_sequence: int  # the longest token sequence of an episode (the decoder's cache)
    max_positions: int  # the model's position table
    difficulties: tuple[int, ...]
    prompt_tokens: Callable[[Any], list[int]]
    # step(prompt, value, tool calls so far, turn) → the environment's `Turn`
    step: Callable[[Any, int, int, list[int]], Any]
    # live(prompt, value, tool calls so far): whether the state can still end with the reward
    live: Callable[[Any, int, int], bool]
    make_prompts: Callable[[random.Random, int], list]
    transcript: Callable[[random.Random], list[int]]
    # Config fields this task's runs set (before a profile's and `--set`'s), by profile.
    settings: dict[str, dict] = field(default_factory=dict)

    @property
    def vocab(self) -> int:
        return len(self.tokens)


CALCULATOR = Task(
    name="calculator", tokens=calculator.TOKENS, pad=calculator.PAD, bos=calculator.BOS, end=calculator.END,
    max_turn_tokens=calculator.MAX_TURN_TOKENS, max_episode_tokens=calculator.MAX_EPISODE_TOKENS,
    max_sequence=calculator.MAX_SEQUENCE, max_positions=128, difficulties=calculator.DIFFICULTIES,
    prompt_tokens=lambda p: calculator.prompt_tokens(p.start, p.target), step=calculator.step,
    live=lambda p, value, calls: calculator.live(p.target, value, calls),
    make_prompts=calculator.make_prompts, transcript=calculator.transcript,
)

TASKS = {t.name: t for t in (CALCULATOR,)}


def get_task(name: str) -> Task:
    if name not in TASKS:
        raise ValueError("unknown task %r (known: %s)" % (name, ", ".join(TASKS)))
    return TASKS[name]
