/**
 * Hand-worked conformance cases: each fixture in test/fixtures/ is scored and allocated with
 * pencil and paper below (SPEC §2 and §4 line by line; decimals from a 30-digit calculator),
 * then both the reference in test/reference/spec.ts and the real CLI are held to those numbers.
 *
 * The CPU backend is float64, so scores are held to 1e-9 here, far inside the SPEC's 1e-4
 * GPU tolerance: a dropped ε (1e-6) or a float32 shortcut would pass 1e-4 but not this.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { runCli, scoreFile } from './reference/cli.js';
import { DEFAULT_PARAMS, referencePlan, type Plan, type PlanTree, type SpecForest, type SpecParams } from './reference/spec.js';

const HAND = 1e-9;

function fixture(name: string): string {
  return fileURLToPath(new URL(`./fixtures/${name}`, import.meta.url));
}

function load(name: string): SpecForest {
  return JSON.parse(readFileSync(fixture(name), 'utf8')) as SpecForest;
}

interface HandScore { node: number; contrast: number; weight: number; gradAlpha: number; gradTau: number }

function expectScores(tree: PlanTree, want: HandScore[], intensity: Record<number, number>): void {
  const got = tree.scores ?? [];
  expect(got.map((s) => s.node)).toEqual(want.map((s) => s.node));
  want.forEach((w, i) => {
    for (const key of ['contrast', 'weight', 'gradAlpha', 'gradTau'] as const) {
      expect(Math.abs(got[i][key] - w[key]), `node ${w.node} ${key}: got ${got[i][key]}, hand ${w[key]}`).toBeLessThanOrEqual(HAND);
    }
  });
  const groups = tree.groups ?? [];
  expect(groups.map((g) => g.parent)).toEqual(Object.keys(intensity).map(Number));
  for (const g of groups) expect(Math.abs(g.intensity - intensity[g.parent])).toBeLessThanOrEqual(HAND);
}

/** Both the independent reference and the CLI must produce the hand-worked plan. */
function bothPlans(name: string, params: SpecParams = DEFAULT_PARAMS): Plan[] {
  const ref = referencePlan(load(name), params).plan;
  const cli = scoreFile(fixture(name), params);
  return [ref, cli];
}

describe('a group of 1 (group1.json)', () => {
  // k = 1: C = 0, w = 1, gA = gB = 0 and I_0 = 0 by definition, whatever the features.
  // Flow, B = 16: node 0 is open and its one child is live, so x_0 = 16·λ·I_0 = 0 and node 1
  // gets all 16; node 1 is a leaf, so x_1 = 16. ψ_1 = k_0·w_1 = 1 → depth ⌊4·1 + 0.5⌋ = 4.
  for (const [label, i] of [['reference', 0], ['CLI', 1]] as const) {
    it(`${label} matches the hand computation`, () => {
      const t = bothPlans('group1.json')[i].trees[0];
      expectScores(t, [{ node: 1, contrast: 0, weight: 1, gradAlpha: 0, gradTau: 0 }], { 0: 0 });
      expect(t.allocations).toEqual([{ node: 1, branches: 16, depth: 4 }]);
      expect(t.pruned).toEqual([]);
      expect([t.budget, t.unallocated]).toEqual([16, 0]);
    });
  }
});

