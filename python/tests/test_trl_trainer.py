"""TraceRolloutFunc and TreeGRPOTrainer inside TRL's real GRPOTrainer (skips without trl, unless
TRACE_ALLOC_REQUIRE_TRL=1): the rollout contract TRL checks, and tree advantages reaching the loss."""
import logging
import os

import pytest

import toy
from conftest import require_trl
from trace_alloc import Budget, TraceAllocError
from trace_alloc.trl import HFTurnGenerator, TraceRolloutFunc, env_reward

PROMPTS = toy.prompts(4, seed=5)
GENERATIONS = 4


def tiny_trainer(service, tmp_path, attach, loss_type="dapo"):
    trl = require_trl()
    import torch
    from datasets import Dataset
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast
    from trace_alloc.trl import TreeGRPOTrainer

    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    logging.getLogger("trl").setLevel(logging.ERROR)
    words = ["<pad>"] + ["w%d" % i for i in range(1, 24)]
    core = Tokenizer(models.WordLevel({w: i for i, w in enumerate(words)}, unk_token="<pad>"))
    core.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tok = PreTrainedTokenizerFast(tokenizer_object=core, pad_token="<pad>", eos_token="w%d" % toy.END, unk_token="<pad>")
    torch.manual_seed(0)
    model = GPT2LMHeadModel(GPT2Config(vocab_size=len(words), n_positions=64, n_embd=toy.DIM * 2, n_layer=1, n_head=2,
                                       eos_token_id=toy.END, pad_token_id=0))
    rollout = TraceRolloutFunc(service, HFTurnGenerator(stop_token_ids=[toy.END], pad_token_id=0), toy.step,
                               prepare=lambda name: PROMPTS[int(name[1:])], dim=toy.DIM * 2, max_turn_tokens=toy.MAX_TURN,
                               budget=lambda trees: Budget(tokens=40 * trees), attach_advantages=attach)
    args = trl.GRPOConfig(output_dir=str(tmp_path), per_device_train_batch_size=2 * GENERATIONS, num_generations=GENERATIONS,
                          max_steps=1, beta=0.0, loss_type=loss_type, max_completion_length=64, report_to=[],
                          save_strategy="no", use_cpu=True, disable_tqdm=True, logging_steps=1, learning_rate=1e-3)
    data = Dataset.from_dict({"prompt": ["p%d" % i for i in range(len(PROMPTS))]})
    cls = TreeGRPOTrainer if attach else trl.GRPOTrainer
    return cls(model=model, reward_funcs=[env_reward], args=args, train_dataset=data, processing_class=tok,
               rollout_func=rollout), rollout


def test_tree_grpo_trainer_trains_on_per_token_tree_advantages(service, tmp_path):
    trainer, rollout = tiny_trainer(service, tmp_path, attach=True)
    batch = [{"prompt": "p%d" % p} for p in (0, 1) for _ in range(GENERATIONS)]
    out = trainer._generate_and_score_completions(batch)
    ids, adv = out["completion_ids"], out["advantages"]
    assert adv.shape == ids.shape  # (B, T): one advantage per completion token
    for i, row in enumerate(rollout.last_token_advantages):
        assert adv[i, :len(row)].tolist() == pytest.approx(row, abs=1e-6)
        assert adv[i, len(row):].abs().sum().item() == 0.0
    assert rollout.last_result.tokens_used >= 80 and rollout.last_result.unfinished == ()  # finished past the budget, none cut
    trainer.train()  # one optimizer step through TRL's loss with (B, T) advantages
    assert all(x == x for x in (h.get("loss", 0.0) for h in trainer.state.log_history))


def test_plain_grpo_trainer_takes_the_tree_leaves(service, tmp_path):
    trainer, rollout = tiny_trainer(service, tmp_path, attach=False)
    trainer.train()
    h = rollout.history[-1]
    assert h["tokens_budget"] == 2 * 40 and h["tokens_used"] == 2 * 40 + h["excess"]
    assert trainer.state.global_step == 1


def test_a_per_sequence_loss_is_refused(service, tmp_path):
    with pytest.raises(TraceAllocError) as info:
        tiny_trainer(service, tmp_path, attach=True, loss_type="grpo")
    assert info.value.field == "loss_type"
