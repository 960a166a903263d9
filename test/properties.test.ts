import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { allocate } from '../src/allocate/allocate.js';
import { ForestError } from '../src/forest/errors.js';
import type { ForestInput, NodeInput } from '../src/forest/input.js';
import { packForest, type PackedForest } from '../src/forest/packed.js';
import { scoreCpu } from '../src/score/cpu.js';
import { forestArb } from './arbitraries.js';

const RUNS = 200;

function sum(xs: ArrayLike<number>, lo = 0, hi = xs.length): number {
  let s = 0;
  for (let i = lo; i < hi; i++) s += xs[i];
  return s;
}

/** Rows of tree t's node v. */
const rowOf = (f: PackedForest, t: number, v: number) => f.treeOffset[t] + v;

describe('scores (SPEC §2) — properties', () => {
  it('weights of every group sum to 1 and lie in (0, 1]; contrast lies in [0, 1) under v1 and [0, 2) under v2, intensity in [0, 1) under both', () => {
    fc.assert(fc.property(forestArb(), fc.double({ min: 0.05, max: 5, noNaN: true }), fc.double({ min: 0.05, max: 5, noNaN: true }), fc.constantFrom('v1' as const, 'v2' as const), (input, alpha, tau, rule) => {
      const f = packForest(input);
      const s = scoreCpu(f, { alpha, tau, rule });
      const v1 = scoreCpu(f, { alpha, tau, rule: 'v1' });
      for (let g = 0; g < f.groupCount; g++) {
        let w = 0;
        for (let i = f.groupOffset[g]; i < f.groupOffset[g + 1]; i++) {
          const row = f.groupChild[i];
          w += s.weight[row];
          expect(s.contrast[row]).toBeGreaterThanOrEqual(0);
          expect(s.contrast[row]).toBeLessThan(rule === 'v1' ? 1 : 2);
        }
        expect(w).toBeCloseTo(1, 12);
        expect(s.intensity[g]).toBeGreaterThanOrEqual(0);
        expect(s.intensity[g]).toBeLessThan(1);
        // v2 only re-shares each pair's response between its two siblings: the mean is v1's.
        expect(s.intensity[g]).toBeCloseTo(v1.intensity[g], 12);
      }
    }), { numRuns: RUNS });
  });

  it('permuting siblings permutes their scores', () => {
    fc.assert(fc.property(forestArb({ maxTrees: 1, maxNodes: 12 }), fc.integer(), (input, seed) => {
      // Make a flat tree (every node a child of the root) so any permutation of 1..n-1 keeps parents first.
      const nodes = input.trees[0].nodes.map((n, v): NodeInput => ({ ...n, parent: v === 0 ? -1 : 0 }));
      const perm = nodes.slice(1).map((_, i) => i + 1);
      for (let i = perm.length - 1, x = seed >>> 0; i > 0; i--) { x = (x * 1103515245 + 12345) >>> 0; const j = x % (i + 1); [perm[i], perm[j]] = [perm[j], perm[i]]; }
      const shuffled: ForestInput = { dim: input.dim, trees: [{ nodes: [nodes[0], ...perm.map((v) => nodes[v])] }] };
      const a = scoreCpu(packForest({ dim: input.dim, trees: [{ nodes }] }));
      const b = scoreCpu(packForest(shuffled));
      perm.forEach((v, i) => {
        for (const key of ['contrast', 'weight', 'gradAlpha', 'gradTau'] as const) {
          expect(b[key][i + 1]).toBeCloseTo(a[key][v], 12);
        }
      });
      if (a.intensity.length > 0) expect(b.intensity[0]).toBeCloseTo(a.intensity[0], 12);
    }), { numRuns: RUNS });
  });

  it('scaling an embedding by a positive factor changes nothing, down to subnormal and up to 1e300 magnitudes', () => {
    const factorArb = fc.oneof(fc.double({ min: 0.01, max: 100, noNaN: true }), fc.constantFrom(1e-300, 1e-160, 1e-40, 1e40, 1e160, 1e300));
    fc.assert(fc.property(forestArb({ maxDim: 5 }), factorArb, fc.nat(), (input, factor, pick) => {
      const base = scoreCpu(packForest(input));
      const scaled = structuredClone(input);
      const tree = scaled.trees[pick % scaled.trees.length];
      const node = tree.nodes[pick % tree.nodes.length];
      const original = Array.from(node.embedding ?? []);
      const scaledRow = original.map((x) => x * factor);
      // Scaling is exact only while every non-zero component stays in the normal float64 range.
      fc.pre(original.every((x, d) => x === 0 || (Number.isFinite(scaledRow[d]) && Math.abs(scaledRow[d]) >= 2.2250738585072014e-308)));
      node.embedding = scaledRow;
      const s = scoreCpu(packForest(scaled));
      for (const key of ['contrast', 'weight', 'gradAlpha', 'gradTau', 'intensity'] as const) {
        base[key].forEach((x, i) => expect(s[key][i]).toBeCloseTo(x, 6));
      }
    }), { numRuns: RUNS });
  });

  it('is deterministic', () => {
    fc.assert(fc.property(forestArb(), (input) => {
      const f = packForest(input);
      expect(scoreCpu(f)).toEqual(scoreCpu(f));
    }), { numRuns: 50 });
  });

  it('log-weight gradients match finite differences of ln w in (ln α, ln τ)', () => {
    fc.assert(fc.property(forestArb({ maxTrees: 2, maxNodes: 8, maxDim: 4 }), fc.double({ min: -1.5, max: 1.5, noNaN: true }), fc.double({ min: -1.5, max: 1, noNaN: true }), (input, a, b) => {
      const f = packForest(input);
      const h = 1e-5;
      const at = (da: number, db: number) => scoreCpu(f, { alpha: Math.exp(a + da), tau: Math.exp(b + db) });
      const s = at(0, 0), ap = at(h, 0), am = at(-h, 0), bp = at(0, h), bm = at(0, -h);
      for (let row = 0; row < f.nodeCount; row++) {
        if (f.parentRow[row] < 0) continue;
        const fdA = (Math.log(ap.weight[row]) - Math.log(am.weight[row])) / (2 * h);
        const fdB = (Math.log(bp.weight[row]) - Math.log(bm.weight[row])) / (2 * h);
        expect(Math.abs(fdA - s.gradAlpha[row])).toBeLessThan(1e-4 * Math.max(1, Math.abs(fdA)));
        expect(Math.abs(fdB - s.gradTau[row])).toBeLessThan(1e-4 * Math.max(1, Math.abs(fdB)));
      }
    }), { numRuns: 100 });
  });
});

