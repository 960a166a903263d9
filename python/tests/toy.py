"""A seeded toy agent task for the driver's tests: reach a target with ADD/MUL calls.

A turn is `op digit END` (3 tokens) when the policy behaves, with a chance of a longer,
malformed turn (up to 5 tokens) or an early stop. The environment answers a call with
`EQ value`, ends the episode with reward 1 when the value hits the target, 0 past it, after 3
calls, or on a malformed turn. The "policy" is a seeded random generator that records every
request it saw, so tests can check prefixes, grants and the budget.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import List, Tuple

import numpy as np

from trace_alloc import EnvStep, Prompt, Request, Turn

ADD, MUL, END, EQ = 1, 2, 3, 4
DIGIT0 = 10
MAX_TURN = 5
DIM = 6


@dataclass(frozen=True)
class State:
    value: int
    target: int
    calls: int = 0


def prompts(count: int, seed: int = 0) -> List[Prompt]:
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(count):
        start, target = int(rng.integers(1, 4)), int(rng.integers(6, 13))
        out.append(Prompt((DIGIT0 + start, EQ, DIGIT0 + target % 10), State(start, target)))
    return out


def step(state: State, turn: Tuple[int, ...]) -> EnvStep:
    ok = len(turn) == 3 and turn[0] in (ADD, MUL) and turn[1] >= DIGIT0 and turn[2] == END
    if not ok:
        return EnvStep(done=True, reward=0.0)
    k = turn[1] - DIGIT0
    value = state.value + k if turn[0] == ADD else state.value * k
    calls = state.calls + 1
    if value == state.target:
        return EnvStep(observation=(EQ, DIGIT0 + value % 10), done=True, reward=1.0)
    if value > state.target or calls >= 3:
        return EnvStep(observation=(EQ, DIGIT0 + value % 10), done=True, reward=0.0)
    return EnvStep(observation=(EQ, DIGIT0 + value % 10), state=State(value, state.target, calls))


class Policy:
    """Seeded turns; `requests` keeps every request seen (prefix, grant)."""

    def __init__(self, seed: int = 0, malformed: float = 0.1):
        self.rng = np.random.default_rng(seed)
        self.malformed = malformed
        self.requests: List[Request] = []
        self.calls = 0

    def intended(self) -> List[int]:
        if self.rng.random() < self.malformed:
            return [int(x) for x in self.rng.integers(1, 20, size=MAX_TURN)]
        return [int(self.rng.choice([ADD, MUL])), DIGIT0 + int(self.rng.integers(0, 4)), END]

    def __call__(self, requests: List[Request]) -> List[Turn]:
        self.calls += 1
        out = []
        for req in requests:
            self.requests.append(req)
            whole = self.intended()[req.resumed:] or [END]
            tokens = whole[:req.max_tokens]
            stopped = len(tokens) == len(whole) and tokens[-1] == END
            emb = np.zeros(DIM)
            emb[tokens[0] % DIM] = 1.0
            emb += self.rng.normal(0, 0.05, DIM)
            out.append(Turn(tokens=tokens, logprobs=[-math.log(4.0)] * len(tokens), embedding=emb,
                            entropy=float(self.rng.random()), stopped=stopped))
        return out
