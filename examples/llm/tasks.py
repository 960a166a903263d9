"""The tasks a run can train on (`run.py --task NAME`), each as one `Task`.

- `calculator` (`task.py`, the default and the committed run's): reach a target with calculator
  calls of 2–4 tokens; a fork there costs almost a whole chain.
- `recipe` (`recipe.py`): make the prompt's calls, then find the last ones, with a plan before
  every call; decided late, so a fork there costs a fraction of a chain.

Everything else (trees, decoding, samplers, updates, evaluation) reads the task only through
this interface.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any, Callable

import recipe
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

RECIPE = Task(
    name="recipe", tokens=recipe.TOKENS, pad=recipe.PAD, bos=recipe.BOS, end=recipe.END,
    max_turn_tokens=recipe.MAX_TURN_TOKENS, max_episode_tokens=recipe.MAX_EPISODE_TOKENS,
    max_sequence=recipe.MAX_SEQUENCE, max_positions=recipe.MAX_POSITIONS, difficulties=recipe.DIFFICULTIES,
    prompt_tokens=recipe.prompt_tokens, step=recipe.step, live=recipe.live,
    make_prompts=recipe.make_prompts, transcript=recipe.transcript,
    # 3072 generated tokens per step: a chain here is about 3 times the calculator's (35 tokens
    # against 11.7), so a step keeps about as many chains (≈ 90) and TRACE rounds (≈ 6–7).
    settings={"cpu": {"tokens_per_step": 3072},
              "smoke": {"tokens_per_step": 480, "pretrain_steps": 50}},
)

TASKS = {t.name: t for t in (CALCULATOR, RECIPE)}


def get_task(name: str) -> Task:
    if name not in TASKS:
        raise ValueError("unknown task %r (known: %s)" % (name, ", ".join(TASKS)))
    return TASKS[name]
