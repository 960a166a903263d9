"""The tool task: reach a target number with calculator calls, then answer it.

A prompt is `S 3 T 2 4 ;` (start at 3, reach 24). Each agent turn is one call: `ADD k ;` or
`MUL k ;` (k one digit, ADD 1-9, MUL 2-9), which the environment answers with `= v ;` (the new
value), or the final `ANSWER n ;`. The reward is 1 exactly when the answer equals the current
value and the target; a malformed or refused turn, a value above 99, or a fifth tool call ends
the episode with 0.

The turns that matter differ by one digit (`MUL 2 ;` vs `MUL 3 ;`, `ADD 2 ;` vs `ADD 3 ;`):
near-identical text, different outcomes. Whether a state can still reach the target (`Liveness`)
says at which turn a failed episode was lost: on large targets a wrong first multiplication
overshoots for good (decided early), on small ones the first calls are free and the last call
before the answer decides (decided mid-episode).
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from functools import lru_cache

TOKENS = ["<pad>", "<bos>", "S", "T", "ADD", "MUL", "ANSWER", "=", ";"] + [str(d) for d in range(10)]
PAD, BOS, S, T, ADD, MUL, ANSWER, EQ, END = range(9)
DIGIT0 = 9
VOCAB = len(TOKENS)

MAX_TOOL_CALLS = 4
MAX_TURN_TOKENS = 4  # `ANSWER d d ;`
MAX_EPISODE_TOKENS = (MAX_TOOL_CALLS + 1) * MAX_TURN_TOKENS  # generated tokens of the longest episode
# The longest sequence: a prompt (≤ 7 tokens), 5 turns and 4 answers `= v ;` (≤ 4 tokens each), 43; with room.
MAX_SEQUENCE = 48
MAX_VALUE = 99
# The calls transcripts are made of (the model may still write any digit).
TRANSCRIPT_CALLS = [(ADD, 1), (ADD, 2), (ADD, 3), (MUL, 2), (MUL, 3)]
# Every call the environment accepts (`ADD 0`, `MUL 0` and `MUL 1` change nothing or erase the
# value and are refused): no call lowers the value, so an overshoot is final.
ALL_CALLS = [(ADD, k) for k in range(1, 10)] + [(MUL, k) for k in range(2, 10)]
# Difficulty = the fewest transcript calls that reach the target.
DIFFICULTIES = (1, 2, 3)


class Tokenizer:
    """Word-level tokenizer over a task's symbols (this task's 19 by default; numbers are written
    digit by digit, and the digits keep their ids in every task)."""

    def __init__(self, tokens: list[str] = TOKENS):
        self.tokens = tokens

    def encode(self, text: str) -> list[int]:
        ids = []
        for word in text.split():
            if word.isdigit():
                ids.extend(DIGIT0 + int(c) for c in word)
            else:
                ids.append(self.tokens.index(word))
        return ids

    def decode(self, ids: list[int]) -> str:
        out: list[str] = []
        for i in ids:
            word = self.tokens[i]
            if word.isdigit() and out and out[-1].isdigit():
                out[-1] += word
            else:
                out.append(word)
        return " ".join(out)


def number(n: int) -> list[int]:
    return [DIGIT0 + int(c) for c in str(n)]


def prompt_tokens(start: int, target: int) -> list[int]:
    return [BOS, S, *number(start), T, *number(target), END]


def apply_call(value: int, op: int, k: int) -> int:
    return value + k if op == ADD else value * k


@dataclass(frozen=True)
class Prompt:
    start: int
    target: int

    @property
    def difficulty(self) -> int | None:
        """The fewest transcript calls from start to target (None beyond the call limit)."""
        return fewest_calls(self.start, self.target)


@dataclass
class Turn:
    """The outcome of one agent turn."""
    done: bool
    reward: float
    value: int
    response: list[int]  # environment tokens appended after the turn (empty when done)


def parse_action(action: list[int]) -> tuple[int, int, int] | None:
    """`HEAD n ;` as (head, n, digits written), or None when malformed (no `;` at the end, no
    number, a leading zero); whether the head and n make an accepted call is the caller's check."""
    if len(action) < 2 or action[-1] != END:
        return None
    head, digits = action[0], action[1:-1]
    if not digits or any(d < DIGIT0 for d in digits) or (len(digits) > 1 and digits[0] == DIGIT0):
        return None
    return head, int("".join(str(d - DIGIT0) for d in digits)), len(digits)