describe('allocation (SPEC §4) — properties', () => {
  const configArb = fc.record({
    budget: fc.integer({ min: 0, max: 64 }),
    pruneRatio: fc.double({ min: 0, max: 0.95, noNaN: true }),
    widen: fc.double({ min: 0, max: 1, noNaN: true }),
    baseDepth: fc.integer({ min: 1, max: 8 }),
    depthGain: fc.double({ min: 0, max: 2, noNaN: true }),
  });

  it('per-tree budgets add up exactly; a tree with no live node reports its budget as unallocated', () => {
    fc.assert(fc.property(forestArb(), configArb, (input, config) => {
      const f = packForest(input);
      const a = allocate(f, scoreCpu(f), config);
      for (let t = 0; t < f.treeCount; t++) {
        const placed = sum(a.branches, f.treeOffset[t], f.treeOffset[t + 1]);
        expect(placed + a.unallocated[t]).toBe(config.budget);
        expect(a.unallocated[t] === 0 || a.live[rowOf(f, t, 0)] === 0).toBe(true);
        if (!a.live[rowOf(f, t, 0)]) expect(a.unallocated[t]).toBe(config.budget);
      }
      for (let v = 0; v < f.nodeCount; v++) {
        if (a.branches[v] > 0) {
          expect(a.live[v]).toBe(1);
          expect(f.terminal[v]).toBe(0); // no rollout starts from a node where the episode ended
          expect(a.depth[v]).toBeGreaterThanOrEqual(1);
          expect(a.depth[v]).toBeLessThanOrEqual(4 * config.baseDepth);
        } else {
          expect(a.depth[v]).toBe(0);
        }
        if (a.pruned[v]) expect(a.branches[v]).toBe(0);
      }
    }), { numRuns: RUNS });
  });

  it('the global budget adds up exactly and gives every live tree at least minPerTree', () => {
    fc.assert(fc.property(forestArb({ maxTrees: 6 }), fc.integer({ min: 0, max: 3 }), fc.integer({ min: 0, max: 200 }), (input, minPerTree, extra) => {
      const f = packForest(input);
      const s = scoreCpu(f);
      let liveTrees = 0;
      const a0 = allocate(f, s, { budget: 0 });
      for (let t = 0; t < f.treeCount; t++) liveTrees += a0.live[rowOf(f, t, 0)];
      const total = minPerTree * liveTrees + extra;
      const a = allocate(f, s, { totalBudget: total, minPerTree });
      expect(sum(a.treeBudget)).toBe(liveTrees > 0 ? total : 0);
      expect(sum(a.branches) + sum(a.unallocated) + a.unallocatedTotal).toBe(total);
      for (let t = 0; t < f.treeCount; t++) {
        if (a0.live[rowOf(f, t, 0)]) expect(a.treeBudget[t]).toBeGreaterThanOrEqual(minPerTree);
        else expect(a.treeBudget[t]).toBe(0);
      }
      if (liveTrees > 0 && minPerTree > 0) expect(() => allocate(f, s, { totalBudget: minPerTree * liveTrees - 1, minPerTree })).toThrow(RangeError);
    }), { numRuns: RUNS });
  });

  it('v3, v4, v5: two rollouts per live tree at μ = 1, q0 = 1 give every live tree exactly 2, whatever the evidence (ALGORITHM.md, Global budget)', () => {
    fc.assert(fc.property(forestArb({ maxTrees: 12 }), fc.constantFrom('v3' as const, 'v4' as const, 'v5' as const), (input, rule) => {
      const f = packForest(input);
      const s = scoreCpu(f, { rule });
      const a0 = allocate(f, s, { budget: 0, rule });
      let liveTrees = 0;
      for (let t = 0; t < f.treeCount; t++) liveTrees += a0.live[rowOf(f, t, 0)];
      const a = allocate(f, s, { totalBudget: 2 * liveTrees, minPerTree: 1, rule });
      for (let t = 0; t < f.treeCount; t++) expect(a.treeBudget[t]).toBe(a0.live[rowOf(f, t, 0)] ? 2 : 0);
    }), { numRuns: RUNS });
    // The statement is about two per tree: at four, a prompt whose first steps disagree draws more.
    const leaf = (reward: number): NodeInput => ({ parent: 0, reward, visits: 1, terminal: true });
    const forest = packForest({ dim: 0, trees: [
      { id: 'mixed', nodes: [{ parent: -1, reward: 0.5, visits: 2 }, leaf(1), leaf(0)] },
      { id: 'failed', nodes: [{ parent: -1, reward: 0, visits: 2 }, leaf(0), leaf(0)] },
    ] });
    for (const rule of ['v3', 'v4', 'v5'] as const) {
      const scores = scoreCpu(forest, { rule });
      expect(Array.from(allocate(forest, scores, { totalBudget: 4, minPerTree: 1, rule }).treeBudget)).toEqual([2, 2]);
      expect(Array.from(allocate(forest, scores, { totalBudget: 8, minPerTree: 1, rule }).treeBudget)).toEqual([5, 3]);
    }
  });

  it('v3, v4, v5 with η = 1: where the root and every contested fork are open, rollouts start only at the root or at a node heading two or more children; chains stay chains (ALGORITHM.md, v3)', () => {
    const children = (f: PackedForest, v: number) => {
      const g = f.childGroup[v];
      return g < 0 ? 0 : f.groupOffset[g + 1] - f.groupOffset[g];
    };
    let checked = 0;
    fc.assert(fc.property(forestArb(), fc.constantFrom('v3' as const, 'v4' as const, 'v5' as const), (input, rule) => {
      const f = packForest(input);
      const s = scoreCpu(f, { rule });
      const a = allocate(f, s, { budget: 16, rule, forkKeep: 1 });
      for (let t = 0; t < f.treeCount; t++) {
        const lo = f.treeOffset[t], hi = f.treeOffset[t + 1];
        // The statement's premise: the root and every node heading a group of two or more are open.
        let premise = f.terminal[lo] === 0;
        for (let v = lo; v < hi; v++) if (children(f, v) >= 2 && f.terminal[v]) premise = false;
        if (!premise) continue;
        checked++;
        for (let v = lo + 1; v < hi; v++) if (a.branches[v] > 0) expect(children(f, v)).toBeGreaterThanOrEqual(2);
      }
    }), { numRuns: RUNS });
    expect(checked).toBeGreaterThan(0);
    // A tree of fresh chains whose outcomes disagree: the root is contested, and η = 1 starts every
    // rollout there, where the rules' own η (0.25) sends part of the draw down the successful chain.
    const chains = packForest({ dim: 0, trees: [{ id: 'q', nodes: [
      { parent: -1, reward: 0.5, visits: 2 }, { parent: 0, reward: 1, visits: 1 }, { parent: 1, reward: 1, visits: 1, terminal: true },
      { parent: 0, reward: 0, visits: 1 }, { parent: 3, reward: 0, visits: 1, terminal: true },
    ] }] });
    for (const rule of ['v3', 'v4', 'v5'] as const) {
      const scores = scoreCpu(chains, { rule });
      expect(Array.from(allocate(chains, scores, { budget: 16, rule, forkKeep: 1 }).branches)).toEqual([16, 0, 0, 0, 0]);
      expect(allocate(chains, scores, { budget: 16, rule }).branches[1]).toBeGreaterThan(0);
    }
  });

  it('is deterministic', () => {
    fc.assert(fc.property(forestArb(), configArb, (input, config) => {
      const f = packForest(input);
      const s = scoreCpu(f);
      expect(allocate(f, s, config)).toEqual(allocate(f, s, config));
    }), { numRuns: 50 });
  });
});

