"""The tree-rollout driver against the real service, on a seeded toy agent task (tests/toy.py)."""
import math

import numpy as np
import pytest

import toy
from trace_alloc import Budget, EnvStep, TraceAllocError, TreeRollout, Turn
from trace_alloc.learn import create_learn_state


def driver(service, policy, **options):
    options.setdefault("max_turn_tokens", toy.MAX_TURN)
    return TreeRollout(service, policy, toy.step, dim=toy.DIM, **options)


def generated_in_trees(result):
    """Tokens in the trees' turns plus the cut turns of unfinished rollouts."""
    in_nodes = sum(len(n.tokens) for t in result.trees for n in t.nodes)
    cut = sum(sum(1 for v in t.token_nodes if v < 0) for t in result.unfinished)
    return in_nodes + cut


@pytest.mark.parametrize("tokens", [1, 2, 7, 60, 333])
def test_spends_exactly_the_token_budget(service, tokens):
    result = driver(service, toy.Policy(seed=tokens)).run(toy.prompts(4), Budget(tokens=tokens))
    assert result.tokens_used == tokens
    assert generated_in_trees(result) == tokens  # every generated token is in a node or a cut turn
    assert sum(t.generated for t in result.trajectories) == tokens
    assert service.stats()["trees"] == 0  # the run removed its trees


def test_spends_exactly_the_step_budget(service):
    result = driver(service, toy.Policy(seed=3)).run(toy.prompts(3), Budget(steps=41))
    assert result.steps_used == 41
    assert sum(len(t.nodes) - 1 for t in result.trees) == 41  # one node per environment step
    assert result.unfinished == () or all(t.reward is None for t in result.unfinished)


def test_both_budgets_stop_at_whichever_ends_first(service):
    result = driver(service, toy.Policy(seed=4)).run(toy.prompts(3), Budget(tokens=10_000, steps=25))
    assert (result.steps_used, result.tokens_used < 10_000) == (25, True)


def test_every_request_continues_its_node_prefix_and_grants_never_pass_the_budget(service):
    policy = toy.Policy(seed=5, malformed=0.3)
    budget = 97
    result = driver(service, policy, rollouts_per_round=5).run(toy.prompts(3, seed=2), Budget(tokens=budget))
    trees = result.trees
    granted_at_once = []
    for req in policy.requests:
        tree = trees[req.tree]
        assert req.prefix[:len(req.prefix) - req.resumed] == tree.prefix(req.node)
        assert 1 <= req.max_tokens <= toy.MAX_TURN - req.resumed
        granted_at_once.append(req.max_tokens)
    assert any(req.node != 0 for req in policy.requests)  # generation resumed from middle turns
    assert result.tokens_used == budget


def test_the_service_backed_up_exactly_the_finished_rollouts(service):
    result = driver(service, toy.Policy(seed=6)).run(toy.prompts(4, seed=1), Budget(tokens=400))
    assert len(result.finished) > 8 and result.rounds > 2
    for t, (tree, values) in enumerate(zip(result.trees, result.values)):
        assert values.parent.tolist() == [n.parent for n in tree.nodes]
        assert values.terminal.tolist() == [n.done for n in tree.nodes]
        mine = [x for x in result.finished if x.tree == t]
        assert values.visits[0] == len(mine)
        if mine:
            assert values.reward[0] == pytest.approx(np.mean([x.reward for x in mine]), abs=1e-12)
        for v, node in enumerate(tree.nodes):
            through = [x for x in mine if v in x.path]
            assert values.visits[v] == len(through)
            if node.done:
                assert (values.visits[v], values.reward[v]) == (1, node.reward)


def test_every_planned_branch_is_started_from_its_node(service):
    result = driver(service, toy.Policy(seed=7)).run(toy.prompts(4), Budget(tokens=300))
    planned = sum(a.branches for p in result.plans for tp in p.trees for a in tp.allocations)
    assert planned == len(result.trajectories) + result.never_started
    assert all(p.unallocated in (0, None) for p in result.plans)
    starts = sorted(x.start for x in result.trajectories)
    assert starts.count(0) <= result.root_branches and any(s > 0 for s in starts)


