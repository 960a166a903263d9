// The simulated learners (src/sim/learner.ts) on a hand-computed tree: TreeRL as published
// (every finished rollout a sample), the earlier per-node TreeRL the committed evaluation used,
// and GRPO over the tree's rollouts. The same tree as python/tests/test_advantages.py.
import { describe, expect, it } from 'vitest';
import { branchValues, grpoUpdate, segmentParent, treerlBranchUpdate, treerlLeafUpdate, treerlNodeUpdate, type LearnerForest } from '../src/sim/learner.js';
import { TabularPolicy } from '../src/sim/policy.js';

//              0 (prompt, state 0)
//          /   |    \                  actions: 1, 2, 3 are actions 0, 1, 2 from state 0
//         1    2     3                 2: R = 0
//         |          |                 4 is action 0 from state 1; 7 action 0 from state 3
//         4          7                 7: R = 1
//       / | \                          5, 6, 8 are actions 0, 1, 2 from state 4
//      5  6  8                         5: R = 1, 6: R = 0, 8: R = 1
// Node v arrives in state v. Finished rollouts below each node, L, and their mean outcome, V:
//   root L 5, V 3/5;  1 and 4: L 3, V 2/3;  2: V 0;  3 and 7: L 1, V 1;  5, 8: V 1;  6: V 0.
const PARENT = [-1, 0, 0, 0, 1, 4, 4, 3, 4];
const ACTION = [-1, 0, 1, 2, 0, 0, 1, 0, 2];
const REWARD: Record<number, number> = { 2: 0, 5: 1, 6: 0, 7: 1, 8: 1 };

function forkedTree(): LearnerForest {
  const visits = new Array<number>(9).fill(0), rewardSum = new Array<number>(9).fill(0);
  for (const [leaf, r] of Object.entries(REWARD)) {
    for (let v = Number(leaf); v >= 0; v = PARENT[v]) { visits[v]++; rewardSum[v] += r; }
  }
  return {
    size: 9, tree: new Array<number>(9).fill(0), parent: PARENT, state: PARENT.map((_, v) => v), action: ACTION,
    terminal: PARENT.map((_, v) => (v in REWARD ? 1 : 0)), visits, rewardSum, treeNodes: [PARENT.map((_, v) => v)],
    value: (v: number) => (visits[v] > 0 ? rewardSum[v] / visits[v] : NaN),
  };
}

/** The logits after one step at lr 1 from uniform logits, when node n's action from its parent's state has weight w[n]: ∇ log π(a|s) = onehot(a) − 1/3. */
function expectedLogits(w: Record<number, number>): number[] {
  const out = new Array<number>(9 * 3).fill(0);
  for (const [n, weight] of Object.entries(w)) {
    const s = PARENT[Number(n)];
    for (let a = 0; a < 3; a++) out[s * 3 + a] += weight * ((a === ACTION[Number(n)] ? 1 : 0) - 1 / 3);
  }
  return out;
}

function stepped(update: (p: TabularPolicy, f: LearnerForest, lr: number) => void): number[] {
  const policy = new TabularPolicy(9, 3);
  update(policy, forkedTree(), 1);
  return Array.from(policy.logits);
}

