"""trace_alloc.trl's rollout_func contract, with a stand-in trainer (no trl needed here; the
real GRPOTrainer is in test_trl_trainer.py)."""
from types import SimpleNamespace

import numpy as np
import pytest

import toy
from trace_alloc import Budget, EnvStep, TraceAllocError
from trace_alloc.tree import RolloutTree, TreeNode, trajectory
from trace_alloc.trl import TraceRolloutFunc, env_reward, prompt_groups, spread_order

PROMPTS = toy.prompts(4, seed=3)
EOS = toy.END


def trainer(generations=3, evaluation=2, training=True):
    return SimpleNamespace(num_generations=generations, num_generations_eval=evaluation,
                           model=SimpleNamespace(training=training), processing_class=SimpleNamespace(eos_token_id=EOS))


def rollout_func(service, tokens, **options):
    policy = toy.Policy(seed=tokens)
    return TraceRolloutFunc(service, lambda requests, _trainer: policy(requests), toy.step,
                            prepare=lambda name: PROMPTS[int(name[1:])], dim=toy.DIM, max_turn_tokens=toy.MAX_TURN,
                            budget=lambda trees: Budget(tokens=tokens * trees), **options)


def test_prompt_groups_are_runs_of_equal_prompts_cut_at_the_group_size():
    assert prompt_groups(["a", "a", "a", "b", "b", "b"], 3) == [(0, 3), (3, 3)]
    assert prompt_groups(["a"] * 4, 2) == [(0, 2), (2, 2)]
    assert prompt_groups(["a", "b", "a"], 4) == [(0, 1), (1, 1), (2, 1)]


def test_one_completion_per_entry_from_its_own_tree(service):
    func = rollout_func(service, 80)
    prompts = ["p0"] * 3 + ["p1"] * 3 + ["p2"] * 3
    out = func(prompts, trainer())
    assert set(out) == {"prompt_ids", "completion_ids", "logprobs", "env_mask", "env_reward"}
    assert all(len(out[k]) == 9 for k in out)
    for i, name in enumerate(prompts):
        assert out["prompt_ids"][i] == list(PROMPTS[int(name[1:])].tokens)
        assert len(out["completion_ids"][i]) == len(out["logprobs"][i]) == len(out["env_mask"][i]) >= 1
        assert all(lp == 0.0 for lp, m in zip(out["logprobs"][i], out["env_mask"][i]) if not m)
    result = func.last_result
    # budget_end="finish" (the default): no rollout is cut, and what they spent past the budget is owed.
    assert len(result.trees) == 3 and result.tokens_used >= 240 and result.unfinished == ()
    assert func.excess == result.tokens_used - 240
    # Completions come from distinct leaves, finished ones first.
    finished = {(x.tree, x.completion_ids) for x in result.finished}
    for t in range(3):
        mine = [tuple(c) for c in out["completion_ids"][3 * t:3 * t + 3]]
        rewards = out["env_reward"][3 * t:3 * t + 3]
        assert len(set(mine)) == len(mine) or len(result.trajectories) < 3
        if sum(1 for x in result.finished if x.tree == t) >= 3:
            assert all(r is not None for r in rewards) and all((t, c) in finished for c in mine)
    h = func.history[-1]
    assert h["returned_finished"] + h["returned_unfinished"] + h["padded"] == 9


def test_eval_mode_uses_the_eval_group_size(service):
    func = rollout_func(service, 40)
    out = func(["p0"] * 4, trainer(training=False))
    assert len(out["prompt_ids"]) == 4
    assert len(func.last_result.trees) == 2  # two groups of num_generations_eval = 2
    func(["p0"] * 4, trainer(training=True))
    assert len(func.last_result.trees) == 2  # a run of 4 cut at num_generations = 3: groups of 3 and 1
    assert func.history[-1]["trees"] == 2


def test_too_small_a_budget_pads_with_unscored_completions(service):
    func = rollout_func(service, 1)
    out = func(["p0"] * 3 + ["p1"] * 3, trainer())
    assert len(out["completion_ids"]) == 6
    pads = [i for i, c in enumerate(out["completion_ids"]) if c == [EOS] and out["env_mask"][i] == [0]]
    assert pads and all(out["env_reward"][i] is None for i in pads)
    assert func.history[-1]["padded"] == len(pads)


