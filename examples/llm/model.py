"""The policy: a GPT-2 from a `transformers` config, randomly initialised, pre-trained briefly on
solved transcripts so that RL starts from a weak but non-zero policy.

Sequences in a batch are right-padded: under causal attention a position never sees the padding
after it, so the logits at each sequence's own positions are exact without an attention mask.
"""

from __future__ import annotations

import random
from typing import Callable

import torch
from transformers import GPT2Config, GPT2LMHeadModel

from task import PAD
from tasks import CALCULATOR, Task


def build_model(seed: int, layers: int = 2, hidden: int = 64, heads: int = 4, task: Task = CALCULATOR) -> GPT2LMHeadModel:
    torch.manual_seed(seed)
    config = GPT2Config(
        vocab_size=task.vocab, n_positions=task.max_positions, n_embd=hidden, n_layer=layers, n_head=heads,
        bos_token_id=task.bos, eos_token_id=task.end, pad_token_id=task.pad, activation_function="gelu",
        resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0,
    )
    # Eager attention: sequences are short, and a fully masked padding row stays finite.
    return GPT2LMHeadModel._from_config(config, attn_implementation="eager")


def pad_batch(seqs: list[list[int]], device: torch.device | str = "cpu") -> tuple[torch.Tensor, torch.Tensor]:
    """Right-padded ids (B × L) and each sequence's length (B)."""
    width = max(len(s) for s in seqs)
    ids = torch.full((len(seqs), width), PAD, dtype=torch.long)
    for i, s in enumerate(seqs):
        ids[i, : len(s)] = torch.tensor(s, dtype=torch.long)
    return ids.to(device), torch.tensor([len(s) for s in seqs], dtype=torch.long, device=device)


def pretrain(model: GPT2LMHeadModel, seed: int, steps: int, batch: int = 64, lr: float = 3e-3,
             done: Callable[[], bool] | None = None, check_every: int = 25, task: Task = CALCULATOR) -> tuple[float, int]:
    """Next-token cross-entropy on the task's random solved transcripts, `steps` batches, or fewer when
    `done()` (asked every `check_every` steps, the model in eval mode) says so; returns the last
    batch's loss and the steps taken."""
    device = next(model.parameters()).device
    rng = random.Random(seed * 7 + 3)
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.0)
    loss = torch.tensor(float("nan"))
    taken = 0
    for taken in range(1, steps + 1):
        model.train()
        ids, _ = pad_batch([task.transcript(rng) for _ in range(batch)], device)
        labels = ids.clone()
        labels[labels == PAD] = -100
        loss = model(input_ids=ids, labels=labels).loss
        opt.zero_grad()
        loss.backward()
        opt.step()
        if done is not None and taken % check_every == 0:
            model.eval()
            if done():
                break
    model.eval()
    return float(loss.detach()), taken


def weighted_log_prob(model: GPT2LMHeadModel, seqs: list[list[int]], weights: list[list[float]]) -> torch.Tensor:
    """Σ over sequences and positions of weight · log π(token | prefix), with gradients.

    `weights[i][j]` weighs token j of sequence i (0 for the prompt, the environment's tokens and
    every token no update uses); position 0 is never predicted and must weigh 0."""
    device = next(model.parameters()).device
    ids, _ = pad_batch(seqs, device)
    w = torch.zeros(ids.shape, dtype=torch.float32)
    for i, row in enumerate(weights):
        w[i, : len(row)] = torch.tensor(row, dtype=torch.float32)
    logp = torch.log_softmax(model(input_ids=ids).logits[:, :-1].float(), dim=-1)
    taken = logp.gather(2, ids[:, 1:, None]).squeeze(2)
    return (taken * w[:, 1:].to(device)).sum()


def packed_weighted_log_prob(model: GPT2LMHeadModel, trees: list) -> torch.Tensor:
    """`weighted_log_prob` over `Forest.packed` rows: the same sum, each distinct token forwarded once.

    The sums are equal when every weighted node has a finished leaf below it (every credit's do:
    only nodes with visits are weighted), since `carriers` drops the others. The rows are
    right-padded; a padding token sees only itself and no real token sees it. The tree-shaped
    mask goes to the `transformers` model as an additive float mask (under its eager attention a
    boolean 4-D mask is added as 0 and 1, not read as "may attend"), with SDPA attention for this
    call: a row is a whole tree (hundreds of tokens), and eager attention's separate passes over
    the rows × heads × L × L scores cost 2.7 times as much here (entropy forking's update on the
    recipe task, 0.27 s against 0.10 s a step)."""
    device = next(model.parameters()).device
    width = max(len(t.tokens) for t in trees)
    ids = torch.full((len(trees), width), PAD, dtype=torch.long)
    positions = torch.zeros((len(trees), width), dtype=torch.long)
    visible = torch.eye(width, dtype=torch.bool).repeat(len(trees), 1, 1)
    targets = []  # (row, packed index of the token before, token, weight) per weighted token
    for r, t in enumerate(trees):
        n = len(t.tokens)
        ids[r, :n] = torch.tensor(t.tokens, dtype=torch.long)
        positions[r, :n] = torch.tensor(t.positions, dtype=torch.long)
        visible[r, :n, :n] = torch.from_numpy(t.visible)
        targets += [(r, p, tok, w) for p, tok, w in zip(t.previous, t.tokens, t.weights) if p >= 0 and w != 0.0]
    dtype = next(model.parameters()).dtype
    mask = torch.zeros(visible.shape, dtype=dtype).masked_fill(~visible, float("-inf"))[:, None]
    before = model.config._attn_implementation
    model.set_attn_implementation("sdpa")
    try:
        logits = model(input_ids=ids.to(device), position_ids=positions.to(device), attention_mask=mask.to(device),
                       use_cache=False).logits
    finally:
        model.set_attn_implementation(before)
    if not targets:
        return logits.sum() * 0.0
    row, at, token, weight = (torch.tensor(x, device=device) for x in zip(*targets))
    logp = torch.log_softmax(logits[row, at].float(), dim=-1)
    return (logp.gather(1, token[:, None]).squeeze(1) * weight.float()).sum()