describe('groups of 2 (group2.json)', () => {
  // Tree "zero-norm-unvisited": e_1 = (0,0) has norm 0, so s = 0 and d = (1 − 0)/2 = 0.5.
  // Node 2 has n = 0, so Δr = 0 although the rewards differ; Δu = |0.5 − 0| = 0.5, Δ = 0.5.
  // c_12 = c_21 = 0.5 / (0.5 + 1·0.5 + 1e-6) = 0.5/1.000001 = 0.4999995000005.
  // k = 2 makes c symmetric, so C_1 = C_2 = 0.4999995000005, w = 1/2 each, and
  // gA = (Ċ_i − Σ w Ċ)/τ = 0 and gB = −(C_i − Σ w C)/τ = 0 exactly. I_0 = 0.4999995000005.
  // Flow: x_0 = 16·0.5·I_0 = 3.999996; each child gets (16 − 3.999996)/2 = 6.000002.
  // Floors 3 + 6 + 6 = 15, one unit left: fractional parts 0.999996 (node 0) > 0.000002 →
  // node 0. Plan: 0 → 4, 1 → 6, 2 → 6; ψ = 2·0.5 = 1 everywhere → depth 4.
  //
  // Tree "identical": e_1 = (1,1) and e_2 = (2,2) point the same way: s = 1, d = 0. Both are
  // visited, Δr = |0 − 1| = 1, Δu = 0: c = 1 / (1 + 0 + 1e-6) = 0.999999000001, and with d = 0
  // ∂c/∂a = 0. C = 0.999999000001 for both, w = 1/2, I_0 = 0.999999000001.
  // Flow: x_0 = 8·I_0 = 7.999992, children 4.000004 each → floors 7 + 4 + 4 = 15, node 0
  // (fraction 0.999992) takes the last unit: 0 → 8, 1 → 4, 2 → 4, all at depth 4.
  const c1 = 0.4999995000005;
  const c2 = 0.999999000001;
  for (const [label, i] of [['reference', 0], ['CLI', 1]] as const) {
    it(`${label} matches the hand computation`, () => {
      const [zero, same] = bothPlans('group2.json')[i].trees;
      expectScores(zero, [1, 2].map((node) => ({ node, contrast: c1, weight: 0.5, gradAlpha: 0, gradTau: 0 })), { 0: c1 });
      expect(zero.allocations).toEqual([{ node: 0, branches: 4, depth: 4 }, { node: 1, branches: 6, depth: 4 }, { node: 2, branches: 6, depth: 4 }]);
      expectScores(same, [1, 2].map((node) => ({ node, contrast: c2, weight: 0.5, gradAlpha: 0, gradTau: 0 })), { 0: c2 });
      expect(same.allocations).toEqual([{ node: 0, branches: 8, depth: 4 }, { node: 1, branches: 4, depth: 4 }, { node: 2, branches: 4, depth: 4 }]);
    });
  }
});

describe('a group of 3 (group3.json)', () => {
  // Children 1, 2, 3 of the root (α = 1, τ = 0.5, ε = 1e-6):
  //   1: e = (1,0), r = 1, n = 2, u = 0      2: e = (1,0), r = 0, n = 3, u = 0
  //   3: e = (0,1), r = 1, n = 0, u = 0.5    (unvisited: its reward never counts)
  // Pairs: d_12 = 0 (identical), d_13 = d_23 = 0.5 (orthogonal).
  //   Δ_12 = |1 − 0| + 0 = 1      → c_12 = 1/1.000001           = 0.999999000001,   ∂c/∂a = 0
  //   Δ_13 = 0 + |0 − 0.5| = 0.5  → c_13 = 0.5/1.000001         = 0.4999995000005,  ∂c/∂a = −0.25/1.000001² = −0.24999950000075
  //   Δ_23 = 0 + 0.5 = 0.5        → c_23 = c_13
  // C_1 = C_2 = (0.999999000001 + 0.4999995000005)/2 = 0.74999925000075, C_3 = 0.4999995000005.
  // Ċ_1 = Ċ_2 = −0.24999950000075/2 = −0.124999750000375, Ċ_3 = −0.24999950000075.
  // w ∝ (1, 1, e^{−(0.74999925000075 − 0.4999995000005)/0.5}) = (1, 1, e^{−0.4999995000005})
  //   = (1, 1, 0.606531263...) → w_1 = w_2 = 0.383651686553375, w_3 = 0.232696626893251.
  // Σ w C = 0.69182473... → gB_1 = gB_2 = −0.116348197098428, gB_3 = 0.383651302902072.
  // Σ w Ċ = −0.15408677... → gA_1 = gA_2 = 0.0581740403751738, gA_3 = −0.191825459625576.
  // I_0 = (2·0.74999925000075 + 0.4999995000005)/3 = 0.666666000000667.
  // Flow, B = 16: x_0 = 16·0.5·I_0 = 5.333328; the rest 10.666672 splits by w:
  //   x_1 = x_2 = 4.09228670270961, x_3 = 2.48209859457544.
  // Floors 5 + 4 + 4 + 2 = 15; the last unit goes to the largest fraction, node 3 (0.482).
  // Depths: ψ_1 = ψ_2 = 3·0.38365 = 1.15096 → ⌊4.6038 + 0.5⌋ = 5; ψ_3 = 0.69809 → ⌊3.2924⌋ = 3.
  const s = [
    { node: 1, contrast: 0.74999925000075, weight: 0.383651686553375, gradAlpha: 0.0581740403751738, gradTau: -0.116348197098428 },
    { node: 2, contrast: 0.74999925000075, weight: 0.383651686553375, gradAlpha: 0.0581740403751738, gradTau: -0.116348197098428 },
    { node: 3, contrast: 0.4999995000005, weight: 0.232696626893251, gradAlpha: -0.191825459625576, gradTau: 0.383651302902072 },
  ];
  for (const [label, i] of [['reference', 0], ['CLI', 1]] as const) {
    it(`${label} matches the hand computation`, () => {
      const t = bothPlans('group3.json')[i].trees[0];
      expectScores(t, s, { 0: 0.666666000000667 });
      expect(t.allocations).toEqual([
        { node: 0, branches: 5, depth: 4 },
        { node: 1, branches: 4, depth: 5 },
        { node: 2, branches: 4, depth: 5 },
        { node: 3, branches: 3, depth: 3 },
      ]);
      expect(t.pruned).toEqual([]);
    });
  }
});

