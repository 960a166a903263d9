/**
 * Which v4 regimes a set of conformance cases reaches: v3's regimes (coverage-v3.ts, counted on
 * the v4 reference's view of each tree, since v4 allocates as v3 does) plus those of the
 * uncertainty gate, counted against the v3 reference of the same forest. The conformance test
 * requires every regime to appear; as a script it prints the counts:
 * `npx tsx test/reference/coverage-v4.ts [runs] [seed]`.
 */
import fc from 'fast-check';
import { fileURLToPath } from 'node:url';
import type { V3Case } from './arbitrary-v3.js';
import { v4CaseArb } from './arbitrary-v4.js';
import { regimesOf } from './coverage-v3.js';
import { rewardOf, visitsOf } from './v3-scores.js';
import { referencePlanV3, type V3Result } from './v3.js';
import { gatedPairs, referencePlanV4 } from './v4.js';

const LN_MAX = Math.log(Number.MAX_VALUE);
const SMALLEST_NORMAL = 2 ** -1022;

/** The gate's regimes over cases; `v4[i]` and `v3[i]` are the references' results for `cases[i]` when given. */
export function gateRegimesOf(cases: readonly V3Case[], v4?: readonly V3Result[], v3?: readonly V3Result[]): Record<string, number> {
  const n: Record<string, number> = {
    gatedPair: 0, gatedSameRewardOtherVisits: 0, gatedNegativeZero: 0, oneRoundingApartNotGated: 0,
    silencedFork: 0, silencedRoot: 0, gatedMixedGroup: 0, gatedBesideUnvisited: 0,
    planDiffersFromV3: 0, planIsV3WithoutGate: 0, kappaSubnormal: 0, kappa0PsiOverflow: 0,
  };
  cases.forEach((c, ci) => {
    const r4 = v4?.[ci] ?? referencePlanV4(c.forest, c.params);
    const r3 = v3?.[ci] ?? referencePlanV3(c.forest, c.params);
    const p = c.params;
    if (p.contestGain > 0 && p.contestGain < SMALLEST_NORMAL) n.kappaSubnormal++;
    c.forest.trees.forEach((tree, t) => {
      const a4 = r4.trees[t];
      const s4 = r4.scores[t];
      const s3 = r3.scores[t];
      const pairs = gatedPairs(tree);
      const nodes = tree.nodes;
      if (pairs.length > 0) n.gatedPair++;
      if (pairs.some(({ i, j }) => visitsOf(nodes[i]) !== visitsOf(nodes[j]))) n.gatedSameRewardOtherVisits++;
      if (pairs.some(({ i, j }) => Object.is(rewardOf(nodes[i]), -0) !== Object.is(rewardOf(nodes[j]), -0))) n.gatedNegativeZero++;
      s4.groups.forEach((kids, parent) => {
        const visited = kids.filter((k) => visitsOf(nodes[k]) > 0);
        if (visited.some((a) => visited.some((b) => rewardOf(nodes[a]) !== rewardOf(nodes[b]) && Math.abs(rewardOf(nodes[a]) - rewardOf(nodes[b])) < 1e-15))) n.oneRoundingApartNotGated++;
        if (!pairs.some((g) => g.parent === parent)) return;
        if (s4.intensity[parent] === 0 && s3.intensity[parent] > 0 && a4.reach[parent]) {
          n.silencedFork++;
          if (parent === 0) n.silencedRoot++;
        }
        if (s4.intensity[parent] > 0) n.gatedMixedGroup++;
        if (kids.some((k) => visitsOf(nodes[k]) === 0)) n.gatedBesideUnvisited++;
      });
      const same = JSON.stringify(r4.plan.trees[t].allocations) === JSON.stringify(r3.plan.trees[t].allocations)
        && JSON.stringify(r4.plan.trees[t].pruned) === JSON.stringify(r3.plan.trees[t].pruned);
      if (!same) n.planDiffersFromV3++;
      if (pairs.length === 0 && r4.plan.trees[t].budget === r3.plan.trees[t].budget) n.planIsV3WithoutGate++;
      if (p.contestGain === 0 && a4.lnPsi.some((l, v) => a4.reach[v] && l > LN_MAX)) n.kappa0PsiOverflow++;
    });
  });
  return n;
}

/** v3's regime counts on v4's view, and the gate's. */
export function regimesOfV4(cases: readonly V3Case[], v4?: readonly V3Result[], v3?: readonly V3Result[]): Record<string, number> {
  return { ...regimesOf(cases, v4 ?? cases.map((c) => referencePlanV4(c.forest, c.params))), ...gateRegimesOf(cases, v4, v3) };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const runs = Number(process.argv[2] ?? 40);
  const seed = Number(process.argv[3] ?? 42);
  console.log(regimesOfV4(fc.sample(v4CaseArb, { numRuns: runs, seed })));
}
