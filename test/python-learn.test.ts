import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { PYTHON } from './python.js';
import {
  Rng, createLearnState, generateForest, learnStep, learnedParams, outcomeVarianceGains, scoreCpu,
  type LearnOptions, type LearnState,
} from '../src/index.js';

const root = fileURLToPath(new URL('..', import.meta.url));

/** One recorded training step: the forest's parents, the scores that placed its rollouts, and what came back. */
interface RecordedStep {
  parent: number[];
  weight: number[];
  gradAlpha: number[];
  gradTau: number[];
  newRollouts: number[];
  newRewardSum: number[];
}

interface Sequence { options: LearnOptions; alpha: number; tau: number; steps: RecordedStep[] }

/**
 * A training loop as a trainer runs it, with the TypeScript learner: each step scores a fresh
 * forest at the learned α, τ, draws what the placed rollouts returned, and takes one step.
 * Steps where no child has 2 new rollouts carry no gain (the state must not move).
 */
function record(seed: number, options: LearnOptions, steps: number, alpha = 1, tau = 0.5): { sequence: Sequence; states: LearnState[]; gradients: number[][] } {
  const rng = new Rng(seed);
  let state = createLearnState({ alpha, tau }, options);
  const recorded: RecordedStep[] = [];
  const states: LearnState[] = [];
  const gradients: number[][] = [];
  for (let s = 0; s < steps; s++) {
    const forest = generateForest({ trees: 3, dim: 6, seed: seed * 100 + s, minNodes: 8, maxNodes: 40, contestRate: 0.5 });
    const scores = scoreCpu(forest, learnedParams(state));
    const n = forest.nodeCount;
    const barren = s % 5 === 4; // no child gets 2 rollouts: the step has no signal
    const newRollouts = Array.from({ length: n }, () => (barren ? rng.int(0, 1) : rng.int(0, 6)));
    const newRewardSum = newRollouts.map((c) => (rng.bernoulli(0.2) ? c : rng.int(0, c)));
    const gains = outcomeVarianceGains(forest, newRollouts, newRewardSum);
    const result = learnStep(state, forest, scores, gains);
    state = result.state;
    states.push(state);
    gradients.push([result.gradient.objective, result.gradient.dA, result.gradient.dB, result.gradient.count, result.stepped ? 1 : 0]);
    recorded.push({
      parent: Array.from(forest.parentRow, (p, row) => (p < 0 ? -1 : p - forest.treeOffset[forest.nodeTree[row]])),
      weight: Array.from(scores.weight), gradAlpha: Array.from(scores.gradAlpha), gradTau: Array.from(scores.gradTau),
      newRollouts, newRewardSum,
    });
  }
  return { sequence: { options, alpha, tau, steps: recorded }, states, gradients };
}

/** The same sequence through the Python learner (trace_alloc.learn from python/), one line per step. */
const SCRIPT = `
import json, sys
import numpy as np
from trace_alloc.learn import LearnOptions, create_learn_state, learn_step, outcome_variance_gains
seq = json.load(sys.stdin)
state = create_learn_state(seq["alpha"], seq["tau"], LearnOptions.from_json(seq["options"]))
out = []
for step in seq["steps"]:
    parent = np.array(step["parent"])
    # Row parents as the trainer holds them: tree-local, so roots are -1 and the rest index their own tree.
    gains = outcome_variance_gains(parent, step["newRollouts"], step["newRewardSum"])
    r = learn_step(state, parent, step["weight"], step["gradAlpha"], step["gradTau"], gains)
    state = r.state
    g = r.gradient
    out.append({"state": state.to_json(), "gradient": [g.objective, g.d_a, g.d_b, g.count, 1 if r.stepped else 0]})
json.dump(out, sys.stdout)
`;

