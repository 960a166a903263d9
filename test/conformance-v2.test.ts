/**
 * Conformance of the real CLI with an independent float64 reading of TRACE v2
 * (docs/ALGORITHM.md; the reference is test/reference/v2.ts, written from that document alone).
 * The CLI is a black box: `trace-alloc score FILE --scores --backend cpu --rule v2 [flags]`
 * (v5 is the default now; v2 must keep its plans exactly when named).
 *
 * Scores are held to the float64 contract, 1e-9·max(1, |value|); budgets, `unallocated`,
 * `pruned` and every {node, branches, depth} exactly, except where the reference itself sits
 * within 1e-9 of a decision boundary (compare.ts).
 *
 * CONFORMANCE_RUNS=n (default 40) sets the random forests, CONFORMANCE_SEED=s reproduces a
 * failure; the failing forest and command line are kept under $TMPDIR/trace-alloc-conformance/.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { v2CaseArb, type V2Case } from './reference/arbitrary.js';
import { runCli, scoreFileV2, v2Flags, type V2FlagOptions } from './reference/cli.js';
import { comparePlans } from './reference/compare.js';
import type { PlanTree, SpecForest, SpecNode, SpecTree } from './reference/spec.js';
import { EPS, referencePlanV2, V2_DEFAULTS, type V2Params, type V2Plan, type V2Result } from './reference/v2.js';
import { PROPERTY_SEED } from './property-seed.js';

const RUNS = Number(process.env.CONFORMANCE_RUNS ?? 40);
const SEED = process.env.CONFORMANCE_SEED === undefined ? PROPERTY_SEED : Number(process.env.CONFORMANCE_SEED);

const workDir = mkdtempSync(join(tmpdir(), 'trace-alloc-conf-v2-'));
afterAll(() => rmSync(workDir, { recursive: true, force: true }));
let files = 0;

function forestText(forest: SpecForest, format: 'json' | 'jsonl'): string {
  return format === 'json' ? JSON.stringify(forest) : forest.trees.map((t) => JSON.stringify(t)).join('\n') + '\n';
}

function writeForest(forest: SpecForest, format: 'json' | 'jsonl' = 'json'): { file: string; text: string } {
  const text = forestText(forest, format);
  const file = join(workDir, `forest-${files++}.${format}`);
  writeFileSync(file, text);
  return { file, text };
}

function keepFailure(format: string, text: string, args: string[], problems: string[]): string {
  const dir = join(tmpdir(), 'trace-alloc-conformance');
  mkdirSync(dir, { recursive: true });
  const base = join(dir, `v2-failure-${process.pid}-${files}`);
  writeFileSync(`${base}.${format}`, text);
  writeFileSync(`${base}.txt`, `trace-alloc ${args.join(' ')}\n\n${problems.join('\n')}\n`);
  return base;
}

/** Every departure of a CLI v2 plan from the reference, top-level global fields included. */
function v2Problems(got: V2Plan, ref: V2Result, params: V2Params, exactTies = false): string[] {
  const problems = comparePlans(got, ref, { float64: true, exactTies });
  if (params.budget.kind === 'global') {
    if (got.totalBudget !== params.budget.total) problems.push(`totalBudget got ${got.totalBudget}, want ${params.budget.total}`);
    if (got.unallocated !== ref.plan.unallocated) problems.push(`top-level unallocated got ${got.unallocated}, want ${ref.plan.unallocated}`);
  } else if (got.totalBudget !== undefined || got.unallocated !== undefined) {
    problems.push('per-tree mode: top-level totalBudget/unallocated present');
  }
  return problems;
}

function checkCase(c: V2Case): void {
  const { file, text } = writeForest(c.forest, c.format);
  // the reference reads back the very bytes the CLI reads
  const forest: SpecForest = c.format === 'json'
    ? (JSON.parse(text) as SpecForest)
    : { dim: c.forest.dim, trees: text.trim().split('\n').map((l) => JSON.parse(l) as SpecTree) };
  const flags: V2FlagOptions = { explicit: c.explicit, rule: c.rule, widen: c.widen };
  const args = ['score', file, '--scores', '--backend', 'cpu', ...v2Flags(c.params, flags)];
  const r = runCli(args);
  if (r.status !== 0) {
    const where = keepFailure(c.format, text, args, [`exit ${r.status}: ${r.stderr.trim()}`]);
    throw new Error(`CLI exited ${r.status}: ${r.stderr.trim()} (kept at ${where})`);
  }
  const problems = v2Problems(JSON.parse(r.stdout) as V2Plan, referencePlanV2(forest, c.params), c.params);
  if (problems.length > 0) {
    const where = keepFailure(c.format, text, args, problems);
    throw new Error(`${problems.length} disagreement(s) with the v2 reference (kept at ${where}):\n${problems.slice(0, 20).join('\n')}`);
  }
}

