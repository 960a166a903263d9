import { describe, expect, it } from 'vitest';
import { allocate } from '../src/allocate/allocate.js';
import type { NodeInput } from '../src/forest/input.js';
import { packForest } from '../src/forest/packed.js';
import { scoreCpu } from '../src/score/cpu.js';

// The 3-sibling fork worked by hand in docs/ALGORITHM.md; the numbers below are the doc's.
const fork: NodeInput[] = [
  { parent: -1, visits: 4, reward: 0.5, embedding: [1, 1] },
  { parent: 0, reward: 1, visits: 2, uncertainty: 0.1, embedding: [1, 0] },
  { parent: 0, reward: 0, visits: 2, uncertainty: 0.1, embedding: [1, 0.1] },
  { parent: 0, reward: 0.5, visits: 0, uncertainty: 0.3, embedding: [0, 1] },
];
const forest = packForest({ dim: 2, trees: [{ id: 'ex', nodes: fork }] });

describe('worked example 1 of docs/ALGORITHM.md under --rule v1', () => {
  const s = scoreCpu(forest, { rule: 'v1' });
  it('scores the fork as computed by hand', () => {
    const c = { ab: 1 / (1 + (1 - 1 / Math.sqrt(1.01)) / 2 + 1e-6), ac: 0.2 / (0.2 + 0.5 + 1e-6), bc: 0.2 / (0.2 + (1 - 0.1 / Math.sqrt(1.01)) / 2 + 1e-6) };
    const C = [(c.ab + c.ac) / 2, (c.ab + c.bc) / 2, (c.ac + c.bc) / 2];
    const e = C.map((x) => Math.exp(x / 0.5));
    const z = e[0] + e[1] + e[2];
    C.forEach((x, i) => {
      expect(s.contrast[i + 1]).toBeCloseTo(x, 12);
      expect(s.weight[i + 1]).toBeCloseTo(e[i] / z, 12);
    });
    expect(Array.from(s.contrast.subarray(1), (x) => +x.toFixed(6))).toEqual([0.641619, 0.652549, 0.296644]);
    expect(Array.from(s.weight.subarray(1), (x) => +x.toFixed(6))).toEqual([0.396243, 0.405001, 0.198756]);
    expect(Array.from(s.gradAlpha.subarray(1), (x) => +x.toFixed(6))).toEqual([0.04544, 0.036549, -0.165063]);
    expect(Array.from(s.gradTau.subarray(1), (x) => +x.toFixed(6))).toEqual([-0.128278, -0.150139, 0.561671]);
    expect(+s.intensity[0].toFixed(6)).toBe(0.530271);
  });

  it('prunes C, reflows its share to A and B, and rounds 4 / 6 / 6', () => {
    const a = allocate(forest, s, { budget: 16 });
    expect(Array.from(a.pruned)).toEqual([0, 0, 0, 1]);
    expect(a.mass[0]).toBeCloseTo(16 * 0.5 * s.intensity[0], 12);
    expect(a.mass[1] + a.mass[2]).toBeCloseTo(16 - a.mass[0], 12);
    expect(a.mass[3]).toBe(0);
    expect(Array.from(a.branches)).toEqual([4, 6, 6, 0]);
    expect(Array.from(a.depth)).toEqual([4, 5, 5, 0]);
  });
});

describe('worked example 1 of docs/ALGORITHM.md under v2', () => {
  const s = scoreCpu(forest, { rule: 'v2' });
  it('shares each pair by uncertainty: C moves up, the intensity is v1\'s', () => {
    expect(s.params.rule).toBe('v2');
    expect(Array.from(s.contrast.subarray(1), (x) => +x.toFixed(6))).toEqual([0.570191, 0.575656, 0.444965]);
    expect(Array.from(s.weight.subarray(1), (x) => +x.toFixed(6))).toEqual([0.358495, 0.362435, 0.27907]);
    expect(Array.from(s.gradAlpha.subarray(1), (x) => +x.toFixed(6))).toEqual([0.147026, 0.14258, -0.374042]);
    expect(Array.from(s.gradTau.subarray(1), (x) => +x.toFixed(6))).toEqual([-0.065932, -0.076862, 0.184519]);
    expect(+s.intensity[0].toFixed(6)).toBe(0.530271);
    // σ_AC = 2·(0.1 + ε)/(0.1 + 0.3 + 2ε) = 0.5, σ_CA = 1.5, by hand:
    const c = { ab: 1 / (1 + (1 - 1 / Math.sqrt(1.01)) / 2 + 1e-6), ac: 0.2 / (0.2 + 0.5 + 1e-6), bc: 0.2 / (0.2 + (1 - 0.1 / Math.sqrt(1.01)) / 2 + 1e-6) };
    const sAC = (2 * (0.1 + 1e-6)) / (0.4 + 2e-6);
    expect(s.contrast[1]).toBeCloseTo((c.ab + sAC * c.ac) / 2, 12);
    expect(s.contrast[3]).toBeCloseTo(((2 - sAC) * c.ac + (2 - sAC) * c.bc) / 2, 12);
  });

  it('claims: root 1 + 4·I, children ψ = 3·w; 8 / 3 / 3 / 2 of 16, nothing pruned', () => {
    const a = allocate(forest, s, { budget: 16 });
    expect(Array.from(a.pruned)).toEqual([0, 0, 0, 0]);
    const claims = [1 + 4 * s.intensity[0], 3 * s.weight[1], 3 * s.weight[2], 3 * s.weight[3]];
    const sum = claims.reduce((x, y) => x + y, 0);
    claims.forEach((c, v) => expect(a.mass[v]).toBeCloseTo((16 * c) / sum, 12));
    expect(Array.from(a.mass, (x) => +x.toFixed(4))).toEqual([8.1583, 2.8112, 2.8421, 2.1884]);
    expect(Array.from(a.branches)).toEqual([8, 3, 3, 2]);
    expect(Array.from(a.depth)).toEqual([4, 4, 4, 3]);
  });
});

