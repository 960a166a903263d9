"""The recipe task: make the prompt's calls, then find the last ones; a plan before every call.

A prompt is `S 3 MUL 2 ADD 4 T 1 5 ;`: start at 3, make the calls `MUL 2` and `ADD 4` (the
recipe, 2 or 3 calls), then reach 15 with calls of your own (at most 3) and answer it. Every tool
call is preceded by a plan the policy writes: the recipe's calls still to make and the target,
ended by `:` — the turn `ADD 4 T 1 5 : ADD 4 ;` makes the recipe's last call, `T 1 5 : ADD 5 ;`
is the agent's own. The environment answers a call with `= v ;` as in the calculator task
(`task.py`, whose calls, values and parsing this task shares) and reads only the action after the
last `:`; the plan is the policy's reasoning, never checked. The reward is 1 exactly when the
answer equals the current value and the target after the whole recipe. A malformed or refused
turn, a recipe call made out of order, a value above 99 or a fourth call of the agent's own ends
the episode with 0.

Why a fork is cheap here: the recipe's turns are routine (their call is in the prompt and in the
plan), so the episode is decided late, at the agent's own calls and its answer — choices whose
right and wrong text differ in one digit (`ADD 5 ;` against `ADD 6 ;`) — after most of its
generated tokens. A rollout started where the episode was still winnable (after the recipe)
regenerates only the last turns; a fresh chain regenerates the recipe's long plans as well.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from task import (ALL_CALLS, ANSWER, BOS, DIGIT0, END, EQ, MAX_VALUE, PAD, S, T, TOKENS as CALCULATOR_TOKENS,
                  TRANSCRIPT_CALLS, Turn, apply_call, call_tokens, fewest_calls, number, parse_action, quotas, reachable)

# The calculator's 19 symbols (same ids) and the plan's end.
TOKENS = CALCULATOR_TOKENS + [":"]
THEN = len(CALCULATOR_TOKENS)
VOCAB = len(TOKENS)

RECIPE_LENGTHS = (2, 3)
OWN_CALLS = 3  # calls the agent may make after the recipe
# Pre-training transcripts make 1 or 2 calls of their own (a prompt needs 1 or 2).
TRANSCRIPT_OWN_CALLS = 2
# A recipe ends at 12 or below, so the agent's own calls start from a small value, as the
# calculator task's start at 1–9 (the pre-trained policy's arithmetic is a table it learned from
# transcripts): with recipes ending at 20 or below it solved 10–17% at step 0 (tuning seeds
# 300–305), at 99 or below 11–13% (300, 301), at 12 or below 17% and 25% (302, 304).
RECIPE_MAX_END = 12
MAX_CALLS = max(RECIPE_LENGTHS) + OWN_CALLS
# The longest well-formed turn is 13 tokens (`MUL 2 ADD 4 MUL 3 T 2 4 : MUL 2 ;`); a turn with no
# `;` by 16 tokens is cut there and malformed.
MAX_TURN_TOKENS = 16
MAX_EPISODE_TOKENS = (MAX_CALLS + 1) * MAX_TURN_TOKENS
# A prompt (≤ 13 tokens), 7 turns at the cap and 6 answers `= v ;` (≤ 4 tokens each): 149; with room.
MAX_SEQUENCE = 152
MAX_POSITIONS = 160
# Difficulty = the fewest transcript calls from the recipe's end to the target.
DIFFICULTIES = (1, 2)
# The pool's shares of difficulty 1 and 2 (20 and 12 of 32). With half and half, chains learned
# 24.5 points in 50 steps (17.7% → 42.2%, tuning seeds 300–311; difficulty 1 25% → 66%,
# difficulty 2 10% → 19%), short of the 25 wanted.
MIX = (0.625, 0.375)


@dataclass(frozen=True)
class Prompt:
    start: int
    recipe: tuple[tuple[int, int], ...]
    target: int

    @property
    def recipe_end(self) -> int:
        """The value after the recipe's calls."""
        value = self.start
        for op, k in self.recipe:
            value = apply_call(value, op, k)
        return value

    @property
    def difficulty(self) -> int | None:
        """The fewest transcript calls from the recipe's end to the target (None beyond the agent's calls)."""
        return fewest_calls(self.recipe_end, self.target, limit=OWN_CALLS)


def prompt_tokens(prompt: Prompt) -> list[int]:
    return [BOS, S, *number(prompt.start), *(t for op, k in prompt.recipe for t in (op, DIGIT0 + k)), T,
            *number(prompt.target), END]


def plan_tokens(prompt: Prompt, calls_made: int) -> list[int]:
    """The plan before a call: the recipe's calls still to make, the target, `:`."""
    rest = prompt.recipe[calls_made:]
    return [*(t for op, k in rest for t in (op, DIGIT0 + k)), T, *number(prompt.target), THEN]