describe('CLI conforms to the independent v2 reference on random forests', () => {
  it(`agrees on ${RUNS} random forests (both budget modes, JSON and JSON Lines, --rule v2 and --rule=v2)`, () => {
    fc.assert(fc.property(v2CaseArb, (c) => { checkCase(c); }), {
      numRuns: RUNS,
      seed: SEED,
      interruptAfterTimeLimit: 300_000,
      markInterruptAsFailure: false,
    });
  }, 600_000);

  it('the generator reaches both rule spellings, both modes, --widen, κ = 0, ρ = 0 and non-default q0', () => {
    const seen = { spacedRule: false, joinedRule: false, global: false, perTree: false, widen: false, kappa0: false, rho0: false, floor: false, jsonl: false };
    for (const c of fc.sample(v2CaseArb, { numRuns: RUNS, seed: SEED ?? 42 })) {
      seen.spacedRule ||= c.rule === 'spaced';
      seen.joinedRule ||= c.rule === 'joined';
      seen.global ||= c.params.budget.kind === 'global';
      seen.perTree ||= c.params.budget.kind === 'perTree';
      seen.widen ||= c.widen !== undefined;
      seen.kappa0 ||= c.params.contestGain === 0;
      seen.rho0 ||= c.params.pruneRatio === 0;
      seen.floor ||= c.params.budget.kind === 'global' && c.params.treeFloor !== 0.25;
      seen.jsonl ||= c.format === 'jsonl';
    }
    expect(seen).toEqual({ spacedRule: true, joinedRule: true, global: true, perTree: true, widen: true, kappa0: true, rho0: true, floor: true, jsonl: true });
  });
});

// ------------------------------------------------------------------ hand cases

const HAND = 1e-12;
const near = (got: number, want: number, tol = HAND) => expect(Math.abs(got - want), `got ${got}, want ${want}`).toBeLessThanOrEqual(tol * Math.max(1, Math.abs(want)));

/** Scores the forest with the CLI and the reference; the two must agree (exactTies where ties are exact by construction). */
function both(forest: SpecForest, params: V2Params = V2_DEFAULTS, opts: { exactTies?: boolean; flags?: V2FlagOptions } = {}): { cli: V2Plan; ref: V2Result } {
  const { file } = writeForest(forest);
  const cli = scoreFileV2(file, params, opts.flags);
  const ref = referencePlanV2(forest, params);
  expect(v2Problems(cli, ref, params, opts.exactTies)).toEqual([]);
  return { cli, ref };
}

const allocs = (t: PlanTree) => t.allocations.map((a) => [a.node, a.branches, a.depth]);

// docs/ALGORITHM.md, worked example 1 (and 2: node 4 under A with two finished children)
const exampleNodes: SpecNode[] = [
  { parent: -1, reward: 0.5, visits: 4, embedding: [1, 1] },
  { parent: 0, reward: 1, visits: 2, uncertainty: 0.1, embedding: [1, 0] },
  { parent: 0, reward: 0, visits: 2, uncertainty: 0.1, embedding: [1, 0.1] },
  { parent: 0, reward: 0.5, visits: 0, uncertainty: 0.3, embedding: [0, 1] },
];
const example1: SpecForest = { dim: 2, trees: [{ id: 'ex1', nodes: exampleNodes }] };
const example2: SpecForest = {
  dim: 2,
  trees: [{ id: 'ex2', nodes: [
    ...exampleNodes,
    { parent: 1, reward: 1, visits: 2, uncertainty: 0.2, embedding: [1, 0] },
    { parent: 4, reward: 1, visits: 1, terminal: true, embedding: [1, 0] },
    { parent: 4, reward: 1, visits: 1, terminal: true, embedding: [1, 0.2] },
  ] }],
};

/** A number the document prints with `digits` decimals: within half a unit of its last place (plus `slack`). */
function printed(got: number, doc: number, digits: number, slack = 0): void {
  expect(Math.abs(got - doc), `got ${got}, the document prints ${doc}`).toBeLessThanOrEqual(0.5 * 10 ** -digits + slack + 1e-15);
}

