"""trace_alloc.trl's rollout_func contract, with a stand-in trainer (no trl needed here; the
real GRPOTrainer is in test_trl_trainer.py)."""
from types import SimpleNamespace

import numpy as np
import pytest

import toy
from trace_alloc import Budget, TraceAllocError
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
    assert len(result.trees) == 3 and result.tokens_used == 240
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