describe('worked example 2 of docs/ALGORITHM.md (v2 and v3: a chain below a fork)', () => {
  // Example 1's fork, then a step under A and two finished episodes under that step.
  const chain = packForest({
    dim: 2,
    trees: [{ id: 'ex2', nodes: [
      ...fork,
      { parent: 1, reward: 1, visits: 2, uncertainty: 0.2, embedding: [1, 0] },
      { parent: 4, reward: 1, visits: 1, terminal: true, embedding: [1, 0] },
      { parent: 4, reward: 1, visits: 1, terminal: true, embedding: [1, 0.2] },
    ] }],
  });
  it('gives the step above two finished episodes its own share, not its branch\'s mass', () => {
    const s = scoreCpu(chain, { rule: 'v2' });
    const a = allocate(chain, s, { budget: 16 });
    expect(Array.from(a.mass, (x) => +x.toFixed(4))).toEqual([6.939, 2.3911, 2.4174, 1.8614, 2.3911, 0, 0]);
    expect(Array.from(a.branches)).toEqual([7, 2, 3, 2, 2, 0, 0]);
    // v1 on the same tree: node 4 has no live child and keeps everything that reaches it.
    const v1 = allocate(chain, scoreCpu(chain, { rule: 'v1' }), { budget: 16 });
    expect(v1.branches[4]).toBeGreaterThan(a.branches[4]);
  });
});

describe('worked example 1 of docs/ALGORITHM.md under v3', () => {
  const s = scoreCpu(forest, { rule: 'v3' });
  it('scores exactly as v2', () => {
    expect(s.params.rule).toBe('v3');
    const v2 = scoreCpu(forest, { rule: 'v2' });
    for (const k of ['contrast', 'weight', 'gradAlpha', 'gradTau', 'intensity'] as const) expect(Array.from(s[k])).toEqual(Array.from(v2[k]));
  });

  it('keeps every child, emits κ·I at the root, passes by w·ν: 12 / 3 / 0 / 1 of 16', () => {
    const a = allocate(forest, s, { budget: 16 });
    expect(Array.from(a.pruned)).toEqual([0, 0, 0, 0]);
    // By hand, as the document does it: ν = (0.5, 1, 0, 0.5 from the root), e = κ·ψ_root·I.
    const I = s.intensity[0], w = [1, s.weight[1], s.weight[2], s.weight[3]];
    const e = 4 * I, kept = 0.25 * e, passed = e - kept;
    const toA = passed * w[1] * 1, toB = passed * w[2] * 0, toC = passed * w[3] * 0.5;
    const claims = [1 + kept + (passed - toA - toB - toC), toA, toB, toC];
    const sum = claims.reduce((x, y) => x + y, 0);
    expect(sum).toBeCloseTo(1 + e, 12);
    claims.forEach((c, v) => expect(a.mass[v]).toBeCloseTo((16 * c) / sum, 12));
    expect(Array.from(a.mass, (x) => +x.toFixed(4))).toEqual([11.9385, 2.9236, 0, 1.1379]);
    expect(Array.from(a.branches)).toEqual([12, 3, 0, 1]);
    expect(Array.from(a.depth)).toEqual([4, 4, 0, 3]);
  });
});

