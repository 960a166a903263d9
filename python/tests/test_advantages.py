"""Tree advantages on a hand-computed tree (no service needed)."""
import math

import numpy as np
import pytest

from trace_alloc import TraceAllocError, TreeValues
from trace_alloc.advantages import (DEFAULT_METHOD, DEFAULT_SHARE, METHODS, SHARES, TreeAdvantages, compute_advantages,
                                    branch_values, segment_parents, treerl_node_advantages)
from trace_alloc.tree import RolloutTree, TreeNode, trajectory

#        0 (prompt)
#      /   \
#     1     2
#    / \     \
#   3   4     5      3: R = 1, 4: R = 0, 5: R = 1
TURN, OBS = (7, 8), (9,)


def hand_tree():
    tree = RolloutTree("t", (1, 2), [TreeNode(-1)])
    for parent, done, reward in ((0, False, None), (0, False, None), (1, True, 1.0), (1, True, 0.0), (2, True, 1.0)):
        tree.add(TreeNode(parent, TURN, (-0.5, -0.25), () if done else OBS, done, reward))
    trajectories = [trajectory(tree, 0, 0, leaf, 4) for leaf in (3, 4, 5)]
    values = TreeValues("t", np.array([-1, 0, 0, 1, 1, 2]), np.array([2 / 3, 0.5, 1, 1, 0, 1]),
                        np.array([3, 2, 1, 1, 1, 1]), np.zeros(6), np.array([0, 0, 0, 1, 1, 1], dtype=bool))
    return tree, trajectories, values


def test_treerl_per_node():
    _, _, values = hand_tree()
    a = treerl_node_advantages(values)
    want = [0, (-1 / 3) / math.sqrt(2), 2 / 3, 0.5 + 1 / 3, -0.5 - 2 / 3, 1 / 3]
    np.testing.assert_allclose(a, want, rtol=0, atol=1e-15)


def test_tree_grpo_intra_inter_and_both():
    _, trajectories, values = hand_tree()
    intra = compute_advantages("tree-grpo-intra", trajectories, [values]).trajectory
    inter = compute_advantages("tree-grpo-inter", trajectories, [values]).trajectory
    both = compute_advantages("tree-grpo", trajectories, [values]).trajectory
    np.testing.assert_allclose(intra, [1, -1, 0], atol=1e-15)  # 5 is alone under node 2: σ = 0
    s = math.sqrt(2 / 9)
    np.testing.assert_allclose(inter, [(1 / 3) / s, (-2 / 3) / s, (1 / 3) / s], atol=1e-12)
    np.testing.assert_allclose(both, intra + inter, atol=1e-15)


@pytest.mark.parametrize("method", ["treerl", "tree-grpo"])
def test_split_counts_every_node_once_and_repeat_on_every_copy(method):
    _, trajectories, values = hand_tree()
    adv = compute_advantages(method, trajectories, [values])
    split = adv.tokens(trajectories, share="split")
    repeat = adv.tokens(trajectories, share="repeat")
    per_node_split, per_node_repeat = {}, {}
    for j, (x, s, r) in enumerate(zip(trajectories, split, repeat)):
        assert s.shape == (len(x.completion_ids),)
        for k, v in enumerate(x.token_nodes):
            if not x.env_mask[k]:
                assert s[k] == r[k] == 0.0  # environment tokens carry nothing
                continue
            per_node_split.setdefault(v, []).append(s[k])
            per_node_repeat.setdefault(v, []).append(r[k])
            want = adv.node[0][v] if adv.node is not None else adv.trajectory[j]
            assert r[k] == want
    # Node 1 is in two trajectories: each copy of its tokens carries half (per token position).
    if method == "treerl":
        for v, copies in per_node_split.items():
            assert sum(copies) == pytest.approx(adv.node[0][v] * len(TURN), abs=1e-15)
    else:
        half = (adv.trajectory[0] + adv.trajectory[1]) / 2  # node 1: the mean of its two trajectories
        assert sum(per_node_split[1]) == pytest.approx(half * len(TURN), abs=1e-15)


