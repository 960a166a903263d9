import fc from 'fast-check';
import { caseArb } from './arbitrary.js';
import { referencePlan, scoreTree } from './spec.js';
const n = Number(process.argv[2] ?? 60);
const st = { cases: 0, trees: 0, nodes: 0, groups: 0, maxK: 0, deadTrees: 0, pruned: 0, allocs: 0, pruneTies: 0, roundTies: 0, depthTies: 0, budgetTies: 0, over3: 0, over4: 0, clampedMax: 0, global: 0 };
for (const c of fc.sample(caseArb, { numRuns: n, seed: 42 })) {
  st.cases++;
  if (c.params.budget.kind === 'global') st.global++;
  const r = referencePlan(c.forest, c.params);
  r.plan.trees.forEach((t, i) => {
    const tree = c.forest.trees[i];
    st.trees++; st.nodes += tree.nodes.length;
    const s = scoreTree(tree, c.params.alpha, c.params.tau);
    for (const k of s.children) if (k.length) { st.groups++; st.maxK = Math.max(st.maxK, k.length); }
    if (t.unallocated > 0 || (t.budget === 0 && t.allocations.length === 0)) st.deadTrees++;
    st.pruned += t.pruned.length; st.allocs += t.allocations.length;
    const ti = r.ties[i];
    st.pruneTies += ti.prune.size; st.roundTies += ti.rounding.size; st.depthTies += ti.depth.size; st.budgetTies += ti.budget ? 1 : 0;
    const md = c.params.maxDepth ?? 4 * c.params.baseDepth;
    for (const a of t.allocations) { if (a.depth > 3 * c.params.baseDepth) st.over3++; if (a.depth === md) st.clampedMax++; }
  });
}
console.log(st);