def test_trajectories_carry_tokens_logprobs_and_the_env_mask(service):
    result = driver(service, toy.Policy(seed=8)).run(toy.prompts(2), Budget(tokens=120))
    for x in result.trajectories:
        tree = result.trees[x.tree]
        assert x.prompt_ids == tree.prompt
        assert len(x.completion_ids) == len(x.logprobs) == len(x.env_mask) == len(x.token_nodes)
        rebuilt = [tok for v in x.path[1:] for tok in tree.nodes[v].tokens + tree.nodes[v].observation]
        assert list(x.completion_ids[:len(rebuilt)]) == rebuilt
        for tok_node, generated, lp in zip(x.token_nodes, x.env_mask, x.logprobs):
            if not generated:
                assert lp == 0.0 and tok_node >= 0
            else:
                assert lp == pytest.approx(-math.log(4.0))
        if x.finished:
            assert tree.nodes[x.leaf].done and x.reward == tree.nodes[x.leaf].reward


def test_same_seed_same_run(service):
    a = driver(service, toy.Policy(seed=9)).run(toy.prompts(3), Budget(tokens=150))
    b = driver(service, toy.Policy(seed=9)).run(toy.prompts(3), Budget(tokens=150))
    assert [x.completion_ids for x in a.trajectories] == [x.completion_ids for x in b.trajectories]
    assert [p.raw["trees"] for p in a.plans] == [p.raw["trees"] for p in b.plans]


def test_rule_is_passed_through_only_when_given(service):
    default = service.stats()["params"]["rule"]
    result = driver(service, toy.Policy(seed=10)).run(toy.prompts(2), Budget(tokens=40))
    assert {p.params.rule for p in result.plans} == {default}
    result = driver(service, toy.Policy(seed=10), rule="v1").run(toy.prompts(2), Budget(tokens=40))
    assert {p.params.rule for p in result.plans} == {"v1"}


def test_the_learner_takes_one_step_per_run_and_the_service_gets_its_alpha_tau(service):
    d = driver(service, toy.Policy(seed=11), learn=create_learn_state())
    d.run(toy.prompts(4), Budget(tokens=500))
    assert d.learn_state.t == 1
    params = service.stats()["params"]
    assert (params["alpha"], params["tau"]) == (d.learn_state.alpha, d.learn_state.tau)
    assert (d.learn_state.alpha, d.learn_state.tau) != (1.0, 0.5)


def test_a_bad_turn_names_the_tree_node_and_field_and_leaves_no_trees(service):
    def too_long(requests):
        return [Turn(tokens=[1] * (r.max_tokens + 1), logprobs=[0.0] * (r.max_tokens + 1), embedding=np.zeros(toy.DIM))
                for r in requests]
    with pytest.raises(TraceAllocError) as info:
        driver(service, too_long).run(toy.prompts(2), Budget(tokens=30))
    assert (info.value.field, info.value.node, info.value.tree) == ("tokens", 0, "rollout1-0")
    assert service.stats()["trees"] == 0

    def wrong_dim(requests):
        return [Turn(tokens=[toy.END], logprobs=[0.0], embedding=np.zeros(toy.DIM + 1)) for _ in requests]
    with pytest.raises(TraceAllocError) as info:
        driver(service, wrong_dim).run(toy.prompts(2), Budget(tokens=30))
    assert info.value.field == "embedding"

    def nan_entropy(requests):
        return [Turn(tokens=[toy.END], logprobs=[0.0], embedding=np.zeros(toy.DIM), entropy=math.nan) for _ in requests]
    with pytest.raises(TraceAllocError) as info:
        driver(service, nan_entropy).run(toy.prompts(2), Budget(tokens=30))
    assert (info.value.field, info.value.node) == ("entropy", 0)
    assert service.stats()["trees"] == 0  # (a turn without an embedding is sketched: test_any_generator.py)