def test_only_the_chosen_trajectories_share_a_node():
    _, trajectories, values = hand_tree()
    adv = compute_advantages("treerl", trajectories, [values])
    (alone,) = adv.tokens(trajectories, indices=[0], share="split")
    assert alone[0] == adv.node[0][1]  # node 1 is only in trajectory 0 of the chosen set
    with pytest.raises(TraceAllocError):
        adv.tokens(trajectories, share="halve")
    with pytest.raises(TraceAllocError):
        compute_advantages("gae", trajectories, [values])


def test_unfinished_trajectories_get_no_tree_grpo_advantage_and_cut_tokens_none():
    tree, trajectories, values = hand_tree()
    cut = trajectory(tree, 0, 2, 2, 3, ((5, 6), (-1.0, -1.0)))
    assert cut.reward is None and cut.token_nodes[-2:] == (-1, -1)
    everything = trajectories + [cut]
    grpo = compute_advantages("tree-grpo", everything, [values])
    assert grpo.trajectory[-1] == 0.0
    np.testing.assert_array_equal(grpo.trajectory[:3], compute_advantages("tree-grpo", trajectories, [values]).trajectory)
    tokens = compute_advantages("treerl", everything, [values]).tokens(everything)[-1]
    assert tokens[-2:].tolist() == [0.0, 0.0]


# The published credits on a second hand-computed tree: a root with three children, the first of
# which is forked twice (two more rollouts start at its second turn, node 4).
#
#              0 (prompt)
#          /   |    \
#         1    2     3          2: R = 0 (a one-turn episode)
#         |          |
#         4          7          7: R = 1
#       / | \
#      5  6  8                  5: R = 1, 6: R = 0, 8: R = 1
#
# Finished leaves below each node, L, and their mean outcome, V:
#   root L 5, V 3/5;  1 and 4: L 3, V 2/3;  2: L 1, V 0;  3 and 7: L 1, V 1;  5, 8: V 1;  6: V 0.
# TreeRL's segments: 1 → 4 is one unforked run (4's parent 1 has no more leaves than 4), and so is
# 3 → 7; so the parent segment of 1, 4, 2, 3 and 7 is the root, and that of 5, 6, 8 is node 4.
FORKED_PARENT = (-1, 0, 0, 0, 1, 4, 4, 3, 4)
FORKED_REWARD = {2: 0.0, 5: 1.0, 6: 0.0, 7: 1.0, 8: 1.0}
GA = {1: 2 / 3 - 3 / 5, 2: -3 / 5, 3: 2 / 5, 4: 2 / 3 - 3 / 5, 5: 2 / 5, 6: -3 / 5, 7: 2 / 5, 8: 2 / 5}
LA = {1: 1 / 15, 2: -3 / 5, 3: 2 / 5, 4: 1 / 15, 5: 1 / 3, 6: -2 / 3, 7: 2 / 5, 8: 1 / 3}
#   A(n) = (GA + LA) / √L:  1 and 4: (2/15)/√3;  2: −6/5;  3 and 7: 4/5;  5 and 8: 11/15;  6: −19/15.
TREERL_LEAF = [0.0, (2 / 15) / math.sqrt(3), -6 / 5, 4 / 5, (2 / 15) / math.sqrt(3), 11 / 15, -19 / 15, 4 / 5, 11 / 15]


def forked_tree():
    tree = RolloutTree("f", (1, 2), [TreeNode(-1)])
    for v in range(1, len(FORKED_PARENT)):
        done = v in FORKED_REWARD
        tree.add(TreeNode(FORKED_PARENT[v], TURN, (-0.5, -0.25), () if done else OBS, done, FORKED_REWARD.get(v)))
    leaves = [2, 5, 6, 7, 8]
    trajectories = [trajectory(tree, 0, 0 if leaf in (2, 5, 7) else 4, leaf, 2) for leaf in leaves]
    visits = np.array([5, 3, 1, 1, 3, 1, 1, 1, 1])
    reward = np.array([3 / 5, 2 / 3, 0, 1, 2 / 3, 1, 0, 1, 1])
    values = TreeValues("f", np.array(FORKED_PARENT), reward, visits, np.zeros(9), np.array([v in FORKED_REWARD for v in range(9)]))
    return tree, trajectories, values


