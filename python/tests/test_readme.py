"""python/README.md's TRL script runs as written: extracted from the Markdown and executed on a
tiny model built from a config (`from_pretrained` hands it over: nothing is downloaded). Skips
without trl, unless TRACE_ALLOC_REQUIRE_TRL=1. (test/readme-python.test.ts checks that README.md's
Python section shows the same script.)"""
import os
import re
from pathlib import Path

from conftest import require_trl

README = Path(__file__).resolve().parents[1] / "README.md"


def python_block(markdown: str, heading: str) -> str:
    """The first ```python block after `heading`."""
    section = markdown[markdown.index(heading):]
    match = re.search(r"```python\n(.*?)```", section, re.S)
    assert match is not None, "no python block after %r" % heading
    return match.group(1)


def tiny_model_and_tokenizer(words):
    import torch
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast

    vocab = ["<pad>", "<eos>"] + words
    core = Tokenizer(models.WordLevel({w: i for i, w in enumerate(vocab)}, unk_token="<pad>"))
    core.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tok = PreTrainedTokenizerFast(tokenizer_object=core, pad_token="<pad>", eos_token="<eos>", unk_token="<pad>")
    torch.manual_seed(0)
    model = GPT2LMHeadModel(GPT2Config(vocab_size=len(vocab), n_positions=128, n_embd=16, n_layer=1, n_head=2,
                                       bos_token_id=1, eos_token_id=1, pad_token_id=0))
    return model, tok


def test_the_trl_script_of_the_readme_runs_as_written(monkeypatch, tmp_path):
    require_trl()
    import transformers

    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    script = python_block(README.read_text(), "## In TRL's GRPOTrainer")
    model, tok = tiny_model_and_tokenizer("What is + ? 2 3 4 5 8".split())
    monkeypatch.setattr(transformers.AutoModelForCausalLM, "from_pretrained", lambda *a, **k: model)
    monkeypatch.setattr(transformers.AutoTokenizer, "from_pretrained", lambda *a, **k: tok)
    monkeypatch.chdir(tmp_path)  # GRPOConfig's default output_dir is relative
    namespace = {"__name__": "readme"}
    try:
        exec(compile(script, str(README), "exec"), namespace)
    finally:
        if "rollout" in namespace:
            namespace["rollout"].driver.service.close()
    trainer, rollout = namespace["trainer"], namespace["rollout"]
    assert trainer.state.global_step == 2
    # Two calls of two trees each (8 completions per step, 4 per prompt), each spending its budget and
    # finishing the rollouts still running then; the excess comes off the next call's budget.
    assert [h["trees"] for h in rollout.history] == [2, 2]
    first, second = rollout.history
    assert first["tokens_budget"] == 256 and first["tokens_used"] == 256 + first["excess"]
    assert second["tokens_budget"] == 256 - first["excess"]
    assert first["tokens_used"] + second["tokens_used"] == 2 * 256 + second["excess"]
    assert all(h["unfinished"] == 0 for h in rollout.history)
    assert all(h["returned_finished"] + h["returned_unfinished"] + h["padded"] == 8 for h in rollout.history)
