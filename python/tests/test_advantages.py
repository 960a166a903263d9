"""Tree advantages on a hand-computed tree (no service needed)."""
import math

import numpy as np
import pytest

from trace_alloc import TraceAllocError, TreeValues
from trace_alloc.advantages import compute_advantages, treerl_node_advantages
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
    split = adv.tokens(trajectories)
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
    (alone,) = adv.tokens(trajectories, indices=[0])
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