def test_treerl_leaf_on_the_forked_tree_by_hand():
    _, trajectories, values = forked_tree()
    np.testing.assert_array_equal(segment_parents(values.parent, values.visits), [-1, 0, 0, 0, 0, 4, 4, 0, 4])
    for v in range(1, 9):
        assert TREERL_LEAF[v] == pytest.approx((GA[v] + LA[v]) / math.sqrt(values.visits[v]), abs=1e-15)
    adv = compute_advantages("treerl-leaf", trajectories, [values])
    np.testing.assert_allclose(adv.node[0], TREERL_LEAF, rtol=0, atol=1e-15)
    # The earlier form takes 4's turn-level parent (LA 0) and 7's (LA 0): half the credit there.
    old = treerl_node_advantages(values)
    assert old[4] == pytest.approx((1 / 15) / math.sqrt(3), abs=1e-15) and old[7] == pytest.approx(2 / 5, abs=1e-15)
    # Every token of a node's turn carries A(n) on every leaf through it; observations carry 0.
    # Leaf 5's completion: turn 1 (2 tokens), its observation, turn 4, its observation, turn 5.
    a1, a4, a5 = TREERL_LEAF[1], TREERL_LEAF[4], TREERL_LEAF[5]
    per_token = dict(zip((t.leaf for t in trajectories), adv.tokens(trajectories)))
    np.testing.assert_allclose(per_token[5], [a1, a1, 0, a4, a4, 0, a5, a5], rtol=0, atol=1e-15)
    np.testing.assert_allclose(per_token[2], [-6 / 5, -6 / 5], rtol=0, atol=1e-15)
    np.testing.assert_allclose(per_token[7], [4 / 5, 4 / 5, 0, 4 / 5, 4 / 5], rtol=0, atol=1e-15)
    # Summed over its 3 leaves, node 1's first token weighs √3·(GA + LA) = √3·2/15, not (2/15)/√3.
    assert sum(per_token[leaf][0] for leaf in (5, 6, 8)) == pytest.approx(math.sqrt(3) * 2 / 15, abs=1e-15)
    # share="split" counts the node once instead: (2/15)/√3 in all.
    split = dict(zip((t.leaf for t in trajectories), adv.tokens(trajectories, share="split")))
    assert sum(split[leaf][0] for leaf in (5, 6, 8)) == pytest.approx((2 / 15) / math.sqrt(3), abs=1e-15)


def test_treerl_branch_on_the_forked_tree_by_hand():
    _, trajectories, values = forked_tree()
    # Branch means: 4 = mean(5, 6, 8) = 2/3, and 1 (one child) the same; 3 = 7 = 1; the root the
    # mean of its three first turns, (2/3 + 0 + 1)/3 = 5/9, where the leaves' mean is 3/5: the two
    # forks at node 4 count once, as the one draw of the prompt's first turn that node 1 is.
    np.testing.assert_allclose(branch_values(values), [5 / 9, 2 / 3, 0, 1, 2 / 3, 1, 0, 1, 1], rtol=0, atol=1e-15)
    # A(n) = (GA + LA)/√L with those values; L and the parent segments are TreeRL's.
    want = [0.0, (2 / 9) / math.sqrt(3), -10 / 9, 8 / 9, (2 / 9) / math.sqrt(3), 7 / 9, -11 / 9, 8 / 9, 7 / 9]
    adv = compute_advantages("treerl-branch", trajectories, [values])
    np.testing.assert_allclose(adv.node[0], want, rtol=0, atol=1e-15)
    # A node with no finished rollout below it has no value and no credit; it does not enter its parent's mean.
    cut = TreeValues("c", np.array([-1, 0, 0, 2]), np.array([1.0, 1.0, 0.0, 0.0]), np.array([1, 1, 0, 0]), np.zeros(4),
                     np.array([False, True, False, False]))
    assert branch_values(cut)[0] == 1.0 and np.isnan(branch_values(cut)[2:]).all()
    np.testing.assert_allclose(compute_advantages("treerl-branch", [], [cut]).node[0], [0, 0, 0, 0], atol=0)


