import { describe, expect, it } from 'vitest';
import { allocate } from '../src/allocate/allocate.js';
import { packForest } from '../src/forest/packed.js';
import { scoreCpu } from '../src/score/cpu.js';

// The 3-sibling fork worked by hand in docs/ALGORITHM.md; the numbers below are the doc's.
const forest = packForest({
  dim: 2,
  trees: [{ id: 'ex', nodes: [
    { parent: -1, visits: 4, reward: 0.5, embedding: [1, 1] },
    { parent: 0, reward: 1, visits: 2, uncertainty: 0.1, embedding: [1, 0] },
    { parent: 0, reward: 0, visits: 2, uncertainty: 0.1, embedding: [1, 0.1] },
    { parent: 0, reward: 0.5, visits: 0, uncertainty: 0.3, embedding: [0, 1] },
  ] }],
});

describe('the worked example of docs/ALGORITHM.md', () => {
  const s = scoreCpu(forest);
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