def test_a_stateless_env_that_never_ends_is_still_stopped_by_the_budget(service):
    def endless(state, turn):
        return EnvStep(observation=(toy.EQ,), state=state)
    result = TreeRollout(service, toy.Policy(seed=12), endless, dim=toy.DIM, max_turn_tokens=toy.MAX_TURN).run(
        toy.prompts(2), Budget(tokens=64))
    assert result.tokens_used == 64 and result.finished == ()


class TokenEntropyPolicy(toy.Policy):
    """toy.Policy whose entropy is the mean of (token % 7) / 10 over the tokens returned, so a
    turn's token-weighted entropy, over however many pieces it came in, is known from its tokens."""

    def __call__(self, requests):
        return [Turn(tokens=t.tokens, logprobs=t.logprobs, embedding=t.embedding, stopped=t.stopped,
                     entropy=turn_entropy(t.tokens)) for t in super().__call__(requests)]


def turn_entropy(tokens):
    return sum((x % 7) / 10 for x in tokens) / len(tokens)


def watching_extends(service):
    """After every `extend`: the uncertainty of every node the service holds, and which nodes the
    request updated (tree id, node)."""
    seen = []
    original = service.extend

    def extend(*args, updates=None, **rest):
        answer = original(*args, updates=updates, **rest)
        held = {t.id: t.uncertainty.copy() for t in service.values()}
        seen.append((held, [(u["tree"], u["node"]) for u in updates or ()]))
        return answer

    service.extend = extend
    return seen


@pytest.mark.parametrize("budget_end", ["cut", "finish"])
@pytest.mark.parametrize("concurrency", [None, 3])
@pytest.mark.parametrize("uncertainty", ["turn", "next"])
def test_the_service_holds_each_nodes_uncertainty_as_asked_after_every_extend(service, uncertainty, concurrency,
                                                                             budget_end):
    seen = watching_extends(service)
    policy = TokenEntropyPolicy(seed=11, malformed=0.3)
    # rule v1 spreads rollouts over open nodes, so the round driver too starts some below a root
    result = driver(service, policy, uncertainty=uncertainty, concurrency=concurrency, rollouts_per_round=4,
                    budget_end=budget_end, rule="v1").run(toy.prompts(3, seed=4), Budget(tokens=151))
    trees = {t.id: t for t in result.trees}

    def want(tree, v, size):
        """What node v should hold while its tree has `size` nodes (children come after parents)."""
        if uncertainty == "turn":  # its own turn's entropy; a root has no turn and was sent none
            return 0.0 if v == 0 else turn_entropy(tree.nodes[v].tokens)
        children = [c for c in range(v + 1, size) if tree.nodes[c].parent == v]  # each child once
        return sum(turn_entropy(tree.nodes[c].tokens) for c in children) / len(children) if children else 0.0

    for held, _ in seen:
        for tid, u in held.items():
            assert [round(x, 12) for x in u] == [round(want(trees[tid], v, len(u)), 12) for v in range(len(u))], tid
    assert [seen[-1][0][t.id].shape[0] for t in result.trees] == [len(t.nodes) for t in result.trees]  # all sent
    if budget_end == "finish":  # a turn granted less than it needed at the budget's end resumes
        assert any(r.resumed > 0 for r in policy.requests)  # so some turns came in pieces
    updated = [node for _, nodes in seen for node in nodes]
    if uncertainty == "next":
        assert any(v > 0 for _, v in updated)  # a node below a root gained a child after it was sent
        assert len(set(updated)) < len(updated)  # a node was updated by more than one extend
    else:
        assert updated == []


def test_uncertainty_must_be_turn_or_next(service):
    with pytest.raises(TraceAllocError) as info:
        driver(service, toy.Policy(seed=1), uncertainty="after")
    assert info.value.field == "uncertainty"
