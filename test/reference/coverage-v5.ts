/**
 * Which v5 regimes a set of conformance cases reaches: v3's regimes (coverage-v3.ts, counted on the
 * v5 reference's view of each tree, since v5 allocates as v3 does) plus those of the gate after
 * repeated evidence, counted against the v4 and v3 references of the same forest. The conformance
 * test requires every regime to appear (and the ones that make v5 differ from v4 and v3 often); as
 * a script it prints the counts: `npx tsx test/reference/coverage-v5.ts [runs] [seed]`.
 *
 * −0 beside 0 is not counted: the suites hand forests to the library as JSON text, where
 * JSON.stringify writes −0 as 0, so a drawn −0 never reaches it; a hand case sends "-0" instead.
 */
import fc from 'fast-check';
import { fileURLToPath } from 'node:url';
import type { V3Case } from './arbitrary-v3.js';
import { v5CaseArb } from './arbitrary-v5.js';
import { regimesOf } from './coverage-v3.js';
import type { SpecForest } from './spec.js';
import { rewardOf, visitsOf } from './v3-scores.js';
import { referencePlanV3, type V3Result } from './v3.js';
import { referencePlanV4 } from './v4.js';
import { gatedByV4NotV5, gatedPairsV5, referencePlanV5, v5IsV3Condition, v5IsV4Condition } from './v5.js';

/** Whether two results plan tree t alike: its budget, unallocated, pruned set and allocations. */
export function samePlanTree(a: V3Result, b: V3Result, t: number): boolean {
  const x = a.plan.trees[t];
  const y = b.plan.trees[t];
  return x.budget === y.budget && x.unallocated === y.unallocated
    && JSON.stringify(x.pruned) === JSON.stringify(y.pruned) && JSON.stringify(x.allocations) === JSON.stringify(y.allocations);
}

export function samePlan(forest: SpecForest, a: V3Result, b: V3Result): boolean {
  return forest.trees.every((_, t) => samePlanTree(a, b, t));
}

/** The names of the regimes the conformance test holds to a higher floor than 3 (see the test). */
export const HEADLINE_REGIMES = [
  'forestV5DiffersFromV4', 'forestV5DiffersFromV3', 'forestV5DiffersFromBoth',
  'treeGatedV4NotV5', 'treeGatedV5', 'relationV3HoldsV4Differs', 'relationV4HoldsV3Differs',
] as const;

/**
 * The gate's regimes over cases; `v5[i]`, `v4[i]`, `v3[i]` are the references' results for
 * `cases[i]` when given. Tree-level counts are trees, forest-level ones (`forest…`, `relation…`) forests.
 */
