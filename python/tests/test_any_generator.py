"""A driver run without hidden states: token-id generators (trace_alloc.generators), the token
sketch the driver computes for turns without an embedding, and the affinity key on requests."""
import math
import zlib

import numpy as np
import pytest

import toy
from trace_alloc import Budget, Request, TraceAllocError, TreeRollout, Turn
from trace_alloc.generators import TokenTurns, nll_uncertainty
from trace_alloc.sketch import TokenSketch


class ToyTokens:
    """toy.Policy as a token generator: token ids, log-probs and finished flags only."""

    def __init__(self, seed):
        self.policy = toy.Policy(seed=seed)

    def __call__(self, prompt_token_ids, max_tokens):
        requests = [Request(i, 0, tuple(p), m, 0) for i, (p, m) in enumerate(zip(prompt_token_ids, max_tokens))]
        turns = self.policy(requests)
        return [t.tokens for t in turns], [t.logprobs for t in turns], [t.stopped for t in turns]


def recording(service):
    """Keeps every node row `extend` sends (tree id, parent, embedding)."""
    sent = []
    original = service.extend

    def extend(tree_id=None, parent=None, embedding=None, **rest):
        if tree_id is not None:
            sent.extend(zip(tree_id.tolist(), parent.tolist(), np.asarray(embedding)))
        return original(tree_id, parent, embedding, **rest)

    service.extend = extend
    return sent


@pytest.mark.parametrize("tokens", [1, 13, 200])
def test_a_run_without_embeddings_sketches_every_turn_and_spends_exactly_the_budget(service, tokens):
    sent = recording(service)
    gen = TokenTurns(ToyTokens(seed=tokens), vocab_size=20)
    result = TreeRollout(service, gen, toy.step, max_turn_tokens=toy.MAX_TURN).run(toy.prompts(3), Budget(tokens=tokens))
    assert result.tokens_used == tokens
    sketch = TokenSketch()  # the driver's default: width 64
    by_tree = {t.id: t for t in result.trees}
    counters = {t.id: 0 for t in result.trees}
    for tree_id, parent, row in sent:
        counters[tree_id] += 1
        node = by_tree[tree_id].nodes[counters[tree_id]]
        assert node.parent == parent
        # The whole turn's sketch, also for turns the budget split into pieces (float64 on the wire).
        assert np.array_equal(row, sketch(node.tokens).astype(np.float64))
    assert sum(counters.values()) == sum(len(t.nodes) - 1 for t in result.trees)
    assert service.stats()["trees"] == 0


def test_a_sketched_run_reaches_forks_and_plans_on_them(service):
    result = TreeRollout(service, TokenTurns(ToyTokens(seed=3), vocab_size=20), toy.step, max_turn_tokens=toy.MAX_TURN,
                         dim=32).run(toy.prompts(4, seed=1), Budget(tokens=400))
    assert result.rounds > 2 and len(result.finished) > 8
    assert any(a.node != 0 for p in result.plans for tp in p.trees for a in tp.allocations)  # forks were placed


def test_uncertainty_is_the_mean_negative_log_prob_over_ln_vocab():
    assert nll_uncertainty([-math.log(4.0)] * 3, 16) == pytest.approx(math.log(4.0) / math.log(16.0))
    assert nll_uncertainty([], 16) == 0.0
    turns = TokenTurns(lambda p, m: ([[7, 3]], [[-1.0, -3.0]], [True]), vocab_size=100)(
        [toy_request(prefix=(1, 2), max_tokens=4)])
    assert turns[0].entropy == pytest.approx(2.0 / math.log(100.0))
    assert (turns[0].tokens, turns[0].stopped, turns[0].embedding) == ([7, 3], True, None)


def toy_request(prefix, max_tokens, tree_id="t", start=0):
    return Request(0, start, tuple(prefix), max_tokens, 0, tree_id=tree_id, start=start)


def test_a_token_generator_gets_whole_prefixes_and_grants_and_affinity_when_it_asks():
    seen = {}

    def gen(prompt_token_ids, max_tokens, affinity):
        seen.update(prompts=prompt_token_ids, caps=max_tokens, affinity=affinity)
        return [[1]] * len(max_tokens), [[0.0]] * len(max_tokens), [False] * len(max_tokens)

    TokenTurns(gen, vocab_size=10)([toy_request((4, 5), 3, "q", 2), toy_request((6,), 1, "q", 0)])
    assert seen == {"prompts": [[4, 5], [6]], "caps": [3, 1], "affinity": ["q/2", "q/0"]}


def test_what_a_token_generator_returns_is_checked():
    with pytest.raises(TraceAllocError) as info:
        TokenTurns(lambda p, m: ([[1]], [[0.0]]), vocab_size=10)([toy_request((1,), 2)])
    assert info.value.field == "generate"
    with pytest.raises(TraceAllocError):
        TokenTurns(lambda p, m: ([[1], [2]], [[0.0]], [True]), vocab_size=10)([toy_request((1,), 2)])
    with pytest.raises(TraceAllocError) as info:
        TokenTurns(lambda p, m: None, vocab_size=1)
    assert info.value.field == "vocab_size"


def test_every_request_names_its_placement_and_siblings_share_the_affinity_key(service):
    policy = toy.Policy(seed=21)
    result = TreeRollout(service, policy, toy.step, dim=toy.DIM, max_turn_tokens=toy.MAX_TURN).run(
        toy.prompts(3), Budget(tokens=300))
    placed = {(tp.id, a.node) for p in result.plans for tp in p.trees for a in tp.allocations}
    keys = set()
    for req in policy.requests:
        tree = result.trees[req.tree]
        assert req.tree_id == tree.id and (req.tree_id, req.start) in placed
        assert req.affinity == "%s/%d" % (tree.id, req.start)
        assert req.prefix[:len(tree.prefix(req.start))] == tree.prefix(req.start)  # the shared prefix of its key
        keys.add(req.affinity)
    # Some placements started several rollouts: their requests share one key (one engine's cache).
    starts = [(x.tree, x.start) for x in result.trajectories]
    assert any(starts.count(s) > 1 for s in starts)
    assert len({zlib.crc32(k.encode()) % 4 for k in keys}) > 1  # a stable hash spreads placements over engines


def test_a_run_mixing_hidden_states_and_sketches_is_refused(service):
    calls = {"n": 0}

    def mixed(requests):
        calls["n"] += 1
        emb = np.zeros(toy.DIM) if calls["n"] == 1 else None
        return [Turn(tokens=[toy.ADD, toy.DIGIT0 + 1, toy.END], logprobs=[0.0] * 3, embedding=emb) for _ in requests]

    with pytest.raises(TraceAllocError) as info:
        TreeRollout(service, mixed, toy.step, dim=toy.DIM, max_turn_tokens=toy.MAX_TURN).run(toy.prompts(2), Budget(tokens=60))
    assert info.value.field == "embedding" and "not both" in str(info.value)
    assert service.stats()["trees"] == 0


def test_an_embedding_without_dim_and_a_sketch_of_another_width_are_refused(service):
    with pytest.raises(TraceAllocError) as info:
        TreeRollout(service, toy.Policy(seed=1), toy.step, max_turn_tokens=toy.MAX_TURN).run(toy.prompts(2), Budget(tokens=20))
    assert (info.value.field, info.value.node) == ("embedding", 0) and "dim" in str(info.value)
    with pytest.raises(TraceAllocError) as info:
        TreeRollout(service, toy.Policy(seed=1), toy.step, max_turn_tokens=toy.MAX_TURN, dim=8, sketch=TokenSketch(16))
    assert info.value.field == "sketch"