def test_treerl_branch_is_treerl_leaf_on_chains():
    # Independent chains: every first turn heads one unforked run, so each branch is one leaf.
    parent = np.array([-1, 0, 0, 0, 1, 2, 3])
    terminal = np.array([False, False, False, False, True, True, True])
    values = TreeValues("c", parent, np.array([2 / 3, 1, 0, 1, 1, 0, 1]), np.array([3, 1, 1, 1, 1, 1, 1]), np.zeros(7), terminal)
    np.testing.assert_array_equal(compute_advantages("treerl-branch", [], [values]).node[0],
                                  compute_advantages("treerl-leaf", [], [values]).node[0])


def test_tree_grpo_leaf_on_the_forked_tree_by_hand():
    _, trajectories, values = forked_tree()
    # Inter-tree: the prompt's 5 outcomes 0, 1, 0, 1, 1: mean 3/5, sample std √(1.2/4) = √0.3.
    # Intra-tree: Tree-GRPO's trees are the first turns: {5, 6, 8} under 1 (1, 0, 1: mean 2/3,
    # sample std √((1/9 + 4/9 + 1/9)/2) = √(1/3)); {2} and {7} are alone and get 0 from their tree.
    s_inter, s_intra, eps = math.sqrt(0.3), math.sqrt(1 / 3), 1e-6
    want = {2: (0 - 3 / 5) / (s_inter + eps),
            5: (1 - 2 / 3) / (s_intra + eps) + (1 - 3 / 5) / (s_inter + eps),
            6: (0 - 2 / 3) / (s_intra + eps) + (0 - 3 / 5) / (s_inter + eps),
            7: (1 - 3 / 5) / (s_inter + eps),
            8: (1 - 2 / 3) / (s_intra + eps) + (1 - 3 / 5) / (s_inter + eps)}
    adv = compute_advantages("tree-grpo-leaf", trajectories, [values])
    np.testing.assert_allclose(adv.trajectory, [want[t.leaf] for t in trajectories], rtol=0, atol=1e-12)
    # (1/3)/√(1/3) + (2/5)/√0.3 = 0.5773503 + 0.7302967 and −(2/3)/√(1/3) − (3/5)/√0.3 = −1.1547005 − 1.0954451, less the 1e-6.
    assert want[5] == pytest.approx(1.3076447, abs=1e-7) and want[6] == pytest.approx(-2.2501416, abs=1e-7)
    # Every generated token of a trajectory carries its advantage, shared prefixes included.
    per_token = dict(zip((t.leaf for t in trajectories), adv.tokens(trajectories)))
    np.testing.assert_allclose(per_token[6], [want[6]] * 2 + [0] + [want[6]] * 2 + [0] + [want[6]] * 2, rtol=0, atol=1e-12)
    # The earlier tree-grpo uses the population std and gives a singleton tree (R − R)/σ's 0 too.
    old = compute_advantages("tree-grpo", trajectories, [values]).trajectory
    assert old[1] == pytest.approx((1 - 2 / 3) / math.sqrt(2 / 9) + (1 - 3 / 5) / math.sqrt(0.24), abs=1e-12)


def test_the_defaults_are_treerl_on_branch_means_with_every_leaf_a_sample():
    assert DEFAULT_METHOD in METHODS and DEFAULT_SHARE in SHARES
    assert (DEFAULT_METHOD, DEFAULT_SHARE) == ("treerl-branch", "repeat")
    import inspect
    from trace_alloc.driver import TreeRollout
    assert inspect.signature(TreeRollout.__init__).parameters["advantage"].default == DEFAULT_METHOD
    assert inspect.signature(TreeAdvantages.tokens).parameters["share"].default == DEFAULT_SHARE