describe('validation — properties', () => {
  type Poison = [field: keyof NodeInput | 'embedding[i]', value: (dim: number) => unknown];
  const poisons: Poison[] = [
    ['reward', () => NaN],
    ['reward', () => -Infinity],
    ['visits', () => -3],
    ['visits', () => 2.5],
    ['uncertainty', () => -1e-9],
    ['uncertainty', () => Infinity],
    ['terminal', () => 'yes'],
    ['embedding', (dim) => new Array(dim + 1).fill(0)],
    ['embedding[i]', () => NaN],
    ['parent', () => 10_000],
  ];

  it('every bad value is rejected with its tree, node and field named', () => {
    fc.assert(fc.property(forestArb(), fc.nat(), fc.nat(), fc.integer({ min: 0, max: poisons.length - 1 }), (input, tPick, vPick, which) => {
      const [field, make] = poisons[which];
      const t = tPick % input.trees.length;
      const nodes = input.trees[t].nodes;
      const v = vPick % nodes.length;
      const dim = input.dim ?? 0;
      if (field === 'embedding[i]' && dim === 0) return;
      if (field === 'parent' && v === 0) return;
      const bad = structuredClone(input);
      const node = bad.trees[t].nodes[v] as Record<string, unknown>;
      let expected: string = field;
      if (field === 'embedding[i]') {
        const i = vPick % dim;
        // Pool embeddings are shared between nodes: poison a copy so only this node is bad.
        node.embedding = [...(node.embedding as number[])];
        (node.embedding as number[])[i] = make(dim) as number;
        expected = `embedding[${i}]`;
      } else {
        node[field] = make(dim);
      }
      try {
        packForest(bad);
        throw new Error('accepted a bad forest');
      } catch (err) {
        expect(err).toBeInstanceOf(ForestError);
        expect((err as ForestError).location).toMatchObject({ tree: t, treeId: `tree-${t}`, node: v, field: expected });
      }
    }), { numRuns: 300 });
  });
});

describe('allocation refuses broken scores', () => {
  it('throws, naming the tree and node, when a backend hands it a NaN weight', () => {
    const f = packForest({ dim: 0, trees: [{ id: 'q', nodes: [{}, { parent: 0 }, { parent: 0 }] }] });
    const s = scoreCpu(f);
    (s.weight as Float64Array)[2] = NaN;
    expect(() => allocate(f, s)).toThrow(/non-finite weight for tree "q" \(#0\), node 2/);
  });
});