describe('worked example 2 of docs/ALGORITHM.md under v3', () => {
  const chain = packForest({
    dim: 2,
    trees: [{ id: 'ex2', nodes: [
      ...fork,
      { parent: 1, reward: 1, visits: 2, uncertainty: 0.2, embedding: [1, 0] },
      { parent: 4, reward: 1, visits: 1, terminal: true, embedding: [1, 0] },
      { parent: 4, reward: 1, visits: 1, terminal: true, embedding: [1, 0.2] },
    ] }],
  });
  it('an uncontested fork emits nothing; A\'s share is spread over its chain (A and node 4)', () => {
    const a = allocate(chain, scoreCpu(chain, { rule: 'v3' }), { budget: 16 });
    expect(Array.from(a.mass, (x) => +x.toFixed(4))).toEqual([11.9385, 1.4618, 0, 1.1379, 1.4618, 0, 0]);
    expect(Array.from(a.branches)).toEqual([12, 2, 0, 1, 1, 0, 0]);
  });
});

// Worked example 3 of docs/ALGORITHM.md: where v4's uncertainty gate changes the plan.
describe('worked example 3 of docs/ALGORITHM.md: v4 against v3', () => {
  const plan = (nodes: NodeInput[], rule: 'v3' | 'v4') => {
    const f = packForest({ dim: 2, trees: [{ id: 'ex3', nodes }] });
    const s = scoreCpu(f, { rule });
    const a = allocate(f, s, { rule, budget: 16 });
    const at = (v: number) => a.branches[v];
    return { s, a, f, at };
  };
  const failed: NodeInput[] = [
    { parent: -1, reward: 0, visits: 2, embedding: [0, 0] },
    { parent: 0, reward: 0, visits: 1, uncertainty: 0.1, embedding: [1, 0] },
    { parent: 0, reward: 0, visits: 1, uncertainty: 0.3, embedding: [1, 0.05] },
  ];
  it('two siblings that both failed: v3 sends 10 of 16 below the more uncertain one, v4 keeps all 16 at the root', () => {
    const v3 = plan(failed, 'v3');
    expect(+v3.s.intensity[0].toFixed(6)).toBe(0.996886);
    expect(Array.from(v3.s.weight.subarray(1), (x) => +x.toFixed(6))).toEqual([0.11986, 0.88014]);
    expect(Array.from(v3.a.mass, (x) => +x.toFixed(3))).toEqual([6.406, 0, 9.594]);
    expect([v3.at(0), v3.at(1), v3.at(2)]).toEqual([6, 0, 10]);
    const v4 = plan(failed, 'v4');
    expect(v4.s.intensity[0]).toBe(0);
    expect(Array.from(v4.s.weight.subarray(1))).toEqual([0.5, 0.5]);
    expect([v4.at(0), v4.at(1), v4.at(2)]).toEqual([16, 0, 0]);
  });
  const mixed: NodeInput[] = [
    { parent: -1, reward: 1 / 3, visits: 3, embedding: [0, 0] },
    { parent: 0, reward: 1, visits: 1, uncertainty: 0.2, embedding: [1, 0] },
    { parent: 0, reward: 0, visits: 1, uncertainty: 0.1, embedding: [1, 0.1] },
    { parent: 0, reward: 0, visits: 1, uncertainty: 0.3, embedding: [1, 0.2] },
  ];
  it('a success and two failures: the gate silences the B–C pair; root 12, A 4 under v3, root 7, A 9 under v4', () => {
    const v3 = plan(mixed, 'v3');
    expect(Array.from(v3.s.contrast.subarray(1), (x) => +x.toFixed(6))).toEqual([1.061665, 0.579637, 1.335903]);
    expect(Array.from(v3.s.weight.subarray(1), (x) => +x.toFixed(6))).toEqual([0.321341, 0.122541, 0.556118]);
    expect(+v3.s.intensity[0].toFixed(6)).toBe(0.992402);
    expect(Array.from(v3.a.pruned)).toEqual([0, 0, 1, 0]);
    expect(Array.from(v3.a.mass, (x) => +x.toFixed(4))).toEqual([12.4897, 3.5103, 0, 0]);
    expect([v3.at(0), v3.at(1)]).toEqual([12, 4]);
    const v4 = plan(mixed, 'v4');
    expect(Array.from(v4.s.contrast.subarray(1), (x) => +x.toFixed(6))).toEqual([1.061665, 0.332584, 0.594749]);
    expect(Array.from(v4.s.weight.subarray(1), (x) => +x.toFixed(6))).toEqual([0.615116, 0.143115, 0.241768]);
    expect(+v4.s.intensity[0].toFixed(6)).toBe(0.662999);
    expect(Array.from(v4.a.pruned)).toEqual([0, 0, 1, 1]);
    expect(Array.from(v4.a.mass, (x) => +x.toFixed(4))).toEqual([7.2859, 8.7141, 0, 0]);
    expect([v4.at(0), v4.at(1)]).toEqual([7, 9]);
    expect(v4.a.depth[1]).toBe(7);
  });
  it('worked example 1 has no pair whose rewards agree: v4 scores and plans it exactly as v3', () => {
    const s3 = scoreCpu(forest, { rule: 'v3' }), s4 = scoreCpu(forest, { rule: 'v4' });
    expect(Array.from(s4.contrast)).toEqual(Array.from(s3.contrast));
    expect(Array.from(allocate(forest, s4, { rule: 'v4' }).branches)).toEqual(Array.from(allocate(forest, s3, { rule: 'v3' }).branches));
  });
});

