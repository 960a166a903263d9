/**
 * Which v3 regimes a set of conformance cases reaches, counted on the reference's own view of
 * each tree. The conformance test requires every regime to appear; as a script it prints the
 * counts: `npx tsx test/reference/coverage-v3.ts [runs] [seed]`.
 */
import fc from 'fast-check';
import { fileURLToPath } from 'node:url';
import { v3CaseArb, type V3Case } from './arbitrary-v3.js';
import { isTerminal, rewardOf, visitsOf } from './v3-scores.js';
import { referencePlanV3, regions, type V3Result } from './v3.js';

/** ln of the largest and smallest positive float64. */
const LN_MAX = Math.log(Number.MAX_VALUE);
const LN_MIN = Math.log(Number.MIN_VALUE);

/** Two or more nodes with x > 0 whose fractional parts are exactly equal across the largest-remainder cut. */
function exactTieAtCut(mass: readonly number[], budget: number): boolean {
  const floors = mass.map(Math.floor);
  const left = budget - floors.reduce((a, b) => a + b, 0);
  const order = mass.map((_, i) => i).filter((i) => mass[i] > 0).sort((a, b) => (mass[b] - floors[b]) - (mass[a] - floors[a]) || a - b);
  if (!(left > 0 && left < order.length)) return false;
  const [a, b] = [order[left - 1], order[left]];
  return mass[a] - floors[a] === mass[b] - floors[b];
}

/**
 * Regime counts over cases (trees for the tree-level ones). `refs[i]`, when given, is the
 * reference's result for `cases[i]` (the conformance test has it already).
 */