describe('docs/ALGORITHM.md worked example 1 under v2', () => {
  it('the CLI and the reference print the document\'s plan: root 8, A 3, B 3, C 2; depths 4, 4, 4, 3', () => {
    const { cli, ref } = both(example1);
    for (const t of [cli.trees[0], ref.plan.trees[0]]) {
      expect(allocs(t)).toEqual([[0, 8, 4], [1, 3, 4], [2, 3, 4], [3, 2, 3]]);
      expect(t.pruned).toEqual([]);
    }
  });

  it('its scores, claims and shares match the numbers the document prints', () => {
    const { cli, ref } = both(example1);
    const s = cli.trees[0].scores ?? [];
    [0.570191, 0.575656, 0.444965].forEach((c, i) => printed(s[i].contrast, c, 6));
    [0.358495, 0.362435, 0.279070].forEach((w, i) => printed(s[i].weight, w, 6));
    [0.147026, 0.142580, -0.374042].forEach((g, i) => printed(s[i].gradAlpha, g, 6));
    [-0.065932, -0.076862, 0.184519].forEach((g, i) => printed(s[i].gradTau, g, 6));
    printed(cli.trees[0].groups?.[0].intensity ?? NaN, 0.530271, 6);
    // claims: ψ = 3·w for A, B, C; the root claims 1 + 4·I
    [1.075485, 1.087304, 0.837211].forEach((psi, i) => printed(ref.psi[0][i + 1], psi, 6));
    // The document computes the root claim and the sum from the rounded I = 0.530271
    // (1 + 4·0.530271 = 3.121084); the unrounded values are 3.1210827 and 6.1210827.
    printed(ref.claim[0][0], 3.121084, 6, 4 * 0.5e-6);
    printed(ref.claim[0].reduce((a, b) => a + b, 0), 6.121084, 6, 4 * 0.5e-6);
    [8.1583, 2.8112, 2.8421, 2.1884].forEach((x, i) => printed(ref.mass[0][i], x, 4));
    printed(4 * ref.psi[0][1], 4.302, 3);
    printed(4 * ref.psi[0][3], 3.349, 3);
  });

  it('σ follows the document: A and B (equal u) share equally, C takes 1.5 of each pair with them', () => {
    const { cli } = both(example1);
    const s = cli.trees[0].scores ?? [];
    const d = (a: number[], b: number[]) => {
      const na = Math.hypot(...a);
      const nb = Math.hypot(...b);
      return a.reduce((acc, x, i) => acc + (x / na - b[i] / nb) ** 2, 0) / 4;
    };
    const c = (gap: number, dist: number) => gap / (gap + dist + EPS);
    const cab = c(1, d([1, 0], [1, 0.1]));
    const cac = c(0.2, d([1, 0], [0, 1]));
    const cbc = c(0.2, d([1, 0.1], [0, 1]));
    const sAC = (2 * (0.1 + EPS)) / (0.4 + 2 * EPS);
    const sCA = 2 - sAC;
    near(s[0].contrast, (cab + sAC * cac) / 2, 1e-12);
    near(s[1].contrast, (cab + sAC * cbc) / 2, 1e-12);
    near(s[2].contrast, (sCA * cac + sCA * cbc) / 2, 1e-12);
    near(cli.trees[0].groups?.[0].intensity ?? NaN, (cab + cac + cbc) / 3, 1e-12);
  });

  it('--rule v1 still gives the document\'s v1 plan: root 4, A 6, B 6, C pruned', () => {
    const { file } = writeForest(example1);
    const r = runCli(['score', file, '--backend', 'cpu', '--rule', 'v1']);
    expect(r.status).toBe(0);
    const t = (JSON.parse(r.stdout) as V2Plan).trees[0];
    expect(allocs(t)).toEqual([[0, 4, 4], [1, 6, 5], [2, 6, 5]]);
    expect(t.pruned).toEqual([3]);
  });
});

