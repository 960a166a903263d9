"""transformers' model.generate through both generator interfaces: HFTurnGenerator (hidden-state
embeddings, exact entropy) and HFTokenGenerator (token ids and log-probs only, as vLLM gives
them) with TokenTurns and the driver's token sketch. Skips without torch and transformers,
unless TRACE_ALLOC_REQUIRE_TRL=1."""
import math

import pytest

import toy
from conftest import require_trl
from trace_alloc import Budget, Request, TreeRollout
from trace_alloc.generators import TokenTurns
from trace_alloc.hf import HFTokenGenerator, HFTurnGenerator

VOCAB = 24


def tiny_model():
    require_trl()
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(0)
    return GPT2LMHeadModel(GPT2Config(vocab_size=VOCAB, n_positions=64, n_embd=16, n_layer=1, n_head=2,
                                      eos_token_id=toy.END, pad_token_id=0))


def test_the_token_generator_samples_what_the_turn_generator_samples():
    import torch

    model = tiny_model()
    requests = [Request(0, 0, (5, 6, 7), 4), Request(1, 0, (8,), 2), Request(2, 0, (9, 9), 4)]
    torch.manual_seed(3)
    turns = HFTurnGenerator(model, stop_token_ids=[toy.END], pad_token_id=0)(requests)
    torch.manual_seed(3)
    ids, logprobs, finished = HFTokenGenerator(model, stop_token_ids=[toy.END], pad_token_id=0)(
        [list(r.prefix) for r in requests], [r.max_tokens for r in requests])
    assert ids == [t.tokens for t in turns] and finished == [t.stopped for t in turns]
    assert logprobs == [pytest.approx(t.logprobs) for t in turns]
    for r, t in zip(requests, turns):
        assert 1 <= len(t.tokens) <= r.max_tokens and t.embedding.shape == (16,)
        assert all(math.isfinite(x) and x <= 0 for x in t.logprobs)


def test_a_driver_run_on_hf_token_ids_alone_spends_exactly_the_budget(service):
    model = tiny_model()
    generate = TokenTurns(HFTokenGenerator(model, stop_token_ids=[toy.END], pad_token_id=0), vocab_size=VOCAB)
    result = TreeRollout(service, generate, toy.step, max_turn_tokens=toy.MAX_TURN).run(toy.prompts(2), Budget(tokens=50))
    assert result.tokens_used == 50
    assert all(0 <= n.tokens[-1] < VOCAB for t in result.trees for n in t.nodes[1:])
