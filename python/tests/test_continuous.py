"""The driver's continuous placement (`concurrency`): no round barrier, the budget spent exactly,
and each refill where the round plan of the concurrency, with the evidence now, wants rollouts."""
import pytest

import toy
from trace_alloc import Budget, TraceAllocError, TreeRollout
from trace_alloc.learn import create_learn_state


def driver(service, policy, **options):
    options.setdefault("max_turn_tokens", toy.MAX_TURN)
    return TreeRollout(service, policy, toy.step, dim=toy.DIM, **options)


class Recording(toy.Policy):
    """The toy policy, recording how many rollouts each generate call served."""

    def __init__(self, **kw):
        super().__init__(**kw)
        self.batches = []

    def __call__(self, requests):
        self.batches.append(len(requests))
        return super().__call__(requests)


@pytest.mark.parametrize("tokens", [1, 5, 60, 333, 1000])
def test_spends_exactly_the_token_budget(service, tokens):
    result = driver(service, toy.Policy(seed=tokens), concurrency=6).run(toy.prompts(3), Budget(tokens=tokens))
    assert result.tokens_used == tokens
    assert sum(t.generated for t in result.trajectories) == tokens
    assert service.stats()["trees"] == 0


def test_spends_exactly_the_step_budget(service):
    result = driver(service, toy.Policy(seed=3), concurrency=5).run(toy.prompts(3), Budget(steps=41))
    assert result.steps_used == 41
    assert sum(len(t.nodes) - 1 for t in result.trees) == 41


def test_the_batch_stays_full_until_the_budget_ends(service):
    policy = Recording(seed=11)
    result = driver(service, policy, concurrency=8).run(toy.prompts(4), Budget(tokens=2000))
    assert result.tokens_used == 2000
    # A round driver's batch drains every round; here every generate call but the last few
    # (the budget's end) serves the whole concurrency.
    full = sum(1 for b in policy.batches if b == 8)
    assert full >= len(policy.batches) - 12, policy.batches
    assert result.rounds > 10  # one place per batch in which rollouts ended


def test_refills_follow_the_service_and_fork_below_the_root(service):
    result = driver(service, toy.Policy(seed=12), concurrency=8).run(toy.prompts(4), Budget(tokens=3000))
    starts = [t.start for t in result.trajectories]
    assert any(s != 0 for s in starts)  # forks: some rollouts started mid-episode
    at_root = sum(1 for s in starts if s == 0)
    assert at_root <= result.root_branches <= at_root + result.never_started  # never-started ones were placed too
    for tree, values in zip(result.trees, result.values):
        assert values.visits[0] == sum(1 for t in result.finished if result.trees[t.tree] is tree)


def test_learning_needs_the_round_driver(service):
    with pytest.raises(TraceAllocError, match="round driver"):
        driver(service, toy.Policy(seed=1), concurrency=4, learn=create_learn_state())
    with pytest.raises(TraceAllocError, match="concurrency"):
        driver(service, toy.Policy(seed=1), concurrency=0)


def test_placement_in_the_client(service):
    service.add_trees([{"id": "a", "nodes": [{"embedding": [0.0] * toy.DIM}]}])
    ps = service.place(3, 3, min_per_tree=0)
    assert [p.node for p in ps] == [0, 0, 0] and [p.affinity for p in ps] == ["a/0"] * 3
    assert len({p.ticket for p in ps}) == 3
    more = service.place(1, 3, release=[ps[0].ticket], min_per_tree=0)
    assert len(more) == 1
    with pytest.raises(TraceAllocError):
        service.place(1, 3, release=[ps[0].ticket])  # already released
    service.remove_trees(["a"])



class QuickOrLong(toy.Policy):
    """Half the episodes end at once (a malformed one-token first turn), the others make three
    well-formed calls (9 tokens): the short ones always end first."""

    first = False

    def intended(self):
        if self.first and self.rng.random() < 0.5:
            return [toy.END]
        return [toy.ADD, toy.DIGIT0 + 1, toy.END]

    def __call__(self, requests):
        out = []
        for r in requests:
            self.first = len(r.prefix) == 3  # the prompt alone (toy prompts have 3 tokens)
            out += super().__call__([r])
        return out


def test_a_full_batch_at_the_budget_of_one_batch_cuts_few_rollouts(service):
    # A trainer's step: as many rollouts running as a batch of chains, and about the tokens such a
    # batch takes. Short rollouts end first, so the mean length of the ended ones alone is biased
    # short; refilling on it started more rollouts than the budget could finish, and cut them (80
    # of the 4 runs' rollouts here). Counting the running rollouts' tokens too: 44. (Some cuts are
    # unavoidable: the first 32 alone often need more than the budget.)
    cut = 0
    for seed in range(4):
        result = driver(service, QuickOrLong(seed=seed), concurrency=32).run(toy.prompts(4, seed=1), Budget(tokens=32 * 5))
        assert result.tokens_used == 32 * 5
        cut += len(result.unfinished) + result.never_started
    assert cut <= 48, cut


@pytest.mark.parametrize("concurrency", [8, None])
def test_finishing_starts_the_same_rollouts_as_cutting_and_cuts_none(service, concurrency):
    # Until the budget is spent the two modes make the same requests (the toy policy is seeded), so
    # they start the same rollouts; "finish" then runs the ones still running to their ends.
    runs = {}
    for end in ("cut", "finish"):
        runs[end] = driver(service, toy.Policy(seed=21), concurrency=concurrency, budget_end=end).run(
            toy.prompts(4, seed=2), Budget(tokens=300))
    cut, finish = runs["cut"], runs["finish"]
    assert cut.tokens_used == 300 and cut.unfinished  # the toy's rollouts were running at the end
    assert finish.unfinished == () and finish.tokens_used > 300
    assert len(finish.trajectories) == len(cut.trajectories) and finish.never_started == cut.never_started
    assert sorted((t.tree, t.start) for t in finish.trajectories) == sorted((t.tree, t.start) for t in cut.trajectories)
    # What finishing generated past the budget is exactly the cut rollouts' missing rest.
    assert finish.tokens_used - 300 == sum(t.generated for t in finish.trajectories) - sum(t.generated for t in cut.trajectories)
    assert service.stats()["trees"] == 0
