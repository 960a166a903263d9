"""Any generator as the driver's `generate`: one that takes token ids and returns token ids and
their log-probabilities, and nothing else (vLLM, SGLang, an inference server, `model.generate`).

    def my_generate(prompt_token_ids, max_tokens):       # lists in, one entry per request
        ...
        return token_ids, logprobs, finished              # finished[i]: the policy ended the turn (a stop token)

    generate = TokenTurns(my_generate, vocab_size=151_936)
    rollout = TreeRollout(ta, generate, step, max_turn_tokens=512)   # no dim: token sketches

A `TokenGenerator` is called with one prompt per request (the request's whole prefix: the
prompt, every turn and observation on its path, and the current turn so far) and the most
tokens each may add. It returns, per request, the sampled token ids (1 to `max_tokens` of
them), the sampling policy's log-probability of each, and whether the policy ended the turn
itself (`True`: a stop token or end of sequence; `False`: it stopped at `max_tokens`).

`TokenTurns` turns that into the driver's `Turn`s:

- **no embedding**: `Turn.embedding` is None, so the driver sketches each turn from its token ids
  (`trace_alloc.sketch`; `TreeRollout(dim=None)`, the default);
- **uncertainty from log-probs**: the turn's uncertainty (`Turn.entropy`) is the mean negative
  log-probability of its sampled tokens divided by ln |V| (`vocab_size`). For tokens sampled
  from the policy, E[−log p(token)] is the entropy of the distribution they were drawn from, so
  this is an unbiased estimate of the mean token entropy / ln |V| that `HFTurnGenerator`
  computes exactly from the logits: the same scale (about [0, 1]), one sample per token. TRACE
  adds uncertainty gaps to reward gaps (docs/ALGORITHM.md, "Scoring"), so an unnormalised
  value in nats would outweigh rewards in [0, 1]; `vocab_size` is therefore required.
- **affinity**: each request's `affinity` (module `episode`) is handed to the generator when it
  takes an `affinity` keyword (`my_generate(prompts, max_tokens, affinity=[...])`), so a
  router in front of several engines can send the rollouts of one placement to one engine.

The vLLM recipe (python/README.md, "Any generator") is a few lines around `LLM.generate` with
prefix caching; `HFTokenGenerator` (module `hf`) is transformers' `model.generate` through the
same interface.
"""
from __future__ import annotations

import inspect
import math
from typing import Any, Callable, List, Protocol, Sequence, Tuple

from ._errors import TraceAllocError
from .episode import Request, Turn

__all__ = ["TokenGenerator", "TokenTurns", "nll_uncertainty"]

TokenOutput = Tuple[Sequence[Sequence[int]], Sequence[Sequence[float]], Sequence[bool]]


class TokenGenerator(Protocol):
    """`(prompt_token_ids, max_tokens) -> (token_ids, logprobs, finished)`, one entry per prompt (module docstring)."""

    def __call__(self, prompt_token_ids: List[List[int]], max_tokens: List[int]) -> TokenOutput: ...


def nll_uncertainty(logprobs: Sequence[float], vocab_size: int) -> float:
    """The mean negative log-probability of a turn's sampled tokens over ln |V| (module docstring);
    0 for an empty turn or a one-token vocabulary."""
    if not logprobs or vocab_size < 2:
        return 0.0
    return max(0.0, -sum(float(x) for x in logprobs) / len(logprobs)) / math.log(vocab_size)


class TokenTurns:
    """A `TokenGenerator` as the driver's `generate(requests) -> turns` (and TRL's
    `generate(requests, trainer)`): embeddings left to the driver's token sketch, uncertainty
    from the log-probs over ln `vocab_size` (module docstring)."""

    def __init__(self, generate: Callable[..., TokenOutput], *, vocab_size: int) -> None:
        if not callable(generate):
            raise TraceAllocError("invalid_options", "generate must be callable", field="generate")
        if isinstance(vocab_size, bool) or not isinstance(vocab_size, int) or vocab_size < 2:
            raise TraceAllocError("invalid_options", "vocab_size must be an integer >= 2 (the policy's vocabulary), got %r"
                                  % (vocab_size,), field="vocab_size")
        self.generate, self.vocab_size = generate, vocab_size
        self._takes_affinity = _accepts(generate, "affinity")

    def __call__(self, requests: List[Request], trainer: Any = None) -> List[Turn]:
        prompts = [list(r.prefix) for r in requests]
        caps = [int(r.max_tokens) for r in requests]
        if self._takes_affinity:
            out = self.generate(prompts, caps, affinity=[r.affinity for r in requests])
        else:
            out = self.generate(prompts, caps)
        try:
            token_ids, logprobs, finished = out
        except (TypeError, ValueError):
            raise TraceAllocError("invalid_value", "a token generator returns (token_ids, logprobs, finished), got %r"
                                  % (type(out).__name__,), field="generate") from None
        token_ids, logprobs, finished = list(token_ids), list(logprobs), list(finished)
        if not len(token_ids) == len(logprobs) == len(finished) == len(requests):
            raise TraceAllocError("invalid_value", "a token generator returned %d token lists, %d log-prob lists and %d "
                                  "finished flags for %d prompts" % (len(token_ids), len(logprobs), len(finished),
                                                                     len(requests)), field="generate")
        turns = []
        for ids, lps, done in zip(token_ids, logprobs, finished):
            ids = [int(x) for x in ids]
            lps = [float(x) for x in lps]
            # A length or finiteness problem is the driver's to report: it names the tree, the node and the field.
            uncertainty = nll_uncertainty(lps, self.vocab_size) if all(math.isfinite(x) for x in lps) else 0.0
            turns.append(Turn(tokens=ids, logprobs=lps, embedding=None, entropy=uncertainty, stopped=bool(done)))
        return turns


def _accepts(fn: Callable[..., Any], name: str) -> bool:
    """Whether `fn` takes the keyword `name` (or **kwargs)."""
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):  # a builtin without a signature
        return False
    return any(p.name == name or p.kind is inspect.Parameter.VAR_KEYWORD for p in params)