describe('allocation with pruning and reflow (alloc-prune.json)', () => {
  // dim 0, so every d = 0.5; nobody is visited, so Δ is the uncertainty difference alone.
  // Root group {1, 2, 3}: u = (2, 0, 0), node 3 terminal (a dead leaf).
  //   c_12 = c_13 = 2/(2 + 0.5 + 1e-6) = 0.799999680000128, c_23 = 0.
  //   C = (0.799999680000128, 0.399999840000064, 0.399999840000064)
  //   w ∝ (1, e^{−0.8}, e^{−0.8}) ≈ (1, 0.449329, 0.449329) → (0.526687737516814, 0.236656131241593, 0.236656131241593)
  //   gA = (−0.0757299014133765, 0.0842699705867003, ×2), gB = (−0.378649658526685, 0.421350021473443, ×2)
  //   I_0 = 1.6/3 ≈ 0.533333120000085.
  // Group {4, 5} under node 1: no differences at all → c = 0, C = 0, w = 1/2, I_1 = 0; node 5 is terminal.
  // Pruning: X_0 = {1, 2} (3 is dead). w* = w_1, ρ·w* = 0.263344 > w_2 = 0.236656 → 2 is pruned.
  //   X_1 = {4}, kept. pruned = [2].
  // Flow, B = 16: x_0 = 16·0.5·I_0 = 4.26666496; the rest, 11.73333504, goes wholly to node 1
  //   (the shares of pruned 2 and dead 3 flow back through the root to 1).
  //   x_1 = m·λ·I_1 = 0; node 5 is dead, so node 4 gets all 11.73333504 and, a leaf, keeps it.
  // Whole numbers: floors 4 + 11 = 15; fractions 0.267 (node 0) < 0.733 (node 4) → node 4: 12.
  // Depths: root ψ = 1 → 4; ψ_4 = (3·w_1)·(2·w_4) = 1.580063 → ⌊4·1.580063 + 0.5⌋ = ⌊6.820⌋ = 6.
  const s = [
    { node: 1, contrast: 0.799999680000128, weight: 0.526687737516814, gradAlpha: -0.0757299014133765, gradTau: -0.378649658526685 },
    { node: 2, contrast: 0.399999840000064, weight: 0.236656131241593, gradAlpha: 0.0842699705867003, gradTau: 0.421350021473443 },
    { node: 3, contrast: 0.399999840000064, weight: 0.236656131241593, gradAlpha: 0.0842699705867003, gradTau: 0.421350021473443 },
    { node: 4, contrast: 0, weight: 0.5, gradAlpha: 0, gradTau: 0 },
    { node: 5, contrast: 0, weight: 0.5, gradAlpha: 0, gradTau: 0 },
  ];
  for (const [label, i] of [['reference', 0], ['CLI', 1]] as const) {
    it(`${label} matches the hand computation`, () => {
      const t = bothPlans('alloc-prune.json')[i].trees[0];
      expectScores(t, s, { 0: 0.533333120000085, 1: 0 });
      expect(t.pruned).toEqual([2]);
      expect(t.allocations).toEqual([{ node: 0, branches: 4, depth: 4 }, { node: 4, branches: 12, depth: 6 }]);
      expect([t.budget, t.unallocated]).toEqual([16, 0]);
    });
  }

  // ρ = 0.4 keeps node 2 (0.236656 ≥ 0.4·0.526688 = 0.210675). λ = 1:
  // x_0 = 16·I_0 = 8.53332992; the rest 7.46667008 splits over E = {1, 2} by w_1 : w_2:
  //   x_1-branch = 7.46667008·0.526688/0.763344 = 5.15184..., x_2 = 2.31482...
  // Node 1 passes all of its mass to node 4 (I_1 = 0, node 5 dead): x_4 = 5.15184.
  // Floors 8 + 2 + 5 = 15; fractions 0.533 (node 0), 0.315 (node 2), 0.152 (node 4) → node 0: 9.
  // Depths: ψ_2 = 3·0.236656 = 0.709968 → ⌊2.8399 + 0.5⌋ = 3; ψ_4 = 1.580063 → 6.
  for (const [label, i] of [['reference', 0], ['CLI', 1]] as const) {
    it(`${label}: a lower prune ratio keeps the sibling, full widening keeps more at the root`, () => {
      const t = bothPlans('alloc-prune.json', { ...DEFAULT_PARAMS, pruneRatio: 0.4, widen: 1 })[i].trees[0];
      expect(t.pruned).toEqual([]);
      expect(t.allocations).toEqual([{ node: 0, branches: 9, depth: 4 }, { node: 2, branches: 2, depth: 3 }, { node: 4, branches: 5, depth: 6 }]);
    });
  }
});