def test_tree_advantages_ride_along_per_token(service):
    func = rollout_func(service, 150, attach_advantages=True)
    out = func(["p0"] * 3 + ["p3"] * 3, trainer())
    assert len(out["tree_advantages"]) == 6
    for adv, ids, mask in zip(out["tree_advantages"], out["completion_ids"], out["env_mask"]):
        assert len(adv) == len(ids)
        assert all(a == 0.0 for a, m in zip(adv, mask) if not m)
    assert any(a != 0.0 for row in out["tree_advantages"] for a in row)
    assert func.last_token_advantages == out["tree_advantages"]


def test_spread_order_visits_every_subtree_before_a_second_leaf_of_any():
    tree = RolloutTree("t", (1,), [TreeNode(-1)])
    for parent in (0, 0, 0, 1, 1, 1, 2):  # nodes 1-3 under the root; 4-6 under 1; 7 under 2
        tree.add(TreeNode(parent, (5,), (0.0,), (), True, 1.0))
    trajectories = [trajectory(tree, 0, 0, leaf, 1) for leaf in (4, 5, 6, 7, 3)]
    order = spread_order(trajectories, range(5))
    assert [trajectories[j].path[1] for j in order[:3]] == [1, 2, 3]
    assert sorted(order) == list(range(5))


def test_the_reward_function_returns_the_outcomes_and_needs_them():
    assert env_reward(prompts=["x"], completions=["y"], env_reward=[1.0, None]) == [1.0, None]
    with pytest.raises(TraceAllocError):
        env_reward(prompts=["x"], completions=["y"])


def test_bad_options_are_refused(service):
    with pytest.raises(TraceAllocError) as info:
        rollout_func(service, 10, selection="best")
    assert info.value.field == "selection"
    with pytest.raises(TraceAllocError):
        rollout_func(service, 10, share="half")
    assert np.isfinite(rollout_func(service, 10).driver.max_turn_tokens)


# -- the supported TRL range, and the one private hook -------------------------------------------

def test_supported_trl_versions_pass_and_others_are_refused_naming_both(monkeypatch):
    from trace_alloc.trl import OVERRIDE_ENV, SUPPORTED_TRL, check_trl_version

    monkeypatch.delenv(OVERRIDE_ENV, raising=False)
    for ok in ("1.13.0", "1.13.7", "1.13.1.dev0", None):  # None: trl not installed, the module still imports
        check_trl_version(ok)
    for bad in ("1.12.9", "1.14.0", "2.0.0", "0.29.1", "main"):
        with pytest.raises(TraceAllocError) as info:
            check_trl_version(bad)
        assert info.value.code == "unsupported_version" and info.value.field == "trl"
        assert "trl %s is installed" % bad in str(info.value) and SUPPORTED_TRL in str(info.value)
        assert OVERRIDE_ENV in str(info.value) and "pip install 'trl%s'" % SUPPORTED_TRL in str(info.value)
    monkeypatch.setenv(OVERRIDE_ENV, "1")
    check_trl_version("1.14.0")


def test_importing_the_module_under_an_unsupported_trl_raises_unless_overridden():
    import os
    import subprocess
    import sys

    import trace_alloc
    from trace_alloc.trl import OVERRIDE_ENV

    package_dir = os.path.dirname(os.path.dirname(trace_alloc.__file__))
    code = ("import sys; sys.path.insert(0, %r)\n"
            "from importlib import metadata\n"
            "real = metadata.version\n"
            "metadata.version = lambda name: '1.14.0' if name == 'trl' else real(name)\n"
            "import trace_alloc.trl\n"
            "print('imported')\n" % package_dir)
    env = {k: v for k, v in os.environ.items() if k != OVERRIDE_ENV}
    refused = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert refused.returncode != 0
    assert "TraceAllocError: unsupported_version: trl 1.14.0 is installed" in refused.stderr
    allowed = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env={**env, OVERRIDE_ENV: "1"})
    assert allowed.returncode == 0 and allowed.stdout.strip() == "imported", allowed.stderr


def test_the_trl_extra_declares_the_supported_range():
    import pathlib
    import re

    from trace_alloc.trl import SUPPORTED_TRL

    pyproject = (pathlib.Path(__file__).resolve().parents[1] / "pyproject.toml").read_text()
    extra = re.search(r"^trl = \[(.*)\]$", pyproject, re.M)
    assert extra is not None, "pyproject.toml has no trl extra"
    assert '"trl%s"' % SUPPORTED_TRL in extra.group(1)


# -- concurrency: continuous placement by default, the round driver on request ------------------

