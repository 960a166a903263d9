"""The calculator tool task of examples/llm (task.py) for TRL: a tokenizer built here, the
environment as `trace_alloc` step functions, TRL's default sampling as a rollout_func, and the
success rate of sampled episodes."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, List, Tuple

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "llm"))

import torch  # noqa: E402
from tokenizers import Tokenizer, models, pre_tokenizers  # noqa: E402
from transformers import PreTrainedTokenizerFast  # noqa: E402

from trace_alloc import EnvStep, Prompt, Request  # noqa: E402
from task import DIGIT0, END, MAX_TURN_TOKENS, PAD, TOKENS, make_prompts, step  # noqa: E402
from task import Prompt as TaskPrompt  # noqa: E402


def tokenizer() -> PreTrainedTokenizerFast:
    """A word-level tokenizer over the task's 19 symbols, made in code (numbers digit by digit)."""
    core = Tokenizer(models.WordLevel({w: i for i, w in enumerate(TOKENS)}, unk_token="<pad>"))
    core.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    return PreTrainedTokenizerFast(tokenizer_object=core, pad_token="<pad>", bos_token="<bos>", eos_token=";",
                                   unk_token="<pad>")


def prompt_text(p: TaskPrompt) -> str:
    """`<bos> S 3 T 2 4 ;`: what the dataset holds (the tokens of task.prompt_tokens, spaced)."""
    return " ".join(["<bos>", "S", *str(p.start), "T", *str(p.target), ";"])


@dataclass(frozen=True)
class State:
    prompt: TaskPrompt
    value: int
    calls: int


def prepare(text: str) -> Prompt:
    """A dataset prompt as the driver's Prompt: its ids and the environment's start state."""
    words = text.split()
    ids = [TOKENS.index(w) for w in words]
    t = words.index("T")
    start, target = int("".join(words[2:t])), int("".join(words[t + 1:-1]))
    return Prompt(tuple(ids), State(TaskPrompt(start, target), start, 0))


def env_step(state: State, turn: Tuple[int, ...]) -> EnvStep:
    out = step(state.prompt, state.value, state.calls, list(turn))
    return EnvStep(observation=tuple(out.response), done=out.done, reward=out.reward,
                   state=None if out.done else State(state.prompt, out.value, state.calls + 1))


def play(generate, prompts: List[Prompt], trainer: Any = None) -> Tuple[List[dict], int]:
    """One independent episode per prompt, turn by turn in batches: (episodes, generated tokens)."""
    episodes = [{"prompt_ids": list(p.tokens), "completion_ids": [], "logprobs": [], "env_mask": [], "reward": None,
                 "state": p.state} for p in prompts]
    running = list(range(len(prompts)))
    used = 0
    while running:
        requests = [Request(i, 0, tuple(episodes[i]["prompt_ids"] + episodes[i]["completion_ids"]), MAX_TURN_TOKENS)
                    for i in running]
        turns = generate(requests, trainer)
        still = []
        for i, turn in zip(running, turns):
            e = episodes[i]
            used += len(turn.tokens)
            answer = env_step(e["state"], tuple(turn.tokens))
            e["completion_ids"] += list(turn.tokens) + list(answer.observation)
            e["logprobs"] += list(turn.logprobs) + [0.0] * len(answer.observation)
            e["env_mask"] += [1] * len(turn.tokens) + [0] * len(answer.observation)
            if answer.done:
                e["reward"] = answer.reward
            else:
                e["state"] = answer.state
                still.append(i)
        running = still
    return episodes, used


class IndependentRollouts:
    """TRL's default sampling — `num_generations` independent episodes per prompt, each from the
    prompt — as a rollout_func: TRL's own generation loop needs a chat template and a tool
    parser that this tiny tokenizer does not have. `tokens` keeps the generated tokens per call."""

    def __init__(self, generate):
        self.generate = generate
        self.tokens: List[int] = []

    def __call__(self, prompts: List[str], trainer: Any) -> dict:
        episodes, used = play(self.generate, [prepare(p) for p in prompts], trainer)
        self.tokens.append(used)
        return {"prompt_ids": [e["prompt_ids"] for e in episodes], "completion_ids": [e["completion_ids"] for e in episodes],
                "logprobs": [e["logprobs"] for e in episodes], "env_mask": [e["env_mask"] for e in episodes],
                "env_reward": [e["reward"] for e in episodes]}


def success_rate(generate, model, prompts: List[TaskPrompt], samples: int, seed: int) -> float:
    """Mean outcome of `samples` sampled episodes per prompt (seeded)."""
    torch.manual_seed(seed)
    generator_model = generate.model
    generate.model = model
    try:
        episodes, _ = play(generate, [prepare(prompt_text(p)) for p in prompts for _ in range(samples)])
    finally:
        generate.model = generator_model
    return sum(e["reward"] for e in episodes) / len(episodes)


__all__ = ["DIGIT0", "END", "PAD", "IndependentRollouts", "env_step", "make_prompts", "prepare", "prompt_text",
           "success_rate", "tokenizer"]