describe('docs/ALGORITHM.md worked example 2: a chain below a fork', () => {
  it('root 7, A 2, B 3, C 2, node 4 2; the finished children claim nothing', () => {
    const { cli, ref } = both(example2);
    for (const t of [cli.trees[0], ref.plan.trees[0]]) {
      expect(t.allocations.map((a) => [a.node, a.branches])).toEqual([[0, 7], [1, 2], [2, 3], [3, 2], [4, 2]]);
      expect(t.pruned).toEqual([]);
    }
    const s = cli.trees[0].scores ?? [];
    expect(s.slice(3).map((x) => [x.node, x.contrast, x.weight, x.gradAlpha, x.gradTau])).toEqual([[4, 0, 1, 0, 0], [5, 0, 0.5, 0, 0], [6, 0, 0.5, 0, 0]]);
    expect(cli.trees[0].groups?.map((g) => g.parent)).toEqual([0, 1, 4]);
    expect(cli.trees[0].groups?.slice(1).map((g) => g.intensity)).toEqual([0, 0]);
    [3.121084, 1.075485, 1.087304, 0.837211, 1.075485, 0, 0].forEach((c, v) => printed(ref.claim[0][v], c, 6, v === 0 ? 4 * 0.5e-6 : 0));
    // printed 7.196569: the rounded root claim again, plus rounding of the other four terms
    printed(ref.claim[0].reduce((a, b) => a + b, 0), 7.196569, 6, 4 * 0.5e-6 + 4 * 0.5e-6);
    [6.9390, 2.3911, 2.4174, 1.8614, 2.3911, 0, 0].forEach((x, v) => printed(ref.mass[0][v], x, 4));
  });
});

/** A featureless node: dim 0, no reward or uncertainty, so every gap is 0 and every weight 1/k. */
const bare = (parent: number, terminal = false): SpecNode => ({ parent, terminal });