def test_by_default_as_many_rollouts_run_as_the_call_returns_completions(service):
    requests = []
    policy = toy.Policy(seed=5)

    def generate(reqs, _trainer):
        requests.append(len(reqs))
        return policy(reqs)

    func = TraceRolloutFunc(service, generate, toy.step, prepare=lambda name: PROMPTS[int(name[1:])], dim=toy.DIM,
                            max_turn_tokens=toy.MAX_TURN, budget=lambda trees: Budget(tokens=120 * trees))
    out = func(["p0"] * 3 + ["p1"] * 3, trainer())
    h = func.history[-1]
    assert h["continuous"] and h["concurrency"] == 6 and func.last_result.plans == ()  # no rounds, no plans
    assert func.last_result.tokens_used >= 240 and func.last_result.unfinished == ()  # the budget spent, nothing cut
    assert max(requests) == 6  # the generator's batch: the 6 completions TRL asked for
    assert len(out["completion_ids"]) == 6
    # root_share counts the placed rollouts (the continuous driver keeps no plans to count them from).
    placed = len(func.last_result.trajectories) + func.last_result.never_started
    assert h["root_share"] == func.last_result.root_branches / placed and 0 < h["root_share"] <= 1


def test_concurrency_may_be_a_number_a_function_of_the_trees_or_the_round_driver(service):
    fixed = rollout_func(service, 60, concurrency=2)
    fixed(["p0"] * 3 + ["p1"] * 3, trainer())
    assert fixed.history[-1]["concurrency"] == 2 and fixed.last_result.tokens_used >= 120
    per_tree = rollout_func(service, 60, concurrency=lambda trees: 3 * trees)
    per_tree(["p0"] * 3 + ["p1"] * 3 + ["p2"] * 3, trainer())
    assert per_tree.history[-1]["concurrency"] == 9
    rounds = rollout_func(service, 60, concurrency=None)
    rounds(["p0"] * 3 + ["p1"] * 3, trainer())
    h = rounds.history[-1]
    assert not h["continuous"] and h["concurrency"] is None and len(rounds.last_result.plans) == h["rounds"] >= 1
    assert rounds.last_result.tokens_used >= 120 and rounds.last_result.unfinished == ()


def test_bad_concurrency_is_refused_naming_the_field(service):
    from trace_alloc.learn import create_learn_state

    for bad in (0, -1, 2.5, True, "all"):
        with pytest.raises(TraceAllocError) as info:
            rollout_func(service, 10, concurrency=bad)
        assert info.value.field == "concurrency"
    func = rollout_func(service, 10, concurrency=lambda trees: 0)
    with pytest.raises(TraceAllocError) as info:
        func(["p0"] * 3, trainer())
    assert info.value.field == "concurrency"
    with pytest.raises(TraceAllocError) as info:  # learning alpha, tau reads the round driver's plans
        rollout_func(service, 10, learn=create_learn_state())
    assert info.value.field == "concurrency" and "concurrency=None" in str(info.value)
    assert rollout_func(service, 10, learn=create_learn_state(), concurrency=None).concurrency is None


def test_the_rollout_function_takes_the_package_default_credit(service):
    from trace_alloc import TreeRollout

    default = TreeRollout(service, None, toy.step, max_turn_tokens=2).advantage
    assert rollout_func(service, 10).driver.advantage == default  # no literal of its own
    assert rollout_func(service, 10, advantage="tree-grpo").driver.advantage == "tree-grpo"


def fake_grpo_trainer(torch, returns_advantages=True):
    """A stand-in for TRL's GRPOTrainer with the private hook TreeGRPOTrainer overrides."""
    class FakeGRPOTrainer:
        def __init__(self, rollout_func=None, loss_type="dapo"):
            self.rollout_func, self.loss_type = rollout_func, loss_type

        def _generate_and_score_completions(self, inputs):
            out = {"completion_ids": torch.ones((2, 3), dtype=torch.long)}
            if returns_advantages:
                out["advantages"] = torch.tensor([0.5, -0.5])
            return out
    return FakeGRPOTrainer


