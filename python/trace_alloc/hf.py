"""Turns from a transformers causal LM for `TreeRollout` and `trace_alloc.trl`: the sampled
tokens, their log-probabilities, a per-turn embedding (the mean last-layer hidden state) and the
turn's entropy, from one batched `model.generate`. torch is imported when it runs."""
from __future__ import annotations

import math
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
        if not stop_token_ids:
            raise TraceAllocError("invalid_options", "stop_token_ids must name the tokens that end a turn", field="stop_token_ids")
        self.model, self.stop = model, [int(x) for x in stop_token_ids]
        self.pad, self.temperature = int(pad_token_id), float(temperature)

    def __call__(self, requests: List[Request], trainer: Any = None) -> List[Turn]:
        import torch

        model = self.model
        if model is None:
            model = trainer.accelerator.unwrap_model(trainer.model) if hasattr(trainer, "accelerator") else trainer.model
        turns: List[Optional[Turn]] = [None] * len(requests)
        by_cap: Dict[int, List[int]] = {}
        for i, r in enumerate(requests):
            by_cap.setdefault(r.max_tokens, []).append(i)
        was_training = model.training
        model.eval()
        try:
            with torch.no_grad():
                for cap, members in by_cap.items():
                    for i, turn in zip(members, self._batch(model, [requests[i].prefix for i in members], cap)):
                        turns[i] = turn
        finally:
            model.train(was_training)
        return turns  # type: ignore[return-value]

    def _batch(self, model: Any, prefixes: List[Tuple[int, ...]], cap: int) -> List[Turn]:
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
                             pad_token_id=self.pad, output_hidden_states=True, output_logits=True,
                             return_dict_in_generate=True)
        new = out.sequences[:, width:]
        logp = torch.log_softmax(torch.stack(out.logits, dim=1).double() / self.temperature, dim=-1)
        entropy = -(logp.exp() * logp).sum(-1) / math.log(logp.shape[-1])
        # The last layer's state at the position each new token was decoded from.
        hidden = torch.stack([step[-1][:, -1, :] for step in out.hidden_states], dim=1)
        turns = []
        stops = set(self.stop)
        for i in range(len(prefixes)):
            row = new[i].tolist()
            n = next((k + 1 for k, tok in enumerate(row) if tok in stops), len(row))
            tokens = row[:n]
            lps = logp[i, torch.arange(n, device=logp.device), new[i, :n]].tolist()
            turns.append(Turn(tokens=tokens, logprobs=lps, embedding=hidden[i, :n].mean(dim=0),
                              entropy=float(entropy[i, :n].mean()), stopped=tokens[-1] in stops))
        return turns