describe('pruning inside a pruned branch (alloc-nested-prune.json)', () => {
  // Root group {1, 2, 3} with u = (2, 0, 0), all open: the same numbers as alloc-prune.json,
  // so w = (0.526688, 0.236656, 0.236656) and both 2 and 3 fall below ρ·w* = 0.263344.
  // Node 2's group {4, 5, 6} has u = (2, 0, 0) again: 5 and 6 fall below its threshold too.
  // SPEC §4 prunes "for each group", so 5 and 6 are listed although no mass reaches node 2
  // (a reading that prunes only where the flow arrives would list [2, 3]).
  // Flow: x_0 = 16·0.5·I_0 = 4.26666496, node 1 (a live leaf, the only kept child) takes
  // 11.73333504 → floors 4 + 11, node 1's fraction 0.733 wins the last unit: 0 → 4, 1 → 12.
  // Depths: ψ_1 = 3·0.526688 = 1.580063 → ⌊6.820⌋ = 6.
  for (const [label, i] of [['reference', 0], ['CLI', 1]] as const) {
    it(`${label} matches the hand computation`, () => {
      const t = bothPlans('alloc-nested-prune.json')[i].trees[0];
      expect(t.pruned).toEqual([2, 3, 5, 6]);
      expect(t.allocations).toEqual([{ node: 0, branches: 4, depth: 4 }, { node: 1, branches: 12, depth: 6 }]);
    });
  }

  it('leaves scores and groups out without --scores (CLI)', () => {
    const t = scoreFile(fixture('alloc-nested-prune.json'), DEFAULT_PARAMS, { scores: false }).trees[0];
    expect(Object.keys(t).sort()).toEqual(['allocations', 'budget', 'id', 'pruned', 'unallocated']);
    expect(t.pruned).toEqual([2, 3, 5, 6]);
  });
});

describe('largest-remainder ties go to the smaller node (alloc-ties.json)', () => {
  // Three featureless siblings: C = 0, w = 1/3 each, I_0 = 0 → x_0 = 0 and x_i = 16/3 = 5.333…
  // Floors 5 + 5 + 5 = 15; three equal fractions, one unit → the smallest index, node 1.
  // ψ = 3·(1/3) = 1 → depth 4. With depth-gain 0, ψ^0 = 1 as well; base-depth 3 and
  // max-depth 2 clamp every depth to 2.
  for (const [label, i] of [['reference', 0], ['CLI', 1]] as const) {
    it(`${label} matches the hand computation`, () => {
      const t = bothPlans('alloc-ties.json')[i].trees[0];
      expect(t.allocations).toEqual([{ node: 1, branches: 6, depth: 4 }, { node: 2, branches: 5, depth: 4 }, { node: 3, branches: 5, depth: 4 }]);
      const clamped = bothPlans('alloc-ties.json', { ...DEFAULT_PARAMS, baseDepth: 3, depthGain: 0, maxDepth: 2 })[i].trees[0];
      expect(clamped.allocations.map((a) => a.depth)).toEqual([2, 2, 2]);
    });
  }
});

