import { describe, expect, it } from 'vitest';
import {
  ALPHA_RANGE, TAU_RANGE, ForestError, Rng, ascend, createLearnState, generateForest, learnStateFromJson, learnStep,
  learnedParams, objectiveGradient, outcomeVarianceGains, packForest, scoreCpu, type Gains, type PackedForest,
} from '../src/index.js';

function randomGains(forest: PackedForest, seed: number): Gains {
  const rng = new Rng(seed);
  const value = new Float64Array(forest.nodeCount);
  const has = new Uint8Array(forest.nodeCount);
  for (let row = 0; row < forest.nodeCount; row++) {
    if (forest.parentRow[row] < 0 || rng.bernoulli(0.3)) continue;
    value[row] = rng.next();
    has[row] = 1;
  }
  return { value, has };
}

function objectiveAt(forest: PackedForest, gains: Gains, a: number, b: number): number {
  return objectiveGradient(forest, scoreCpu(forest, { alpha: Math.exp(a), tau: Math.exp(b) }), gains).objective;
}

describe('objectiveGradient', () => {
  it.each([
    { seed: 1, a: 0, b: Math.log(0.5) },
    { seed: 2, a: Math.log(0.05), b: Math.log(0.2) },
    { seed: 3, a: Math.log(20), b: Math.log(3) },
  ])('matches central finite differences of J (seed $seed)', ({ seed, a, b }) => {
    const forest = generateForest({ trees: 6, dim: 8, seed, minNodes: 10, maxNodes: 60, contestRate: 0.5 });
    const gains = randomGains(forest, seed + 100);
    const g = objectiveGradient(forest, scoreCpu(forest, { alpha: Math.exp(a), tau: Math.exp(b) }), gains);
    expect(g.count).toBeGreaterThan(10);
    const h = 1e-5;
    const fdA = (objectiveAt(forest, gains, a + h, b) - objectiveAt(forest, gains, a - h, b)) / (2 * h);
    const fdB = (objectiveAt(forest, gains, a, b + h) - objectiveAt(forest, gains, a, b - h)) / (2 * h);
    expect(Math.abs(fdA)).toBeGreaterThan(1e-4); // the check would be vacuous at a flat point
    expect(Math.abs(fdB)).toBeGreaterThan(1e-4);
    expect(g.dA).toBeCloseTo(fdA, 6);
    expect(g.dB).toBeCloseTo(fdB, 6);
  });

  it('counts only children with a gain', () => {
    const forest = generateForest({ trees: 2, dim: 4, seed: 9 });
    const none = { value: new Float64Array(forest.nodeCount), has: new Uint8Array(forest.nodeCount) };
    expect(objectiveGradient(forest, scoreCpu(forest), none)).toEqual({ objective: 0, dA: 0, dB: 0, count: 0 });
  });
});

describe('outcomeVarianceGains', () => {
  // root 0 with children 1, 2, 3; node 4 under 1.
  const forest = packForest({ dim: 0, trees: [{ id: 'q', nodes: [{}, { parent: 0 }, { parent: 0 }, { parent: 0 }, { parent: 1 }] }] });

  it('is 4p(1-p) for children with >= 2 new rollouts and absent otherwise', () => {
    const g = outcomeVarianceGains(forest, [6, 4, 2, 1, 3], [3, 2, 2, 1, 0]);
    expect(Array.from(g.has)).toEqual([0, 1, 1, 0, 1]); // root never; node 3 has only 1 rollout
    expect(g.value[1]).toBeCloseTo(1, 12); // half succeed
    expect(g.value[2]).toBe(0); // all agree
    expect(g.value[4]).toBe(0);
    const q = outcomeVarianceGains(forest, [0, 4, 0, 0, 0], [0, 1, 0, 0, 0]);
    expect(q.value[1]).toBeCloseTo(4 * 0.25 * 0.75, 12);
  });

  it('names the tree, node and field of a bad count or sum', () => {
    expect(() => outcomeVarianceGains(forest, [0, 2.5, 0, 0, 0], [0, 0, 0, 0, 0])).toThrow(ForestError);
    expect(() => outcomeVarianceGains(forest, [0, 2, 0, 0, 0], [0, 3, 0, 0, 0])).toThrow(/tree "q" \(#0\), node 1, field "newRewardSum"/);
    expect(() => outcomeVarianceGains(forest, [0, 2], [0, 0])).toThrow(/newRollouts/);
  });
});

describe('learn state', () => {
  it('Adam ascent raises J on a fixed batch and stays within the clamps', () => {
    const forest = generateForest({ trees: 8, dim: 8, seed: 4, contestRate: 0.6 });
    const gains = randomGains(forest, 44);
    let state = createLearnState();
    const j0 = objectiveAt(forest, gains, state.a, state.b);
    for (let i = 0; i < 40; i++) {
      state = learnStep(state, forest, scoreCpu(forest, learnedParams(state)), gains).state;
      const p = learnedParams(state);
      expect(p.alpha).toBeGreaterThanOrEqual(ALPHA_RANGE[0] * (1 - 1e-12));
      expect(p.alpha).toBeLessThanOrEqual(ALPHA_RANGE[1] * (1 + 1e-12));
      expect(p.tau).toBeGreaterThanOrEqual(TAU_RANGE[0] * (1 - 1e-12));
      expect(p.tau).toBeLessThanOrEqual(TAU_RANGE[1] * (1 + 1e-12));
    }
    expect(state.t).toBe(40);
    expect(objectiveAt(forest, gains, state.a, state.b)).toBeGreaterThan(j0);
  });

  it('clamps α and τ at the SPEC bounds', () => {
    let s = createLearnState({ alpha: 1e5, tau: 1e-5 }, { optimizer: 'sgd', learningRate: 1, maxStep: 10 });
    expect(learnedParams(s).alpha).toBeCloseTo(1e3, 6);
    expect(learnedParams(s).tau).toBeCloseTo(1e-2, 10);
    s = ascend(s, { dA: 100, dB: -100 });
    expect(learnedParams(s).alpha).toBeCloseTo(1e3, 6);
    expect(learnedParams(s).tau).toBeCloseTo(1e-2, 10);
    s = ascend(s, { dA: -100, dB: 100 });
    expect(s.a).toBeCloseTo(Math.log(1e3) - 10, 10); // maxStep bounds the SGD step
  });

  it('skips the step when no child has a gain', () => {
    const forest = generateForest({ trees: 2, dim: 4, seed: 5 });
    const s = createLearnState();
    const r = learnStep(s, forest, scoreCpu(forest), { value: new Float64Array(forest.nodeCount), has: new Uint8Array(forest.nodeCount) });
    expect(r.stepped).toBe(false);
    expect(r.state).toBe(s);
  });

  it('round-trips through JSON and rejects a corrupt checkpoint', () => {
    let s = createLearnState({ alpha: 2, tau: 0.3 }, { learningRate: 0.1 });
    s = ascend(ascend(s, { dA: 0.3, dB: -0.2 }), { dA: 0.1, dB: 0.4 });
    const back = learnStateFromJson(JSON.parse(JSON.stringify(s)));
    expect(back).toEqual(s);
    expect(ascend(back, { dA: 1, dB: 1 })).toEqual(ascend(s, { dA: 1, dB: 1 }));
    expect(() => learnStateFromJson({ ...s, a: 100 })).toThrow(/field "a"/);
    expect(() => learnStateFromJson({ ...s, m: [1] })).toThrow(/field "m"/);
    expect(() => learnStateFromJson({ ...s, version: 2 })).toThrow(/version/);
  });
});