export function repeatRegimesOf(cases: readonly V3Case[], v5?: readonly V3Result[], v4?: readonly V3Result[], v3?: readonly V3Result[]): Record<string, number> {
  const n: Record<string, number> = {
    treeGatedV5: 0, treeGatedV4NotV5: 0, groupGatedBothWays: 0, gatedV5AtTwoVisits: 0, gatedV5OtherVisits: 0,
    gatedV5ThirdFromThreeAndSix: 0, gatedV5Success: 0, gatedV5BesideUnvisited: 0,
    forkSilencedByV5: 0, rootSilencedByV5: 0, forkV5ContestsV4Silences: 0, forkBelowSingleFailureV5: 0,
    treeV5DiffersFromV4: 0, treeV5DiffersFromV3: 0,
    forestV5DiffersFromV4: 0, forestV5DiffersFromV3: 0, forestV5DiffersFromBoth: 0, globalForestV5DiffersFromV4: 0,
    relationV3Holds: 0, relationV3HoldsV4Differs: 0, relationV4Holds: 0, relationV4HoldsV3Differs: 0, relationBothHold: 0,
  };
  cases.forEach((c, ci) => {
    const r5 = v5?.[ci] ?? referencePlanV5(c.forest, c.params);
    const r4 = v4?.[ci] ?? referencePlanV4(c.forest, c.params);
    const r3 = v3?.[ci] ?? referencePlanV3(c.forest, c.params);
    const f = c.forest;
    const differs4 = !samePlan(f, r5, r4);
    const differs3 = !samePlan(f, r5, r3);
    if (differs4) n.forestV5DiffersFromV4++;
    if (differs3) n.forestV5DiffersFromV3++;
    if (differs4 && differs3) n.forestV5DiffersFromBoth++;
    if (differs4 && c.params.budget.kind === 'global') n.globalForestV5DiffersFromV4++;
    const is3 = v5IsV3Condition(f);
    const is4 = v5IsV4Condition(f);
    if (is3) n.relationV3Holds++;
    if (is3 && !samePlan(f, r4, r3)) n.relationV3HoldsV4Differs++;
    if (is4) n.relationV4Holds++;
    if (is4 && !samePlan(f, r4, r3)) n.relationV4HoldsV3Differs++;
    if (is3 && is4) n.relationBothHold++;
    f.trees.forEach((tree, t) => {
      const nodes = tree.nodes;
      const g5 = gatedPairsV5(tree);
      const g45 = gatedByV4NotV5(tree);
      const [s5, s4, s3] = [r5.scores[t], r4.scores[t], r3.scores[t]];
      const a5 = r5.trees[t];
      if (g5.length > 0) n.treeGatedV5++;
      if (g45.length > 0) n.treeGatedV4NotV5++;
      if (g5.some((g) => g45.some((h) => h.parent === g.parent))) n.groupGatedBothWays++;
      if (g5.some(({ i, j }) => visitsOf(nodes[i]) === 2 || visitsOf(nodes[j]) === 2)) n.gatedV5AtTwoVisits++;
      if (g5.some(({ i, j }) => visitsOf(nodes[i]) !== visitsOf(nodes[j]))) n.gatedV5OtherVisits++;
      if (g5.some(({ i, j }) => rewardOf(nodes[i]) === 1 / 3 && visitsOf(nodes[i]) !== visitsOf(nodes[j]))) n.gatedV5ThirdFromThreeAndSix++;
      if (g5.some(({ i }) => rewardOf(nodes[i]) === 1)) n.gatedV5Success++;
      if (g5.some(({ parent }) => s5.groups[parent].some((k) => visitsOf(nodes[k]) === 0))) n.gatedV5BesideUnvisited++;
      s5.groups.forEach((kids, p) => {
        if (kids.length < 2 || !a5.reach[p]) return;
        if (s5.intensity[p] === 0 && s3.intensity[p] > 0) {
          n.forkSilencedByV5++;
          if (p === 0) n.rootSilencedByV5++;
        }
        if (s5.intensity[p] > 0 && s4.intensity[p] === 0) n.forkV5ContestsV4Silences++;
      });
      // v5 places rollouts below the root where v4 keeps every one at the root (chains), a kept
      // child of the contested fork having a single finished rollout
      const below5 = r5.plan.trees[t].allocations.some((x) => x.node !== 0);
      const below4 = r4.plan.trees[t].allocations.some((x) => x.node !== 0);
      if (below5 && !below4 && g45.length > 0) n.forkBelowSingleFailureV5++;
      if (!samePlanTree(r5, r4, t)) n.treeV5DiffersFromV4++;
      if (!samePlanTree(r5, r3, t)) n.treeV5DiffersFromV3++;
    });
  });
  return n;
}

/** v3's regime counts on v5's view, and the gate's. */
export function regimesOfV5(cases: readonly V3Case[], v5?: readonly V3Result[]): Record<string, number> {
  const refs = v5 ?? cases.map((c) => referencePlanV5(c.forest, c.params));
  return { ...regimesOf(cases, refs), ...repeatRegimesOf(cases, refs) };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const runs = Number(process.argv[2] ?? 40);
  const seed = Number(process.argv[3] ?? 42);
  console.log(regimesOfV5(fc.sample(v5CaseArb, { numRuns: runs, seed })));
}