describe('hand cases', () => {
  it('a chain of open nodes: every node claims 1, B = 16 → 4 each at depth 4', () => {
    const { cli } = both({ dim: 0, trees: [{ nodes: [bare(-1), bare(0), bare(1), bare(2)] }] }, V2_DEFAULTS, { exactTies: true });
    expect(allocs(cli.trees[0])).toEqual([[0, 4, 4], [1, 4, 4], [2, 4, 4], [3, 4, 4]]);
    expect(cli.trees[0].groups?.map((g) => [g.parent, g.intensity])).toEqual([[0, 0], [1, 0], [2, 0]]);
  });

  it('a chain ending in a finished step: x = 16/3 on the three open nodes, the spare unit to the smallest index', () => {
    const { cli } = both({ dim: 0, trees: [{ nodes: [bare(-1), bare(0), bare(1), bare(2, true)] }] }, V2_DEFAULTS, { exactTies: true });
    expect(allocs(cli.trees[0])).toEqual([[0, 6, 4], [1, 5, 4], [2, 5, 4]]);
  });

  it('all-terminal trees place nothing: unallocated = B, nothing pruned', () => {
    const dead: SpecTree = { id: 'done', nodes: [bare(-1, true), bare(0, true), bare(0, true), bare(1, true)] };
    const { cli } = both({ dim: 0, trees: [dead, { id: 'leaf', nodes: [bare(-1, true)] }] });
    for (const t of cli.trees) {
      expect([t.budget, t.unallocated, t.allocations, t.pruned]).toEqual([16, 16, [], []]);
    }
  });

  it('a terminal root with live children claims nothing itself: its two open children take 8 each', () => {
    const { cli } = both({ dim: 0, trees: [{ nodes: [bare(-1, true), bare(0), bare(0), bare(0, true)] }] }, V2_DEFAULTS, { exactTies: true });
    expect(allocs(cli.trees[0])).toEqual([[1, 8, 4], [2, 8, 4]]);
    expect(cli.trees[0].pruned).toEqual([]); // node 3 is dead: not in X, so not pruned
  });

  it('a terminal root above a one-child chain: the budget goes to the open nodes below it', () => {
    const { cli } = both({ dim: 0, trees: [{ nodes: [bare(-1, true), bare(0), bare(1)] }] }, { ...V2_DEFAULTS, budget: { kind: 'perTree', budget: 5 } }, { exactTies: true });
    expect(allocs(cli.trees[0])).toEqual([[1, 3, 4], [2, 2, 4]]);
  });

  // dim 0: d = ½; unvisited, so Δ = |u_1 − u_2| = 0.2 and c = 0.2/0.700001 for both directions.
  const unequal: SpecForest = { dim: 0, trees: [{ nodes: [bare(-1), { parent: 0, uncertainty: 0.1 }, { parent: 0, uncertainty: 0.3 }] }] };
  it('a pair with unequal uncertainty: C_1 = σ_12·c, C_2 = σ_21·c with σ_12 = 2·0.100001/0.400002 = ½', () => {
    const { cli, ref } = both(unequal);
    const c = 0.2 / (0.2 + 0.5 + EPS);
    const cdot = (-0.2 * 0.5) / (0.2 + 0.5 + EPS) ** 2;
    const sigma = (2 * (0.1 + EPS)) / (0.4 + 2 * EPS);
    const C = [sigma * c, (2 - sigma) * c];
    const Cd = [sigma * cdot, (2 - sigma) * cdot];
    const e = C.map((x) => Math.exp((x - C[1]) / 0.5));
    const w = e.map((x) => x / (e[0] + e[1]));
    const s = cli.trees[0].scores ?? [];
    s.forEach((x, i) => {
      near(x.contrast, C[i]);
      near(x.weight, w[i]);
      near(x.gradAlpha, (Cd[i] - (w[0] * Cd[0] + w[1] * Cd[1])) / 0.5);
      near(x.gradTau, -(C[i] - (w[0] * C[0] + w[1] * C[1])) / 0.5);
    });
    expect(s[0].gradAlpha).not.toBe(0);
    near(cli.trees[0].groups?.[0].intensity ?? NaN, c); // (σ_12 + σ_21)·c/2 = c
    // claims: root 1 + 4c, children ψ_i = 2·w_i; w_1/w_2 = e^{−c/τ} ≈ 0.565 ≥ ρ = ½: both kept
    const claims = [1 + 4 * c, 2 * w[0], 2 * w[1]];
    const total = claims[0] + claims[1] + claims[2];
    claims.forEach((x, v) => near(ref.mass[0][v], (16 * x) / total));
    expect(cli.trees[0].pruned).toEqual([]);
  });

  it('ρ = 0 keeps every live child, however small its weight; ρ = ½ prunes it and its claim goes to the rest', () => {
    const sharp: V2Params = { ...V2_DEFAULTS, tau: 0.05 };
    const kept = both(unequal, { ...sharp, pruneRatio: 0 });
    const pruned = both(unequal, sharp);
    expect(kept.cli.trees[0].pruned).toEqual([]);
    expect(pruned.cli.trees[0].pruned).toEqual([1]);
    expect(kept.ref.claim[0][1]).toBeGreaterThan(0);
    expect(pruned.ref.claim[0][1]).toBe(0);
    near(pruned.ref.mass[0].reduce((a, b) => a + b, 0), 16);
  });

  it('equal uncertainty shares a pair equally (σ = 1): C_1 = C_2, w = ½, no gradient', () => {
    const pair = (u: number | undefined): SpecForest => ({ dim: 0, trees: [{ nodes: [bare(-1),
      { parent: 0, reward: 0, visits: 1, ...(u === undefined ? {} : { uncertainty: u }) },
      { parent: 0, reward: 1, visits: 1, ...(u === undefined ? {} : { uncertainty: u }) }] }] });
    for (const u of [0.2, 0, undefined]) { // u = 0 both: σ = 2ε/2ε = 1
      const { cli } = both(pair(u), V2_DEFAULTS, { exactTies: true });
      const c = 1 / (1 + 0.5 + EPS);
      for (const s of cli.trees[0].scores ?? []) {
        near(s.contrast, c);
        expect([s.weight, s.gradAlpha, s.gradTau]).toEqual([0.5, 0, 0]);
      }
      // root claims 1 + 4c, each child ψ = 1
      const x0 = (16 * (1 + 4 * c)) / (3 + 4 * c);
      expect(allocs(cli.trees[0])).toEqual([[0, Math.round(x0), 4], [1, (16 - Math.round(x0)) / 2, 4], [2, (16 - Math.round(x0)) / 2, 4]]);
    }
  });

  it('a group of one: C = 0, w = 1, gA = gB = 0, I = 0, and its head claims 1', () => {
    const { cli, ref } = both({ dim: 1, trees: [{ nodes: [{ parent: -1, embedding: [1] }, { parent: 0, reward: 1, visits: 3, uncertainty: 0.7, embedding: [2] }] }] });
    expect(cli.trees[0].scores).toEqual([{ node: 1, contrast: 0, weight: 1, gradAlpha: 0, gradTau: 0 }]);
    expect(cli.trees[0].groups).toEqual([{ parent: 0, intensity: 0 }]);
    expect(ref.claim[0]).toEqual([1, 1]);
    expect(allocs(cli.trees[0])).toEqual([[0, 8, 4], [1, 8, 4]]);
  });

  it('κ = 0: every reached open node claims its ψ alone (example 1: root 4, A 4, B 5, C 3)', () => {
    const { cli, ref } = both(example1, { ...V2_DEFAULTS, contestGain: 0 });
    expect(ref.claim[0][0]).toBe(1);
    expect(cli.trees[0].allocations.map((a) => [a.node, a.branches])).toEqual([[0, 4], [1, 4], [2, 5], [3, 3]]);
  });
});