function runPython(sequence: Sequence): { state: LearnState; gradient: number[] }[] {
  const python = spawnSync(PYTHON, ['-c', SCRIPT], {
    input: JSON.stringify(sequence), encoding: 'utf8', timeout: 60_000, maxBuffer: 64 << 20,
    env: { ...process.env, PYTHONPATH: `${root}python`, PYTHONDONTWRITEBYTECODE: '1' },
  });
  if (python.error || python.status !== 0) throw new Error(`${PYTHON} with numpy runs the Python learner: ${python.error?.message ?? python.stderr}`);
  return JSON.parse(python.stdout) as { state: LearnState; gradient: number[] }[];
}

function expectClose(got: number, want: number, what: string): void {
  expect(Math.abs(got - want), `${what}: python ${got}, typescript ${want}`).toBeLessThanOrEqual(1e-12 * Math.max(1, Math.abs(want)));
}

describe('the Python α, τ learner (python/trace_alloc/learn.py) against the TypeScript one', () => {
  it.each([
    { name: 'Adam, defaults', seed: 1, options: {}, steps: 40 },
    { name: 'Adam, a large rate that reaches the clamps', seed: 2, options: { learningRate: 3 }, steps: 30 },
    { name: 'clipped SGD', seed: 3, options: { optimizer: 'sgd' as const, learningRate: 4, maxStep: 0.7 }, steps: 30 },
    { name: 'Adam from clamped start values', seed: 4, options: { beta1: 0.5, beta2: 0.9, epsilon: 1e-3 }, steps: 20, alpha: 1e6, tau: 1e-9 },
  ])('takes the same step, to 1e-12, at every step of a recorded sequence ($name)', ({ seed, options, steps, alpha, tau }) => {
    const { sequence, states, gradients } = record(seed, options, steps, alpha, tau);
    const python = runPython(sequence);
    expect(python).toHaveLength(steps);
    let stepped = 0, clamped = 0;
    for (let s = 0; s < steps; s++) {
      const want = states[s], got = python[s].state;
      expectClose(got.a, want.a, `step ${s} a`);
      expectClose(got.b, want.b, `step ${s} b`);
      for (const i of [0, 1]) {
        expectClose(got.m[i], want.m[i], `step ${s} m[${i}]`);
        expectClose(got.v[i], want.v[i], `step ${s} v[${i}]`);
      }
      expect(got.t, `step ${s} t`).toBe(want.t);
      expect(got.options).toEqual(want.options);
      const [objective, dA, dB, count, didStep] = gradients[s];
      expectClose(python[s].gradient[0], objective, `step ${s} J`);
      expectClose(python[s].gradient[1], dA, `step ${s} dJ/da`);
      expectClose(python[s].gradient[2], dB, `step ${s} dJ/db`);
      expect(python[s].gradient.slice(3)).toEqual([count, didStep]);
      stepped += didStep;
      if ([Math.log(1e-3), Math.log(1e3)].includes(want.a) || [Math.log(1e-2), Math.log(1e2)].includes(want.b)) clamped++;
    }
    // The sequence exercises what it claims: steps with and without signal, and (where meant) the clamps.
    expect(stepped).toBeGreaterThan(steps / 2);
    expect(stepped).toBeLessThan(steps);
    if (seed === 2 || seed === 4) expect(clamped).toBeGreaterThan(0);
  });

  it('reads a TypeScript checkpoint and writes one back that TypeScript reads identically', () => {
    const { states } = record(5, { learningRate: 0.2 }, 6);
    const state = states.at(-1)!;
    const python = spawnSync(PYTHON, ['-c', 'import json,sys\nfrom trace_alloc.learn import LearnState\njson.dump(LearnState.from_json(json.load(sys.stdin)).to_json(), sys.stdout)'], {
      input: JSON.stringify(state), encoding: 'utf8', timeout: 60_000, env: { ...process.env, PYTHONPATH: `${root}python`, PYTHONDONTWRITEBYTECODE: '1' },
    });
    expect(python.status, python.stderr).toBe(0);
    expect(JSON.parse(python.stdout)).toEqual(JSON.parse(JSON.stringify(state)));
  });
});
