"""The tool task: reach a target number with calculator calls, then answer it.

A prompt is `S 3 T 2 4 ;` (start at 3, reach 24). Each agent turn is one call: `ADD k ;` or
`MUL k ;` (k one digit), which the environment answers with `= v ;` (the new value), or the
final `ANSWER n ;`. The reward is 1 exactly when the answer equals the current value and the
target; a malformed turn, a value above 99, or a fifth tool call ends the episode with 0.
The early calls decide everything (a wrong first MUL overshoots for good) and the turns that
matter differ by one digit (`ADD 2 ;` vs `ADD 3 ;`): near-identical text, different outcomes.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

TOKENS = ["<pad>", "<bos>", "S", "T", "ADD", "MUL", "ANSWER", "=", ";"] + [str(d) for d in range(10)]
PAD, BOS, S, T, ADD, MUL, ANSWER, EQ, END = range(9)
DIGIT0 = 9
VOCAB = len(TOKENS)

MAX_TOOL_CALLS = 4
MAX_TURN_TOKENS = 4  # `ANSWER d d ;`
MAX_VALUE = 99
# The calls transcripts are made of (the model may still write any digit).
TRANSCRIPT_CALLS = [(ADD, 1), (ADD, 2), (ADD, 3), (MUL, 2), (MUL, 3)]


class Tokenizer:
    """Word-level tokenizer over the task's 19 symbols (numbers are written digit by digit)."""

    def encode(self, text: str) -> list[int]:
        ids = []
        for word in text.split():
            if word.isdigit():
                ids.extend(DIGIT0 + int(c) for c in word)
            else:
                ids.append(TOKENS.index(word))
        return ids

    def decode(self, ids: list[int]) -> str:
        out: list[str] = []
        for i in ids:
            word = TOKENS[i]
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


@dataclass
class Turn:
    """The outcome of one agent turn."""
    done: bool
    reward: float
    value: int
    response: list[int]  # environment tokens appended after the turn (empty when done)


def step(prompt: Prompt, value: int, calls_so_far: int, turn: list[int]) -> Turn:
    """The environment's answer to one complete turn (its tokens, ending with `;` or cut at the cap)."""
    if len(turn) < 2 or turn[-1] != END:
        return Turn(True, 0.0, value, [])
    head, digits = turn[0], turn[1:-1]
    if not digits or any(d < DIGIT0 for d in digits) or (len(digits) > 1 and digits[0] == DIGIT0):
        return Turn(True, 0.0, value, [])
    n = int("".join(str(d - DIGIT0) for d in digits))
    if head == ANSWER:
        return Turn(True, 1.0 if n == value == prompt.target else 0.0, value, [])
    if head not in (ADD, MUL) or len(digits) != 1 or calls_so_far >= MAX_TOOL_CALLS:
        return Turn(True, 0.0, value, [])
    new = apply_call(value, head, n)
    if new > MAX_VALUE:
        return Turn(True, 0.0, value, [])
    return Turn(False, 0.0, new, [EQ, *number(new), END])


def call_tokens(op: int, k: int) -> list[int]:
    return [op, DIGIT0 + k, END]


def solutions(start: int, target: int, max_calls: int) -> int:
    """Call sequences from TRANSCRIPT_CALLS of 1..max_calls calls that end at the target."""
    count = 0
    frontier = [start]
    for _ in range(max_calls):
        frontier = [apply_call(v, op, k) for v in frontier for op, k in TRANSCRIPT_CALLS]
        frontier = [v for v in frontier if v <= MAX_VALUE]
        count += sum(1 for v in frontier if v == target)
    return count


def make_prompts(rng: random.Random, count: int) -> list[Prompt]:
    """Distinct prompts whose target needs at least two calls and is reached by 3 random calls."""
    prompts: list[Prompt] = []
    seen = set()
    while len(prompts) < count:
        start = rng.randint(1, 9)
        value = start
        for _ in range(3):
            op, k = rng.choice(TRANSCRIPT_CALLS)
            value = apply_call(value, op, k)
        if value > MAX_VALUE or (start, value) in seen or solutions(start, value, 1) > 0:
            continue
        seen.add((start, value))
        prompts.append(Prompt(start, value))
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