def step(prompt: Prompt, value: int, calls_so_far: int, turn: list[int]) -> Turn:
    """The environment's answer to one complete turn: the action after the turn's last `:` (the
    whole turn when it has none) is parsed as in the calculator task."""
    dead = Turn(True, 0.0, value, [])
    action = turn[len(turn) - turn[::-1].index(THEN):] if THEN in turn else turn
    parsed = parse_action(action)
    if parsed is None:
        return dead
    head, n, written = parsed
    recipe = len(prompt.recipe)
    if head == ANSWER:
        return Turn(True, 1.0 if calls_so_far >= recipe and n == value == prompt.target else 0.0, value, [])
    if (head, n) not in ALL_CALLS or written != 1 or calls_so_far >= recipe + OWN_CALLS:
        return dead
    if calls_so_far < recipe and (head, n) != prompt.recipe[calls_so_far]:
        return dead
    new = apply_call(value, head, n)
    if new > MAX_VALUE:
        return dead
    return Turn(False, 0.0, new, [EQ, *number(new), END])


def live(prompt: Prompt, value: int, calls: int) -> bool:
    """Whether a state can still end with the reward. Inside the recipe every state is on it (a
    call out of order ends the episode), so it is live when the target is reachable from the
    recipe's end; after it, when the agent's calls left reach the target."""
    recipe = len(prompt.recipe)
    if calls < recipe:
        return reachable(prompt.target, prompt.recipe_end, OWN_CALLS)
    return reachable(prompt.target, value, recipe + OWN_CALLS - calls)


def _random_calls(rng: random.Random, value: int, count: int, limit: int = MAX_VALUE) -> tuple[tuple[tuple[int, int], ...], int] | None:
    """`count` random transcript calls from value and where they end; None above `limit`."""
    calls = tuple(rng.choice(TRANSCRIPT_CALLS) for _ in range(count))
    for op, k in calls:
        value = apply_call(value, op, k)
        if value > limit:
            return None
    return calls, value


def make_prompts(rng: random.Random, count: int, mix: tuple[float, ...] = MIX) -> list[Prompt]:
    """`count` distinct prompts, `mix[d-1]` of them of difficulty d (largest remainder): a random
    start, a random recipe of 2 or 3 transcript calls ending at RECIPE_MAX_END or below, and a
    target that d or d + 1 random transcript calls reach from the recipe's end and no fewer than
    d do; in a seeded random order."""
    prompts: list[Prompt] = []
    seen = set()
    for difficulty, quota in zip(DIFFICULTIES, quotas(count, mix)):
        made = 0
        while made < quota:
            start = rng.randint(1, 9)
            recipe = _random_calls(rng, start, rng.choice(RECIPE_LENGTHS), RECIPE_MAX_END)
            if recipe is None:
                continue
            own = _random_calls(rng, recipe[1], difficulty + rng.randint(0, 1))
            if own is None:
                continue
            prompt = Prompt(start, recipe[0], own[1])
            if prompt in seen or prompt.difficulty != difficulty:
                continue
            seen.add(prompt)
            prompts.append(prompt)
            made += 1
    rng.shuffle(prompts)
    return prompts


def solved_turns(prompt: Prompt, own: tuple[tuple[int, int], ...]) -> list[list[int]]:
    """The agent's turns of an episode that makes the recipe's calls and then `own`, each after
    its plan, and answers the target (solved when `own` leads to it)."""
    calls = prompt.recipe + own
    return [plan_tokens(prompt, i) + call_tokens(op, k) for i, (op, k) in enumerate(calls)] + [
        [ANSWER, *number(prompt.target), END]]


def transcript(rng: random.Random) -> list[int]:
    """A valid solved episode for pre-training: a random recipe (as the prompts'), 1 or 2 random
    calls of the agent's own (the prompt's target is where they end), a plan before every call,
    the answer; the environment's answers in between."""
    while True:
        start = rng.randint(1, 9)
        recipe = _random_calls(rng, start, rng.choice(RECIPE_LENGTHS), RECIPE_MAX_END)
        if recipe is None:
            continue
        own = _random_calls(rng, recipe[1], rng.randint(1, TRANSCRIPT_OWN_CALLS))
        if own is None:
            continue
        prompt = Prompt(start, recipe[0], own[1])
        turns = solved_turns(prompt, own[0])
        body, value = [], start
        for (op, k), turn in zip(prompt.recipe + own[0], turns):
            value = apply_call(value, op, k)
            body += turn + [EQ, *number(value), END]
        return prompt_tokens(prompt) + body + turns[-1]