describe('global budget (global.json)', () => {
  // Trees: "contested" (= alloc-prune), "calm" (= alloc-ties), "finished" (all terminal: dead).
  // B_total = 10, μ = 1, L = {contested, calm}.
  //   Q_contested = 1e-3 + mean(I_0, I_1) = 1e-3 + (0.53333312 + 0)/2 = 0.26766656
  //   Q_calm      = 1e-3 + mean(I_0)     = 1e-3 + 0                  = 0.001
  //   M_contested = 1 + 8·0.26766656/0.26866656 = 8.97022331, M_calm = 1 + 8·0.001/0.26866656 = 1.02977669
  //   floors 8 + 1 = 9, last unit to the larger fraction → contested 9, calm 1, finished 0.
  // contested with B = 9: x_0 = 4.5·I_0 = 2.39999904, x_4 = 6.60000096 → 2 + 6, node 4 takes the unit: 7.
  // calm with B = 1: x_i = 1/3 each, floors 0, one unit → node 1.
  for (const [label, i] of [['reference', 0], ['CLI', 1]] as const) {
    it(`${label} matches the hand computation`, () => {
      const p: SpecParams = { ...DEFAULT_PARAMS, budget: { kind: 'global', total: 10, minPerTree: 1 } };
      const [contested, calm, finished] = bothPlans('global.json', p)[i].trees;
      expect([contested.budget, calm.budget, finished.budget]).toEqual([9, 1, 0]);
      expect(contested.allocations).toEqual([{ node: 0, branches: 2, depth: 4 }, { node: 4, branches: 7, depth: 6 }]);
      expect(calm.allocations).toEqual([{ node: 1, branches: 1, depth: 4 }]);
      expect(finished.allocations).toEqual([]);
      expect([contested.unallocated, calm.unallocated, finished.unallocated]).toEqual([0, 0, 0]);
    });
  }

  // Per-tree mode on the same file: a dead root allocates nothing and reports B unallocated.
  it('per-tree mode reports a dead tree\'s whole budget as unallocated (CLI)', () => {
    const t = scoreFile(fixture('global.json'), DEFAULT_PARAMS).trees[2];
    expect(t.allocations).toEqual([]);
    expect([t.budget, t.unallocated]).toEqual([16, 16]);
  });

  // B_total < μ·|L| is an error (SPEC §4): 2 live trees need at least 2·3 = 6.
  it('rejects a total below μ·|L| with exit 2 and a one-line message (CLI)', () => {
    const r = runCli(['score', fixture('global.json'), '--backend', 'cpu', '--total-budget', '5', '--min-per-tree', '3']);
    expect(r.status).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
  });
});

describe('global budget with a tree that has no sibling groups (global-no-groups.json)', () => {
  // "Q_t = 1e−3 + mean of I_p over t's groups with k ≥ 2 (0 when it has none)": read here as
  // the mean being 0, so a bare root has Q = 1e-3 (reading Q = 0 instead would give it exactly μ).
  // B_total = 1000, μ = 1: Q_contested = 0.26766656, Q_bare = 0.001, spare 998.
  //   M_contested = 1 + 998·0.26766656/0.26866656 = 995.28535833, M_bare = 1 + 998·0.001/0.26866656 = 4.71464167
  //   floors 995 + 4 = 999, last unit to the larger fraction 0.715 → bare root 5, contested 995.
  // bare root: no live child, so x_0 = 5 (five rollouts from the root), depth 4.
  for (const [label, i] of [['reference', 0], ['CLI', 1]] as const) {
    it(`${label} matches the hand computation`, () => {
      const p: SpecParams = { ...DEFAULT_PARAMS, budget: { kind: 'global', total: 1000, minPerTree: 1 } };
      const [contested, bare] = bothPlans('global-no-groups.json', p)[i].trees;
      expect([contested.budget, bare.budget]).toEqual([995, 5]);
      expect(bare.allocations).toEqual([{ node: 0, branches: 5, depth: 4 }]);
    });
  }
});