export function regimesOf(cases: readonly V3Case[], refs?: readonly V3Result[]): Record<string, number> {
  const n: Record<string, number> = {
    defaultRule: 0, spacedRule: 0, joinedRule: 0, jsonl: 0, widenIgnored: 0, explicitFlags: 0,
    perTree: 0, global: 0, globalMu0: 0, globalTreeFloor: 0, largeBudget: 0,
    kappa0: 0, kappaOther: 0, eta0: 0, eta1: 0, etaOther: 0, rho0: 0, rhoOther: 0, gamma0: 0, gammaSmall: 0, tauSmall: 0,
    contestedRoot: 0, contestedBelowRoot: 0, terminalContestedFork: 0, terminalRootLive: 0,
    unvisitedKeptBelowBar: 0, visitedPruned: 0, keptChildWithoutSuccess: 0,
    regionOfSeveralOpenNodes: 0, regionWithoutOpenNode: 0, fallback: 0, deadTree: 0,
    allEqualRewards: 0, rewardsOutside01: 0, rewardsNearMax: 0, tinyOrHugeEmbeddings: 0,
    psiOverflow: 0, psiUnderflow: 0, weightZero: 0,
    alphaExtreme: 0, tauLarge: 0, dim0: 0, zeroNormSibling: 0, noContestedFork: 0, chainsOnly: 0,
    remainderAtOpenFork: 0, remainderDroppedAtTerminalFork: 0, forkWithoutKeptChild: 0, exactTieAtCut: 0,
  };
  cases.forEach((c, ci) => {
    const p = c.params;
    n[`${c.rule}Rule`]++;
    if (c.format === 'jsonl') n.jsonl++;
    if (c.widen !== undefined) n.widenIgnored++;
    if (c.explicit) n.explicitFlags++;
    if (p.budget.kind === 'perTree') {
      n.perTree++;
      if (p.budget.budget >= 2 ** 30) n.largeBudget++;
    } else {
      n.global++;
      if (p.budget.minPerTree === 0) n.globalMu0++;
      if (p.treeFloor !== 1) n.globalTreeFloor++;
      if (p.budget.total >= 2 ** 30) n.largeBudget++;
    }
    if (p.contestGain === 0) n.kappa0++;
    else if (p.contestGain !== 4) n.kappaOther++;
    if (p.forkKeep === 0) n.eta0++;
    else if (p.forkKeep === 1) n.eta1++;
    else if (p.forkKeep !== 0.25) n.etaOther++;
    if (p.pruneRatio === 0) n.rho0++;
    else if (p.pruneRatio !== 0.5) n.rhoOther++;
    if (p.depthGain === 0) n.gamma0++;
    else if (p.depthGain <= 0.1) n.gammaSmall++;
    if (p.tau <= 0.01) n.tauSmall++;
    if (p.tau >= 10) n.tauLarge++;
    if (p.alpha >= 1e15 || p.alpha <= 1e-15) n.alphaExtreme++;
    if ((c.forest.dim ?? 0) === 0) n.dim0++;

    const ref = refs?.[ci] ?? referencePlanV3(c.forest, p);
    c.forest.trees.forEach((tree, t) => {
      const a = ref.trees[t];
      const s = ref.scores[t];
      const nodes = tree.nodes;
      if (!a.reach[0]) n.deadTree++;
      if (a.fallback) n.fallback++;
      if (a.contested[0]) n.contestedRoot++;
      if (a.contested.some((x, v) => x && v > 0)) n.contestedBelowRoot++;
      if (a.contested.some((x, v) => x && isTerminal(nodes[v]))) n.terminalContestedFork++;
      if (a.reach[0] && isTerminal(nodes[0])) n.terminalRootLive++;
      if (a.lnPsi.some((l, v) => a.reach[v] && l > LN_MAX)) n.psiOverflow++;
      if (a.lnPsi.some((l, v) => a.reach[v] && l < LN_MIN && l > -Infinity)) n.psiUnderflow++;
      if (s.weight.some((w) => w === 0)) n.weightZero++;
      const visited = nodes.filter((v) => visitsOf(v) > 0).map(rewardOf);
      if (visited.length >= 2 && visited.every((r) => r === visited[0])) n.allEqualRewards++;
      if (nodes.some((v) => rewardOf(v) < 0 || rewardOf(v) > 1)) n.rewardsOutside01++;
      if (nodes.some((v) => Math.abs(rewardOf(v)) >= 1e300)) n.rewardsNearMax++;
      if (nodes.some((v) => v.embedding?.some((x) => x !== 0 && (Math.abs(x) < 1e-100 || Math.abs(x) > 1e100)))) n.tinyOrHugeEmbeddings++;
      // an unvisited child kept although its weight is below the bar its visited siblings set
      s.groups.forEach((kids) => {
        const visitedKids = kids.filter((k) => visitsOf(nodes[k]) > 0);
        if (visitedKids.length === 0) return;
        const bar = p.pruneRatio * Math.max(...visitedKids.map((k) => s.weight[k]));
        if (kids.some((k) => visitsOf(nodes[k]) === 0 && a.reach[k] && s.weight[k] < bar)) n.unvisitedKeptBelowBar++;
      });
      if (a.tree.pruned.length > 0) n.visitedPruned++;
      if ((c.forest.dim ?? 0) > 0 && s.groups.some((kids) => kids.length >= 2 && kids.some((k) => !(nodes[k].embedding ?? []).some((x) => x !== 0)))) n.zeroNormSibling++;
      if (a.reach[0] && !a.contested.some(Boolean)) {
        n.noContestedFork++;
        if (!isTerminal(nodes[0]) && a.tree.allocations.every((x) => x.node === 0) && a.tree.budget > 0) n.chainsOnly++;
      }
      if (a.tree.budget > 0 && !a.fallback && exactTieAtCut(a.mass, a.tree.budget)) n.exactTieAtCut++;
      const region = regions(tree, s.groups);
      a.contested.forEach((isFork, f) => {
        if (!isFork) return;
        const kept = a.kept[f];
        if (kept.length === 0) n.forkWithoutKeptChild++;
        else if (kept.some((k) => a.nu[k] < 1)) {
          if (isTerminal(nodes[f])) n.remainderDroppedAtTerminalFork++;
          else n.remainderAtOpenFork++;
        }
        for (const c of s.groups[f]) {
          if (!a.reach[c]) continue;
          if (a.nu[c] === 0) n.keptChildWithoutSuccess++;
          const open = nodes.filter((v, i) => region[i] === c && a.reach[i] && !isTerminal(v)).length;
          if (open >= 2) n.regionOfSeveralOpenNodes++;
          if (open === 0) n.regionWithoutOpenNode++;
        }
      });
    });
  });
  return n;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const runs = Number(process.argv[2] ?? 40);
  const seed = Number(process.argv[3] ?? 42);
  const cases = fc.sample(v3CaseArb, { numRuns: runs, seed });
  const literal = cases.reduce((acc, c) => acc + referencePlanV3(c.forest, c.params).trees.filter((t) => t.literalScaledFormDiffers).length, 0);
  console.log({ ...regimesOf(cases), literalScaledFormDiffers: literal });
}