describe('simulated learners on a hand-computed tree', () => {
  it('TreeRL as published: each node weighs √L·(GA + LA) over the tree\'s 5 rollouts, LA against its parent segment', () => {
    const f = forkedTree();
    // 1 → 4 and 3 → 7 are unforked runs: their parent segment is the root; 5, 6, 8's is node 4.
    expect([1, 2, 3, 4, 5, 6, 7, 8].map((v) => segmentParent(f, v))).toEqual([0, 0, 0, 0, 4, 4, 0, 4]);
    // GA = V − 3/5; LA = V − V(segment). A = (GA + LA)/√L on each of the L rollouts through the node:
    //   1, 4: (1/15 + 1/15)/√3 on 3 rollouts → √3·2/15;  2: −6/5;  3, 7: 4/5;  5, 8: 2/5 + 1/3 = 11/15;  6: −3/5 − 2/3 = −19/15.
    // Divided by the tree's 5 rollouts.
    const w = { 1: (Math.sqrt(3) * 2) / 15 / 5, 2: -6 / 5 / 5, 3: 4 / 5 / 5, 4: (Math.sqrt(3) * 2) / 15 / 5, 5: 11 / 15 / 5, 6: -19 / 15 / 5, 7: 4 / 5 / 5, 8: 11 / 15 / 5 };
    stepped(treerlLeafUpdate).forEach((x, i) => expect(x).toBeCloseTo(expectedLogits(w)[i], 14));
  });

  it('TreeRL as published is the per-rollout loss: the sum over rollouts of A on every step of its path', () => {
    const a: Record<number, number> = { 1: 2 / 15 / Math.sqrt(3), 2: -6 / 5, 3: 4 / 5, 4: 2 / 15 / Math.sqrt(3), 5: 11 / 15, 6: -19 / 15, 7: 4 / 5, 8: 11 / 15 };
    const w: Record<number, number> = {};
    for (const leaf of Object.keys(REWARD).map(Number)) for (let v = leaf; v > 0; v = PARENT[v]) w[v] = (w[v] ?? 0) + a[v] / 5;
    stepped(treerlLeafUpdate).forEach((x, i) => expect(x).toBeCloseTo(expectedLogits(w)[i], 14));
  });

  it('TreeRL with branch means: V of a node is the mean of its branches, so the root is 5/9, not the leaves\' 3/5', () => {
    // 4 = mean(1, 0, 1) = 2/3 and 1 (one child) the same; 3 = 7 = 1; the root (2/3 + 0 + 1)/3.
    const want = [5 / 9, 2 / 3, 0, 1, 2 / 3, 1, 0, 1, 1];
    Array.from(branchValues(forkedTree())).forEach((x, v) => expect(x).toBeCloseTo(want[v], 15));
    // A = (GA + LA)/√L with those values, L and the segments TreeRL's:
    //   1, 4: (1/9 + 1/9)/√3 on 3 rollouts → √3·2/9;  2: −10/9;  3, 7: 8/9;  5, 8: 4/9 + 1/3 = 7/9;  6: −5/9 − 2/3 = −11/9.
    const w = { 1: (Math.sqrt(3) * 2) / 9 / 5, 2: -10 / 9 / 5, 3: 8 / 9 / 5, 4: (Math.sqrt(3) * 2) / 9 / 5, 5: 7 / 9 / 5, 6: -11 / 9 / 5, 7: 8 / 9 / 5, 8: 7 / 9 / 5 };
    stepped(treerlBranchUpdate).forEach((x, i) => expect(x).toBeCloseTo(expectedLogits(w)[i], 14));
  });

  it('the earlier TreeRL counts each node once (A/√N) with the turn-level parent: 4 and 7 get LA = 0', () => {
    // A = ((V − V(parent)) + (V − 3/5))/√N:  1: (2/15)/√3;  4: (0 + 1/15)/√3;  2: −6/5;  3: 4/5;  7: (0 + 2/5);  5, 8: 11/15;  6: −19/15.
    const w = { 1: 2 / 15 / Math.sqrt(3), 2: -6 / 5, 3: 4 / 5, 4: 1 / 15 / Math.sqrt(3), 5: 11 / 15, 6: -19 / 15, 7: 2 / 5, 8: 11 / 15 };
    stepped(treerlNodeUpdate).forEach((x, i) => expect(x).toBeCloseTo(expectedLogits(w)[i], 14));
  });

  it('GRPO: every step of a rollout carries R − 3/5, summed over the rollouts through it, over 5', () => {
    // Rollouts: 2 (−3/5), 5 (+2/5), 6 (−3/5), 7 (+2/5), 8 (+2/5). Node 1 and 4 carry 5, 6, 8: 1/5; 3 carries 7's.
    const w = { 1: 1 / 5 / 5, 2: -3 / 5 / 5, 3: 2 / 5 / 5, 4: 1 / 5 / 5, 5: 2 / 5 / 5, 6: -3 / 5 / 5, 7: 2 / 5 / 5, 8: 2 / 5 / 5 };
    stepped(grpoUpdate).forEach((x, i) => expect(x).toBeCloseTo(expectedLogits(w)[i], 14));
  });

  it('a tree whose rollouts all agree, or that finished none, moves nothing under the published TreeRL', () => {
    const f = forkedTree();
    const agreed: LearnerForest = { ...f, rewardSum: f.visits.map(() => 0), value: (v) => (f.visits[v] > 0 ? 0 : NaN) };
    const none: LearnerForest = { ...f, visits: f.visits.map(() => 0), rewardSum: f.visits.map(() => 0), value: () => NaN };
    for (const forest of [agreed, none]) {
      const policy = new TabularPolicy(9, 3);
      treerlLeafUpdate(policy, forest, 1);
      expect(Array.from(policy.logits).every((x) => x === 0)).toBe(true);
    }
  });
});