def step(prompt: Prompt, value: int, calls_so_far: int, turn: list[int]) -> Turn:
    """The environment's answer to one complete turn (its tokens, ending with `;` or cut at the cap)."""
    parsed = parse_action(turn)
    if parsed is None:
        return Turn(True, 0.0, value, [])
    head, n, written = parsed
    if head == ANSWER:
        return Turn(True, 1.0 if n == value == prompt.target else 0.0, value, [])
    if (head, n) not in ALL_CALLS or written != 1 or calls_so_far >= MAX_TOOL_CALLS:
        return Turn(True, 0.0, value, [])
    new = apply_call(value, head, n)
    if new > MAX_VALUE:
        return Turn(True, 0.0, value, [])
    return Turn(False, 0.0, new, [EQ, *number(new), END])


def call_tokens(op: int, k: int) -> list[int]:
    return [op, DIGIT0 + k, END]


def live(target: int, value: int, calls: int) -> bool:
    """Whether a state (value, tool calls made) can still end with the reward: the target is
    reached within the calls left, by any calls the environment accepts."""
    return reachable(target, value, MAX_TOOL_CALLS - calls)


@lru_cache(maxsize=None)
def reachable(target: int, value: int, calls_left: int) -> bool:
    """Whether `calls_left` calls the environment accepts (or none) lead from value to target."""
    if value == target:
        return True
    if calls_left <= 0:
        return False
    return any(reachable(target, v, calls_left - 1) for v in {apply_call(value, op, k) for op, k in ALL_CALLS} if v <= MAX_VALUE)


@lru_cache(maxsize=None)
def fewest_calls(start: int, target: int, calls: tuple = tuple(TRANSCRIPT_CALLS), limit: int = MAX_TOOL_CALLS) -> int | None:
    """The fewest calls from `calls` that lead from start to target (None beyond `limit`)."""
    frontier = {start}
    for depth in range(1, limit + 1):
        frontier = {apply_call(v, op, k) for v in frontier for op, k in calls if apply_call(v, op, k) <= MAX_VALUE}
        if target in frontier:
            return depth
    return None


def quotas(count: int, mix: tuple[float, ...]) -> list[int]:
    """`count` split by the shares `mix`, in whole numbers (largest remainder)."""
    out = [int(count * w) for w in mix]
    for i in sorted(range(len(mix)), key=lambda i: -(count * mix[i] - out[i]))[: count - sum(out)]:
        out[i] += 1
    return out


def make_prompts(rng: random.Random, count: int, mix: tuple[float, ...] = (0.25, 0.5, 0.25)) -> list[Prompt]:
    """`count` distinct prompts, `mix[d-1]` of them of difficulty d (largest remainder), each made by
    random transcript calls from a random start, in a seeded random order."""
    prompts: list[Prompt] = []
    seen = set()
    for difficulty, quota in zip(DIFFICULTIES, quotas(count, mix)):
        made = 0
        while made < quota:
            start = rng.randint(1, 9)
            value = start
            for _ in range(difficulty + rng.randint(0, 1)):
                op, k = rng.choice(TRANSCRIPT_CALLS)
                value = apply_call(value, op, k)
            if value > MAX_VALUE or (start, value) in seen or fewest_calls(start, value) != difficulty:
                continue
            seen.add((start, value))
            prompts.append(Prompt(start, value))
            made += 1
    rng.shuffle(prompts)
    return prompts


def transcript(rng: random.Random) -> list[int]:
    """A valid solved episode for pre-training: random calls, the prompt's target is where they end."""
    while True:
        start = rng.randint(1, 9)
        calls = [rng.choice(TRANSCRIPT_CALLS) for _ in range(rng.randint(1, MAX_TOOL_CALLS))]
        value, body = start, []
        for op, k in calls:
            value = apply_call(value, op, k)
            body += call_tokens(op, k) + [EQ, *number(value), END]
        if value <= MAX_VALUE:
            return prompt_tokens(start, value) + body + [ANSWER, *number(value), END]
