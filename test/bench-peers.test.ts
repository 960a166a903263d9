import { beforeAll, describe, expect, it } from 'vitest';
import { checkAgainstReference } from '../bench/check.js';
import { naiveToArrays, scoreNaive, toNested } from '../bench/peers/naive.js';
import { probeNumpy, runNumpy } from '../bench/peers/numpy.js';
import { initTfjs, scoreTfjs } from '../bench/peers/tfjs.js';
import { scoreCpu } from '../src/score/cpu.js';
import { packForest } from '../src/forest/packed.js';
import { generateForest, generateRegularForest } from '../src/synth/generate.js';
import { Rng } from '../src/util/random.js';
import { PYTHON } from './python.js';

/**
 * Near-duplicate siblings whose feedback difference is as small as their semantic distance
 * (~1e-5): c is then most sensitive to both, and 1 − cos or |u_i − u_j| computed in float32 miss the SPEC
 * tolerance. A peer taking that shortcut fails here.
 */
function nearDuplicates(u0: number, uStep: number, noise: number): ReturnType<typeof packForest> {
  const rng = new Rng(99);
  const dim = 128;
  const trees = Array.from({ length: 20 }, (_, t) => {
    const base = Array.from({ length: dim }, () => rng.normal());
    const child = (i: number) => ({ parent: 0, visits: 3, reward: 0.5, uncertainty: u0 + i * uStep * (1 + (t % 3)), embedding: base.map((x) => x + rng.normal() * noise) });
    return { nodes: [{ embedding: base }, child(0), child(1), child(2)] };
  });
  return packForest({ dim, trees });
}

// Small forests with mixed group sizes (including lone children), zero dims and
// near-duplicate siblings: the cases where a peer's batching or precision could go wrong.
const forests = {
  random: generateForest({ trees: 12, dim: 8, seed: 7, minNodes: 5, maxNodes: 40, minBranch: 1, maxBranch: 6 }),
  regular: generateRegularForest({ trees: 6, branching: 3, depth: 2, dim: 16, seed: 3, contestRate: 0.8 }),
  // Every fork contested: near-duplicate siblings, where the float32 Gram-matrix shortcut fails the tolerance.
  contested: generateRegularForest({ trees: 300, branching: 4, depth: 2, dim: 64, seed: 5, contestRate: 1 }),
  // the float32 Gram-matrix shortcut (1 − cos) fails this one …
  nearDuplicates: nearDuplicates(0.3, 2e-5, 0.01),
  // … and float32 differences of nearly equal uncertainties fail this one.
  nearDuplicatesCloseU: nearDuplicates(0.9, 5e-6, 0.005),
  dim0: generateForest({ trees: 5, dim: 0, seed: 11, minNodes: 3, maxNodes: 20 }),
};
// The peers implement rule v1's scoring; they are held to the v1 reference.
const params = { alpha: 0.7, tau: 0.3, rule: 'v1' as const };

describe('bench peers agree with the float64 reference', () => {
  beforeAll(async () => {
    await initTfjs();
  });
  for (const [name, forest] of Object.entries(forests)) {
    it(`nested-object JavaScript on ${name}`, () => {
      const ref = scoreCpu(forest, params);
      const { roots, byRow } = toNested(forest);
      scoreNaive(roots, params.alpha, params.tau);
      const check = checkAgainstReference(forest, ref, naiveToArrays(forest, byRow));
      expect(check.maxAbs).toBeLessThan(1e-9);
      expect(check.maxGradRel).toBeLessThan(1e-9);
    });
    it(`TensorFlow.js wasm on ${name}`, () => {
      const ref = scoreCpu(forest, params);
      const check = checkAgainstReference(forest, ref, scoreTfjs(forest, params.alpha, params.tau));
      expect(check.ok, check.worst).toBe(true);
    });
    it.skipIf(!probeNumpy(PYTHON).available)(`numpy on ${name}`, () => {
      const ref = scoreCpu(forest, params);
      const run = runNumpy(forest, { ...params, minSamples: 1, maxTime: 0, python: PYTHON });
      expect(run.samplesMs.length).toBeGreaterThanOrEqual(1);
      const check = checkAgainstReference(forest, ref, run.outputs);
      expect(check.ok, check.worst).toBe(true);
    });
  }
  it('the check catches a wrong peer and names where', () => {
    const forest = forests.regular;
    const ref = scoreCpu(forest, params);
    const bad = { ...ref, weight: Float64Array.from(ref.weight) };
    bad.weight[5] = (bad.weight[5] as number) + 1e-3;
    const check = checkAgainstReference(forest, ref, bad);
    expect(check.ok).toBe(false);
    expect(check.worst).toMatch(/tree "t0" node 5, field "weight"/);
  });
});