def test_the_private_hook_is_checked_and_replaced_in_one_place(service):
    from conftest import require_torch
    from trace_alloc.trl import PRIVATE_HOOK, _tree_trainer_class

    torch = require_torch()
    func = rollout_func(service, 10, attach_advantages=True)
    func.last_token_advantages = [[0.25, 0.0], [1.0, 2.0, 3.0]]
    trainer = _tree_trainer_class(fake_grpo_trainer(torch))(rollout_func=func)
    out = getattr(trainer, PRIVATE_HOOK)(None)
    assert out["advantages"].tolist() == [[0.25, 0.0, 0.0], [1.0, 2.0, 3.0]]  # (B, T): the tree's, per token

    class NoHook:
        pass
    with pytest.raises(TraceAllocError) as info:
        _tree_trainer_class(NoHook)
    assert info.value.code == "unsupported_version" and PRIVATE_HOOK in str(info.value)
    trainer = _tree_trainer_class(fake_grpo_trainer(torch, returns_advantages=False))(rollout_func=func)
    with pytest.raises(TraceAllocError) as info:
        getattr(trainer, PRIVATE_HOOK)(None)
    assert info.value.code == "unsupported_version" and "returned no advantages" in str(info.value)
    with pytest.raises(TraceAllocError) as info:
        _tree_trainer_class(fake_grpo_trainer(torch))(rollout_func=func, loss_type="grpo")
    assert info.value.field == "loss_type"


# -- the budget's end: finish the running rollouts (default) or cut them -----------------------

@pytest.mark.parametrize("concurrency", ["batch", None])
def test_finishing_carries_the_excess_so_the_calls_spend_the_budgets_total(service, concurrency):
    options = {} if concurrency == "batch" else {"concurrency": None}
    func = rollout_func(service, 50, **options)
    asked = 50 * 2
    spent = []
    for call in range(6):
        owed = func.excess
        func(["p0"] * 3 + ["p1"] * 3, trainer())
        h = func.history[-1]
        # This call's budget: what was asked, less what earlier calls owed (at most half of it).
        assert h["tokens_budget"] == asked - min(owed, asked // 2)
        assert func.last_result.unfinished == () and h["returned_unfinished"] == 0
        spent.append(h["tokens_used"])
    assert any(h["excess"] > 0 for h in func.history)  # the toy's rollouts were still running at some budget's end
    assert sum(spent) == 6 * asked + func.excess  # the run's tokens: the budgets' total and what is still owed


def test_cutting_spends_each_budget_exactly_and_owes_nothing(service):
    func = rollout_func(service, 50, budget_end="cut")
    for _ in range(3):
        func(["p0"] * 3 + ["p1"] * 3, trainer())
        assert func.last_result.tokens_used == 100 and func.excess == 0
        assert func.history[-1]["tokens_budget"] == 100


def test_a_bad_budget_end_is_refused_naming_the_field(service):
    with pytest.raises(TraceAllocError) as e:
        rollout_func(service, 50, budget_end="stop")
    assert e.value.field == "budget_end" and "cut, finish" in str(e.value)


def test_the_uncertainty_option_reaches_the_driver(service):
    assert rollout_func(service, 10).driver.uncertainty == "next"
    assert rollout_func(service, 10, uncertainty="turn").driver.uncertainty == "turn"
    with pytest.raises(TraceAllocError) as e:
        rollout_func(service, 10, uncertainty="after")
    assert e.value.field == "uncertainty" and "turn, next" in str(e.value)


def five_turns(state, turn):
    """Every episode takes exactly five turns (3 tokens each when well-formed): a batch of them
    costs five times its first turns."""
    calls = state.calls + 1
    return EnvStep(observation=(toy.EQ, toy.DIGIT0), state=toy.State(state.value, state.target, calls),
                   done=calls >= 5 or len(turn) != 3, reward=float(turn[1] % 2))


def test_finishing_keeps_the_excess_bounded_when_a_batch_costs_more_than_the_budget(service):
    # Six completions asked for, six rollouts at once, and a budget whose half still grants six
    # first turns (5 tokens each) but that does not hold six episodes (15 tokens each): had every call still started the whole batch, what is owed would grow by
    # the difference every call. From the second call on, the batch starts no more rollouts than
    # the budget is expected to finish (at the tokens per rollout of the calls before), so what is
    # owed stays within one batch's overrun and the calls spend the budgets' total.
    policy = toy.Policy(seed=4, malformed=0.0)
    func = TraceRolloutFunc(service, lambda requests, _trainer: policy(requests), five_turns,
                            prepare=lambda name: PROMPTS[int(name[1:])], dim=toy.DIM, max_turn_tokens=toy.MAX_TURN,
                            budget=lambda trees: Budget(tokens=30 * trees))
    asked = 30 * 2
    for _ in range(12):
        func(["p0"] * 3 + ["p1"] * 3, trainer())
    spent = sum(h["tokens_used"] for h in func.history)
    assert spent == 12 * asked + func.excess
    assert func.excess <= 6 * 15  # at most one batch of episodes' worth, not a growing debt
