// examples/llm's credits (`--set advantage=...`) on a hand-computed tree: the published per-leaf
// TreeRL and Tree-GRPO credits, TreeRL's with branch-mean values, and the committed run's
// `treerl`, which keeps its meaning.
// The same tree as python/tests/test_advantages.py and test/learner.test.ts.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { PYTHON } from './python.js';

const root = fileURLToPath(new URL('..', import.meta.url));
const required = process.env.TRACE_ALLOC_REQUIRE_LLM === '1';
const probe = spawnSync(PYTHON, ['-c', 'import torch, transformers'], { encoding: 'utf8' });
const haveTorch = !probe.error && probe.status === 0;
if (!haveTorch && !required) console.warn(`examples/llm credit test skipped: ${PYTHON} cannot import torch and transformers`);

// The tree (node: parent, finished rollouts through it, their summed reward; terminal nodes R):
//              0 (prompt)                    root: 5 rollouts, V 3/5
//          /   |    \
//         1    2     3          2: R = 0;  1 and 4: 3 rollouts, V 2/3;  3 and 7: 1 rollout, V 1
//         |          |
//         4          7          7: R = 1
//       / | \
//      5  6  8                  5: R = 1, 6: R = 0, 8: R = 1
const CODE = `
import math, sys; sys.path.insert(0, ${JSON.stringify(`${root}examples/llm`)})
from forest import Forest, Node
from train import ADVANTAGES, node_weights
f = Forest.__new__(Forest); f.prompts = []; f.nodes = []; f.tree_nodes = []; f.roots = []
def add(parent, visits, reward_sum, outcome=None):
    n = Node(0, parent, [], (0, 0), 0, 0, 0, visits=visits, reward_sum=reward_sum)
    if outcome is not None:
        n.terminal, n.outcome = True, outcome
    return f._add(n)
r = add(-1, 5, 3.0); f.roots.append(r)
n1 = add(r, 3, 2.0); n2 = add(r, 1, 0.0, 0.0); n3 = add(r, 1, 1.0)
n4 = add(n1, 3, 2.0); n5 = add(n4, 1, 1.0, 1.0); n6 = add(n4, 1, 0.0, 0.0); n7 = add(n3, 1, 1.0, 1.0); n8 = add(n4, 1, 1.0, 1.0)
def check(name, want):
    got = node_weights(f, name)
    assert set(got) == {k for k, v in want.items() if v != 0}, (name, got)
    assert all(abs(got[k] - want[k]) < 1e-12 for k in got), (name, got, want)
# treerl-leaf: A = (GA + LA)/sqrt(L), LA against the parent segment (1 -> 4 and 3 -> 7 are unforked
# runs whose parent segment is the root; 5, 6, 8's is 4); weight L*A over the tree's 5 rollouts:
#   1, 4: 3 * (1/15 + 1/15)/sqrt(3) / 5;  2: (-3/5 - 3/5)/5;  3, 7: (2/5 + 2/5)/5;  5, 8: (2/5 + 1/3)/5;  6: (-3/5 - 2/3)/5.
s3 = math.sqrt(3)
check("treerl-leaf", {n1: s3 * 2 / 15 / 5, n4: s3 * 2 / 15 / 5, n2: -6 / 25, n3: 4 / 25, n7: 4 / 25, n5: 11 / 75, n8: 11 / 75, n6: -19 / 75})
# The same as the per-leaf loss: summing each leaf's A(n) over the nodes of its path.
a = {n1: 2 / 15 / s3, n4: 2 / 15 / s3, n2: -6 / 5, n3: 4 / 5, n7: 4 / 5, n5: 11 / 15, n8: 11 / 15, n6: -19 / 15}
per_leaf = {}
for leaf, path in ((n2, [n2]), (n5, [n1, n4, n5]), (n6, [n1, n4, n6]), (n7, [n3, n7]), (n8, [n1, n4, n8])):
    for v in path:
        per_leaf[v] = per_leaf.get(v, 0.0) + a[v] / 5
check("treerl-leaf", per_leaf)
# tree-grpo-leaf: inter-tree over the 5 outcomes (mean 3/5, sample std sqrt(0.3)); intra-tree over
# the leaves under each first turn: {5, 6, 8} under 1 (mean 2/3, sample std sqrt(1/3)); 2 and 7 alone: 0.
si, so, e = math.sqrt(1 / 3), math.sqrt(0.3), 1e-6
A5 = (1 / 3) / (si + e) + (2 / 5) / (so + e); A6 = -(2 / 3) / (si + e) - (3 / 5) / (so + e)
A2 = -(3 / 5) / (so + e); A7 = (2 / 5) / (so + e)
check("tree-grpo-leaf", {n5: A5 / 5, n8: A5 / 5, n6: A6 / 5, n4: (2 * A5 + A6) / 5, n1: (2 * A5 + A6) / 5, n2: A2 / 5, n3: A7 / 5, n7: A7 / 5})
# The committed run's treerl keeps its meaning: per node, turn-level parent, over sqrt(visits).
check("treerl", {n1: (1 / 15 + 1 / 15) / s3, n4: (0 + 1 / 15) / s3, n2: -6 / 5, n3: 4 / 5, n7: (0 + 2 / 5), n5: 11 / 15, n8: 11 / 15, n6: -19 / 15})
# treerl-branch: the same with branch-mean values: 4 and 1 = mean(1, 0, 1) = 2/3, 3 and 7 = 1, and
# the root the mean of its three first turns, (2/3 + 0 + 1)/3 = 5/9 (the leaves' mean is 3/5):
#   1, 4: 3 * (1/9 + 1/9)/sqrt(3) / 5;  2: (-5/9 - 5/9)/5;  3, 7: (4/9 + 4/9)/5;  5, 8: (4/9 + 1/3)/5;  6: (-5/9 - 2/3)/5.
check("treerl-branch", {n1: s3 * 2 / 9 / 5, n4: s3 * 2 / 9 / 5, n2: -10 / 45, n3: 8 / 45, n7: 8 / 45, n5: 7 / 45, n8: 7 / 45, n6: -11 / 45})
assert sorted(ADVANTAGES) == ["grpo", "tree-grpo-leaf", "treerl", "treerl-branch", "treerl-leaf"], ADVANTAGES
try:
    node_weights(f, "tree-grpo"); raise SystemExit("accepted an unknown credit")
except ValueError:
    pass
print("ok")
`;

describe.skipIf(!haveTorch && !required)('examples/llm: the credits', () => {
  it('treerl-leaf, treerl-branch, tree-grpo-leaf and treerl weigh each turn as computed by hand', () => {
    if (!haveTorch) throw new Error(`TRACE_ALLOC_REQUIRE_LLM=1 but ${PYTHON} cannot import torch and transformers: ${probe.stderr}`);
    const out = mkdtempSync(join(tmpdir(), 'trace-alloc-llm-credit-'));
    try {
      // importing torch writes caches under the temp folder: keep them inside ours.
      const env = { ...process.env, TMPDIR: out, TORCHINDUCTOR_CACHE_DIR: join(out, 'torchinductor') };
      // Importing torch and transformers alone took a minute at load average 10 here: allow most of the test's 120 s.
      const run = spawnSync(PYTHON, ['-c', CODE], { encoding: 'utf8', timeout: 110_000, env });
      expect(run.stderr).toBe('');
      expect(run.stdout.trim()).toBe('ok');
    } finally {
      rmSync(out, { recursive: true, force: true });
    }
  });
});
