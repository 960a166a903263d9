"""Turns from a transformers causal LM for `TreeRollout` and `trace_alloc.trl`, from one batched
`model.generate` per grant size: `HFTurnGenerator` returns the sampled tokens, their
log-probabilities, a per-turn embedding (the mean last-layer hidden state) and the turn's entropy;
`HFTokenGenerator` is the same sampling as a `generators.TokenGenerator` (token ids and log-probs
only, as vLLM gives them), for `generators.TokenTurns` and the driver's token sketch. torch is
imported when they run."""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence, Tuple

from ._errors import TraceAllocError
from .episode import Request, Turn


class HFTurnGenerator:
    """Turns from a transformers causal LM (`model.generate` with sampling), batched: per turn the
    sampled tokens, their log-probabilities under softmax(logits / temperature) (what TRL's loss
    recomputes), the mean last-layer hidden state over the positions the turn's tokens were
    decoded from (its embedding, returned on the model's device), and the mean token entropy
    divided by ln |V| (its uncertainty). A turn ends at a token of `stop_token_ids`.

    Called as `generate(requests, trainer)`: the model is `model`, else the trainer's. Sampling is
    from the full distribution (no top-k/top-p), so the log-probabilities are the sampler's.
    Requests are grouped by `max_tokens`, so no token beyond a request's grant is generated."""

    def __init__(self, model: Any = None, *, stop_token_ids: Sequence[int], pad_token_id: int,
                 temperature: float = 1.0) -> None:
        self.model = model
        self.sampler = _Sampler.make(stop_token_ids, pad_token_id, temperature)

    def __call__(self, requests: List[Request], trainer: Any = None) -> List[Turn]:
        model = self.model
        if model is None:
            model = trainer.accelerator.unwrap_model(trainer.model) if hasattr(trainer, "accelerator") else trainer.model
        sampled = self.sampler.run(model, [r.prefix for r in requests], [r.max_tokens for r in requests], hidden=True)
        return [Turn(tokens=s.tokens, logprobs=s.logprobs, embedding=s.embedding, entropy=s.entropy, stopped=s.stopped)
                for s in sampled]


class HFTokenGenerator:
    """`model.generate` as a `generators.TokenGenerator`: `(prompt_token_ids, max_tokens) ->
    (token_ids, logprobs, finished)`, the sampling of `HFTurnGenerator` without hidden states,
    for `TokenTurns(HFTokenGenerator(model, ...), vocab_size=model.config.vocab_size)`."""

    def __init__(self, model: Any, *, stop_token_ids: Sequence[int], pad_token_id: int, temperature: float = 1.0) -> None:
        self.model = model
        self.sampler = _Sampler.make(stop_token_ids, pad_token_id, temperature)

    def __call__(self, prompt_token_ids: List[List[int]], max_tokens: List[int]) -> Tuple[List[List[int]], List[List[float]], List[bool]]:
        sampled = self.sampler.run(self.model, [tuple(p) for p in prompt_token_ids], list(max_tokens), hidden=False)
        return [s.tokens for s in sampled], [s.logprobs for s in sampled], [s.stopped for s in sampled]


@dataclass
class _Sampled:
    tokens: List[int]
    logprobs: List[float]
    stopped: bool
    entropy: float
    embedding: Any = None


@dataclass
class _Sampler:
    """One sampling set-up shared by both generators: stop tokens, padding, temperature."""
    stop: List[int]
    pad: int
    temperature: float

    @classmethod
    def make(cls, stop_token_ids: Sequence[int], pad_token_id: int, temperature: float) -> "_Sampler":
        if not stop_token_ids:
            raise TraceAllocError("invalid_options", "stop_token_ids must name the tokens that end a turn", field="stop_token_ids")
        return cls([int(x) for x in stop_token_ids], int(pad_token_id), float(temperature))

    def run(self, model: Any, prefixes: List[Tuple[int, ...]], caps: List[int], hidden: bool) -> List[_Sampled]:
        """Every prefix continued by at most its cap, one `generate` per distinct cap, in eval mode."""
        import torch

        out: List[Optional[_Sampled]] = [None] * len(prefixes)
        by_cap: Dict[int, List[int]] = {}
        for i, cap in enumerate(caps):
            by_cap.setdefault(int(cap), []).append(i)
        was_training = model.training
        model.eval()
        try:
            with torch.no_grad():
                for cap, members in by_cap.items():
                    for i, s in zip(members, self._batch(model, [prefixes[i] for i in members], cap, hidden)):
                        out[i] = s
        finally:
            model.train(was_training)
        return out  # type: ignore[return-value]

    def _batch(self, model: Any, prefixes: List[Tuple[int, ...]], cap: int, hidden: bool) -> List[_Sampled]:
        import torch

        device = next(model.parameters()).device
        width = max(len(p) for p in prefixes)
        ids = torch.full((len(prefixes), width), self.pad, dtype=torch.long, device=device)
        mask = torch.zeros((len(prefixes), width), dtype=torch.long, device=device)
        for i, p in enumerate(prefixes):  # left padding: every row's next token is at the end
            ids[i, width - len(p):] = torch.tensor(p, dtype=torch.long, device=device)
            mask[i, width - len(p):] = 1
        out = model.generate(input_ids=ids, attention_mask=mask, max_new_tokens=cap, min_new_tokens=1, do_sample=True,
                             temperature=self.temperature, top_k=0, top_p=1.0, eos_token_id=self.stop,
                             pad_token_id=self.pad, output_hidden_states=hidden, output_logits=True,
                             return_dict_in_generate=True)
        new = out.sequences[:, width:]
        logp = torch.log_softmax(torch.stack(out.logits, dim=1).double() / self.temperature, dim=-1)
        entropy = -(logp.exp() * logp).sum(-1) / math.log(logp.shape[-1])
        # The last layer's state at the position each new token was decoded from.
        states = torch.stack([step[-1][:, -1, :] for step in out.hidden_states], dim=1) if hidden else None
        sampled = []
        stops = set(self.stop)
        for i in range(len(prefixes)):
            row = new[i].tolist()
            n = next((k + 1 for k, tok in enumerate(row) if tok in stops), len(row))
            tokens = row[:n]
            lps = logp[i, torch.arange(n, device=logp.device), new[i, :n]].tolist()
            sampled.append(_Sampled(tokens, lps, tokens[-1] in stops, float(entropy[i, :n].mean()),
                                    states[i, :n].mean(dim=0) if states is not None else None))
        return sampled
