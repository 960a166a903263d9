"""The calculator tool task of examples/llm (task.py) for TRL: a tokenizer built here, the
environment as `trace_alloc` step functions, the generator every sampler uses (`CachedTurns`),
TRL's default sampling as a rollout_func, and the success rate of sampled episodes."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, List, Tuple

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "llm"))

import math  # noqa: E402

import torch  # noqa: E402
from tokenizers import Tokenizer, models, pre_tokenizers  # noqa: E402
from transformers import PreTrainedTokenizerFast  # noqa: E402

from decode import Decoder  # noqa: E402
from trace_alloc import EnvStep, Prompt, Request, Turn  # noqa: E402
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


class CachedTurns:
    """Turns from the policy for every sampler, batched: examples/llm's key/value-cached GPT-2
    decoder (`decode.Decoder`, on the model's own weights) instead of `model.generate`, whose
    fixed cost per call (about 9 ms here, against about 0.4 ms per row) made the sampler that
    calls it more often, with smaller batches, slower for reasons no real generator shares.
    The same outputs as `trace_alloc.hf.HFTurnGenerator`: per turn the sampled tokens (full
    distribution at `temperature`, ending at `END` or at the request's `max_tokens`), their
    log-probabilities, the mean last-layer hidden state the tokens were decoded from (the
    embedding) and the mean token entropy / ln |V| (the uncertainty).

    Called as `generate(requests, trainer)`: the model is `model`, else the trainer's."""

    def __init__(self, model: Any = None, temperature: float = 1.0) -> None:
        self.model, self.temperature = model, temperature
        self.calls = 0
        self.rows = 0

    def __call__(self, requests: List[Request], trainer: Any = None) -> List[Turn]:
        model = self.model
        if model is None:
            model = trainer.accelerator.unwrap_model(trainer.model) if hasattr(trainer, "accelerator") else trainer.model
        self.calls += 1
        self.rows += len(requests)
        was_training = model.training
        model.eval()
        try:
            with torch.no_grad():
                return self._sample(model, requests)
        finally:
            model.train(was_training)

    def _sample(self, model: Any, requests: List[Request]) -> List[Turn]:
        decoder = Decoder(model, [list(r.prefix) for r in requests])
        tokens: List[List[int]] = [[] for _ in requests]
        logprobs: List[List[float]] = [[] for _ in requests]
        hidden: List[List[torch.Tensor]] = [[] for _ in requests]
        entropy: List[float] = [0.0] * len(requests)
        live = list(range(len(requests)))
        while live:
            logp = torch.log_softmax(decoder.logits.double() / self.temperature, dim=-1)
            picked = torch.multinomial(logp.exp(), 1).squeeze(1)
            step_entropy = (-(logp.exp() * logp).sum(-1) / math.log(logp.shape[-1])).tolist()
            states = decoder.hidden
            chosen = logp.gather(1, picked[:, None]).squeeze(1).tolist()
            still, rows = [], []
            for j, (i, tok) in enumerate(zip(live, picked.tolist())):
                tokens[i].append(tok)
                logprobs[i].append(chosen[j])
                hidden[i].append(states[j])
                entropy[i] += step_entropy[j]
                if tok != END and len(tokens[i]) < requests[i].max_tokens:
                    still.append(j)
                    rows.append(i)
            if not still:
                break
            decoder.keep(still)
            decoder.feed([[tokens[i][-1]] for i in rows])
            live = rows
        return [Turn(tokens=tokens[i], logprobs=logprobs[i], embedding=torch.stack(hidden[i]).mean(dim=0),
                     entropy=entropy[i] / len(tokens[i]), stopped=tokens[i][-1] == END) for i in range(len(requests))]


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


__all__ = ["CachedTurns", "DIGIT0", "END", "PAD", "IndependentRollouts", "env_step", "make_prompts", "prepare", "prompt_text",
           "success_rate", "tokenizer"]