// Worked example 4 of docs/ALGORITHM.md: how much evidence closes v5's gate.
describe('worked example 4 of docs/ALGORITHM.md: v5 against v4 and v3', () => {
  const plan = (nodes: NodeInput[], rule: 'v3' | 'v4' | 'v5') => {
    const f = packForest({ dim: 2, trees: [{ id: 'ex4', nodes }] });
    const s = scoreCpu(f, { rule });
    const a = allocate(f, s, { rule, budget: 16 });
    return { s, a, branches: Array.from(a.branches) };
  };
  const failedPair = (visits: number): NodeInput[] => [
    { parent: -1, reward: 0, visits: 2 * visits, embedding: [0, 0] },
    { parent: 0, reward: 0, visits, uncertainty: 0.1, embedding: [1, 0] },
    { parent: 0, reward: 0, visits, uncertainty: 0.3, embedding: [1, 0.05] },
  ];
  it("worked example 3's failed pair: v5 is v3 with one failed rollout each (root 6, node 2: 10) and v4 with two (root 16)", () => {
    const once = plan(failedPair(1), 'v5'), twice = plan(failedPair(2), 'v5');
    expect(Array.from(once.s.contrast)).toEqual(Array.from(plan(failedPair(1), 'v3').s.contrast));
    expect(once.branches).toEqual([6, 0, 10]);
    expect(twice.s.intensity[0]).toBe(0);
    expect(twice.branches).toEqual([16, 0, 0]);
    for (const rule of ['v3', 'v4'] as const) expect(plan(failedPair(2), rule).branches).toEqual(plan(failedPair(1), rule).branches);
  });
  const unequal: NodeInput[] = [
    { parent: -1, reward: 0, visits: 5, embedding: [0, 0] },
    { parent: 0, reward: 0, visits: 2, uncertainty: 0.1, embedding: [1, 0] },
    { parent: 0, reward: 0, visits: 2, uncertainty: 0.3, embedding: [1, 0.05] },
    { parent: 0, reward: 0, visits: 1, uncertainty: 0.2, embedding: [1, 0.1] },
  ];
  it('three failed siblings, one visited once: v3 root 7, B 6, C 3; v4 root 16; v5 gates only A–B and sends 9 below C', () => {
    const v3 = plan(unequal, 'v3');
    expect(Array.from(v3.s.contrast.subarray(1), (x) => +x.toFixed(6))).toEqual([0.574483, 1.343973, 1.048058]);
    expect(Array.from(v3.s.weight.subarray(1), (x) => +x.toFixed(6))).toEqual([0.121386, 0.565639, 0.312975]);
    expect(+v3.s.intensity[0].toFixed(6)).toBe(0.988838);
    expect(Array.from(v3.a.mass, (x) => +x.toFixed(4))).toEqual([6.4216, 0, 6.1664, 3.412]);
    expect(v3.branches).toEqual([7, 0, 6, 3]);
    const v4 = plan(unequal, 'v4');
    expect(v4.s.intensity[0]).toBe(0);
    expect(v4.branches).toEqual([16, 0, 0, 0]);
    const v5 = plan(unequal, 'v5');
    expect(Array.from(v5.s.contrast.subarray(1), (x) => +x.toFixed(6))).toEqual([0.32526, 0.596311, 1.048058]);
    expect(Array.from(v5.s.weight.subarray(1), (x) => +x.toFixed(6))).toEqual([0.143596, 0.246929, 0.609475]);
    expect(+v5.s.intensity[0].toFixed(6)).toBe(0.656543);
    expect(Array.from(v5.a.pruned)).toEqual([0, 1, 1, 0]);
    expect(Array.from(v5.a.mass, (x) => +x.toFixed(4))).toEqual([7.3093, 0, 0, 8.6907]);
    expect(v5.branches).toEqual([7, 0, 0, 9]);
    expect([v5.a.depth[0], v5.a.depth[3]]).toEqual([4, 7]);
  });
});
