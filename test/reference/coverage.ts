/**
 * What the random conformance forests contain, and how often the reference had to allow for
 * a near-tie: `npx tsx test/reference/coverage.ts [runs] [seed]`. Not a test; it backs the
 * figures quoted in the conformance report and shows whether a generator change still reaches
 * the cases that matter.
 */
import fc from 'fast-check';
import { caseArb } from './arbitrary.js';
import { referencePlan, scoreTree } from './spec.js';

const runs = Number(process.argv[2] ?? 60);
const seed = Number(process.argv[3] ?? 42);
const st = {
  forests: 0, globalBudgetForests: 0, trees: 0, treesWithoutAllocations: 0, nodes: 0, groups: 0, largestGroup: 0,
  prunedNodes: 0, allocations: 0, depthAboveThreeD0: 0, depthAtMax: 0,
  pruneNearTies: 0, roundingNearTieNodes: 0, depthNearTies: 0, budgetNearTieTrees: 0,
};
for (const c of fc.sample(caseArb, { numRuns: runs, seed })) {
  st.forests++;
  if (c.params.budget.kind === 'global') st.globalBudgetForests++;
  const ref = referencePlan(c.forest, c.params);
  const maxDepth = c.params.maxDepth ?? 4 * c.params.baseDepth;
  ref.plan.trees.forEach((t, i) => {
    const tree = c.forest.trees[i];
    st.trees++;
    st.nodes += tree.nodes.length;
    for (const kids of scoreTree(tree, c.params.alpha, c.params.tau).children) {
      if (kids.length > 0) st.groups++;
      st.largestGroup = Math.max(st.largestGroup, kids.length);
    }
    if (t.allocations.length === 0) st.treesWithoutAllocations++;
    st.prunedNodes += t.pruned.length;
    st.allocations += t.allocations.length;
    for (const a of t.allocations) {
      if (a.depth > 3 * c.params.baseDepth) st.depthAboveThreeD0++;
      if (a.depth === maxDepth) st.depthAtMax++;
    }
    const ties = ref.ties[i];
    st.pruneNearTies += ties.prune.size;
    st.roundingNearTieNodes += ties.rounding.size;
    st.depthNearTies += [...ties.depth].filter((v) => t.allocations.some((a) => a.node === v)).length;
    if (ties.budget) st.budgetNearTieTrees++;
  });
}
console.log(st);