describe('hand cases, global budget', () => {
  const bareRoot: SpecTree = { id: 'bare', nodes: [{ parent: -1, embedding: [1, 0] }] };
  const forest: SpecForest = { dim: 2, trees: [{ id: 'ex1', nodes: exampleNodes }, bareRoot] };
  const global = (total: number, minPerTree: number, treeFloor = 0.25): V2Params => ({ ...V2_DEFAULTS, treeFloor, budget: { kind: 'global', total, minPerTree } });

  it('the default floor q0 = 0.25: Q = (0.25 + I, 0.25), B_total = 20 → 15 and 5', () => {
    const { cli, ref } = both(forest, global(20, 1));
    const I = ref.plan.trees[0].groups?.[0].intensity as number;
    const M = [1 + (18 * (0.25 + I)) / (0.5 + I), 1 + (18 * 0.25) / (0.5 + I)];
    near(M[0], 14.632, 1e-4);
    expect(cli.trees.map((t) => t.budget)).toEqual([15, 5]);
    expect(allocs(cli.trees[1])).toEqual([[0, 5, 4]]);
    expect(cli.trees[0].allocations.map((a) => [a.node, a.branches])).toEqual([[0, 8], [1, 2], [2, 3], [3, 2]]);
    expect([cli.totalBudget, cli.unallocated]).toEqual([20, 0]);
  });

  it('--tree-floor 1e-3 (v1\'s floor) starves the tree without a fork: 19 and 1', () => {
    const { cli } = both(forest, global(20, 1, 1e-3));
    expect(cli.trees.map((t) => t.budget)).toEqual([19, 1]);
  });

  it('no live tree: every tree gets 0 and the top-level unallocated carries the total', () => {
    const dead: SpecForest = { dim: 0, trees: [{ nodes: [bare(-1, true), bare(0, true)] }, { nodes: [bare(-1, true)] }] };
    const { cli } = both(dead, global(7, 2));
    expect(cli.trees.map((t) => [t.budget, t.unallocated, t.allocations.length])).toEqual([[0, 0, 0], [0, 0, 0]]);
    expect([cli.totalBudget, cli.unallocated]).toEqual([7, 7]);
  });

  it('a dead tree beside live ones gets 0; the live ones split the total', () => {
    const mixed: SpecForest = { dim: 0, trees: [{ nodes: [bare(-1, true)] }, { nodes: [bare(-1), bare(0), bare(0)] }, { nodes: [bare(-1)] }] };
    const { cli } = both(mixed, global(9, 1), { exactTies: true });
    // Q = 0.25 + 0 for both live trees: M = 4.5 each → 4 + 4, the spare unit to the smaller tree
    expect(cli.trees.map((t) => t.budget)).toEqual([0, 5, 4]);
  });
});

describe('the rule the plan names', () => {
  it('the default is v5: the same plan as --rule v5, and not v2\'s on a contested fork', () => {
    const { file } = writeForest(example2);
    const plain = runCli(['score', file, '--scores', '--backend', 'cpu']);
    const v5 = runCli(['score', file, '--scores', '--backend', 'cpu', '--rule', 'v5']);
    const v2 = runCli(['score', file, '--scores', '--backend', 'cpu', '--rule', 'v2']);
    expect([plain.status, v5.status, v2.status]).toEqual([0, 0, 0]);
    expect(v5.stdout).toBe(plain.stdout);
    expect(v2.stdout).not.toBe(plain.stdout);
  });

  // docs/ALGORITHM.md, "Files and plan fields": "params.rule says which rule made the plan".
  it('params.rule says v5 by default, and the rule asked for under --rule', () => {
    const { file } = writeForest(example1);
    const rule = (...flags: string[]) => (JSON.parse(runCli(['score', file, '--backend', 'cpu', ...flags]).stdout) as { params: { rule?: string } }).params.rule;
    expect([rule(), rule('--rule', 'v4'), rule('--rule', 'v3'), rule('--rule', 'v2'), rule('--rule', 'v1')]).toEqual(['v5', 'v4', 'v3', 'v2', 'v1']);
  });
});
