"""The policy: a tiny GPT-2 from a `transformers` config, randomly initialised, pre-trained briefly
on solved transcripts so that RL starts from a weak but non-zero policy.

Sequences in a batch are right-padded: under causal attention a position never sees the padding
after it, so the logits and hidden states at each sequence's own positions are exact without an
attention mask.
"""

from __future__ import annotations

import random

import torch
from transformers import GPT2Config, GPT2LMHeadModel

from task import PAD, VOCAB, transcript

MAX_POSITIONS = 64


def build_model(seed: int, layers: int = 2, hidden: int = 64, heads: int = 4) -> GPT2LMHeadModel:
    torch.manual_seed(seed)
    config = GPT2Config(
        vocab_size=VOCAB, n_positions=MAX_POSITIONS, n_embd=hidden, n_layer=layers, n_head=heads,
        bos_token_id=1, eos_token_id=8, pad_token_id=PAD,
        resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0,
    )
    return GPT2LMHeadModel(config)


def pad_batch(seqs: list[list[int]]) -> tuple[torch.Tensor, torch.Tensor]:
    """Right-padded ids (B × L) and each sequence's length."""
    width = max(len(s) for s in seqs)
    ids = torch.full((len(seqs), width), PAD, dtype=torch.long)
    for i, s in enumerate(seqs):
        ids[i, : len(s)] = torch.tensor(s, dtype=torch.long)
    return ids, torch.tensor([len(s) for s in seqs], dtype=torch.long)


def pretrain(model: GPT2LMHeadModel, seed: int, steps: int, batch: int = 64, lr: float = 3e-3) -> float:
    """Next-token cross-entropy on random solved transcripts; returns the last batch's loss."""
    rng = random.Random(seed * 7 + 3)
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.0)
    model.train()
    loss = torch.tensor(float("nan"))
    for _ in range(steps):
        ids, _ = pad_batch([transcript(rng) for _ in range(batch)])
        labels = ids.clone()
        labels[labels == PAD] = -100
        loss = model(input_ids=ids, labels=labels).loss
        opt.zero_grad()
        loss.backward()
        opt.step()
    model.eval()
    return float(loss)


@torch.no_grad()
def next_token(model: GPT2LMHeadModel, seqs: list[list[int]]) -> tuple[torch.Tensor, torch.Tensor]:
    """Logits of the next token after each sequence (B × V) and the last-layer hidden state they
    come from (B × hidden): the state the policy decodes that token from, free with the logits."""
    ids, lengths = pad_batch(seqs)
    hidden = model.transformer(input_ids=ids).last_hidden_state  # after the final layer norm
    last = hidden[torch.arange(len(seqs)), lengths - 1]
    return model.lm_head(last), last


def turn_log_probs(model: GPT2LMHeadModel, seqs: list[list[int]], spans: list[tuple[int, int]]) -> torch.Tensor:
    """Sum of log π over each sequence's generated span [start, end), with gradients (B)."""
    ids, _ = pad_batch(seqs)
    logp = torch.log_softmax(model(input_ids=ids).logits, dim=-1)
    out = []
    for i, (a, b) in enumerate(spans):
        positions = torch.arange(a - 1, b - 1)
        out.append(logp[i, positions, ids[i, a:b]].sum())
    return torch.stack(out)
