import { describe, expect, it } from 'vitest';
import { allocate } from '../src/allocate/allocate.js';
import { packForest } from '../src/forest/packed.js';
import { scoreCpu } from '../src/score/cpu.js';
import { Rng } from '../src/util/random.js';
import { ablatedScores } from '../eval/allocators/ablation.js';
import { ALLOCATORS, budgetMultiplier, createAllocator } from '../eval/allocators/index.js';
import { KnapsackAllocator, knapsackSplit, knapsackValue, marginalValue } from '../eval/allocators/knapsack.js';
import { TraceAllocator } from '../eval/allocators/trace.js';
import { DependencyEnv } from '../eval/envs/dependency.js';
import { ENVS, createEnv } from '../eval/envs/index.js';
import { MazeEnv } from '../eval/envs/maze.js';
import { NavigationEnv } from '../eval/envs/navigation.js';
import type { Env } from '../eval/envs/types.js';
import { treeMetrics } from '../eval/metrics.js';
import { exhaustedNodes, packRollouts } from '../eval/pack.js';
import { TabularPolicy } from '../eval/policy.js';
import { blockChecks, checkCommon, checkDirection, direction, overallStatus, pairedGap } from '../eval/direction.js';
import { chainsMultiplier, formatEquivalence, needsAtLeast } from '../eval/equivalence.js';
import { GRPO_RATE_FACTOR, LEARNERS, TASKS, TREERL_LEAF_RATE_FACTOR, trainConfig } from '../eval/settings.js';
import { meanCi, t95 } from '../eval/stats.js';
import { grpoUpdate, treerlNodeUpdate } from '../src/sim/learner.js';
import { train } from '../eval/train.js';
import { Grower, RolloutForest } from '../eval/tree.js';

/** A seeded random walk: states, rewards and embeddings along the way. */
function trace(env: Env, seed: number, steps: number): number[] {
  const rng = new Rng(seed);
  const out: number[] = [];
  const e = new Float32Array(env.dim);
  let s = env.start(0);
  for (let i = 0; i < steps; i++) {
    const tr = env.step(s, rng.int(0, env.actions - 1));
    env.embed(tr.next, e.fill(0), 0, rng);
    out.push(tr.next, tr.reward, tr.done ? 1 : 0, ...e);
    s = tr.done ? env.start(i) : tr.next;
  }
  return out;
}

function grower(env: Env, limit: number, trees = 3, seed = 1): Grower {
  const g = new Grower(new RolloutForest(env.dim), env, new TabularPolicy(env.stateCount, env.actions), new Rng(seed), limit);
  for (let t = 0; t < trees; t++) g.addRoot(t, env.start(t));
  return g;
}

describe('environments', () => {
  it.each(ENVS)('%s is deterministic under a seed and differs across seeds', (name) => {
    const a = trace(createEnv(name, 7), 3, 400);
    const b = trace(createEnv(name, 7), 3, 400);
    expect(a).toEqual(b);
    const c = trace(createEnv(name, 8), 3, 400);
    expect(c).not.toEqual(a);
  });

  it('maze: the exit is the only rewarded cell and is reachable within the horizon', () => {
    for (let seed = 1; seed <= 10; seed++) {
      const env = new MazeEnv({ seed });
      expect(env.shortest).toBeGreaterThan(0);
      expect(env.horizon).toBeGreaterThanOrEqual(env.shortest);
      for (let s = 0; s < env.stateCount; s++) {
        for (let a = 0; a < 4; a++) {
          const tr = env.step(s, a);
          expect(tr.reward).toBe(tr.next === env.exit ? 1 : 0);
          expect(tr.done).toBe(tr.next === env.exit);
        }
      }
    }
  });

  it('navigation: goals move every period and stay put within one', () => {
    const env = new NavigationEnv({ seed: 3, period: 5 });
    env.setTrainingStep(0);
    const g0 = env.goals();
    env.setTrainingStep(4);
    expect(env.goals()).toEqual(g0);
    env.setTrainingStep(5);
    expect(env.goals()).not.toEqual(g0);
    // Layouts do not depend on the order steps are visited in.
    const other = new NavigationEnv({ seed: 3, period: 5 });
    other.setTrainingStep(5);
    expect(other.goals()).toEqual(env.goals());
  });

  it('dependency: only the seeded key pays off, 20+ steps after it was chosen', () => {
    const env = new DependencyEnv({ seed: 11 });
    const finish = (key: number): { reward: number; steps: number } => {
      let s = env.step(0, key).next, steps = 1;
      for (;;) {
        // Try actions in order until one advances: exactly two of four do.
        for (let a = 0; a < 4; a++) {
          const tr = env.step(s, a);
          if (tr.next !== s) { s = tr.next; steps++; if (tr.done) return { reward: tr.reward, steps }; break; }
        }
      }
    };
    for (let k = 0; k < env.keys; k++) {
      const r = finish(k);
      expect(r.steps).toBeGreaterThanOrEqual(21);
      expect(r.reward).toBe(k === env.correctKey ? 1 : 0);
    }
    // The keys' states are near-duplicates: cosine distance (1 - cos)/2 far below a random pair's.
    const e = new Float32Array(env.dim * 2), rng = new Rng(1);
    env.embed(env.step(0, 0).next, e, 0, rng);
    env.embed(env.step(0, 1).next, e, env.dim, rng);
    let dot = 0, n0 = 0, n1 = 0;
    for (let d = 0; d < env.dim; d++) { dot += e[d] * e[env.dim + d]; n0 += e[d] ** 2; n1 += e[env.dim + d] ** 2; }
    expect((1 - dot / Math.sqrt(n0 * n1)) / 2).toBeLessThan(0.01);
  });
});

const small = { evalEvery: 3, evalEpisodes: 10, finalEpisodes: 10 };

describe('budget accounting', () => {
  it('the grower never spends past its limit and one node is one step', () => {
    const env = createEnv('maze', 2);
    const g = grower(env, 57);
    let guard = 0;
    while (g.remaining() > 0 && guard++ < 1000) g.rollout(g.forest.roots[guard % 3], Infinity);
    expect(g.used).toBe(57);
    expect(g.forest.size - g.forest.roots.length).toBe(57);
    expect(g.extend(g.forest.roots[0])).toBe(-1);
    // Every finished rollout is counted once at its root.
    const rootVisits = g.forest.roots.reduce((a, r) => a + g.forest.visits[r], 0);
    expect(rootVisits).toBe(g.finished);
    expect(g.forest.terminal.reduce((a, b) => a + b, 0)).toBe(g.finished);
  });

  it('rollouts stop at the horizon with reward 0', () => {
    const env = createEnv('dependency', 1);
    const g = grower(env, 10_000, 1);
    const last = g.rollout(g.forest.roots[0], Infinity);
    expect(g.forest.terminal[last]).toBe(1);
    expect(g.forest.depth[last]).toBeLessThanOrEqual(env.horizon);
  });

  it.each(ALLOCATORS)('%s spends exactly steps × budget per step × its multiplier on every environment (global round on mixed)', (name) => {
    for (const env of ENVS) {
      const config = trainConfig(env, 'treerl', name, 5, small, { task: { steps: 3, budgetPerStep: 150, prompts: 3, round: { perTree: 2, global: env === 'mixed' } } });
      expect(config.budgetPerStep).toBe(150 * budgetMultiplier(name));
      const r = train(config);
      expect(r.budgetUsed).toBe(3 * 150 * budgetMultiplier(name));
      expect(r.curve.map((c) => c[0])).toEqual([0, r.budgetUsed]);
    }
  });

  it('the compute-equivalence rows run 1.5× and 2× the task budget; every other row 1×', () => {
    expect(ALLOCATORS.filter((a) => budgetMultiplier(a) !== 1)).toEqual(['independent-1.5x', 'independent-2x']);
    expect(trainConfig('maze', 'grpo', 'independent-1.5x', 1, small).budgetPerStep).toBe(3072);
    expect(trainConfig('mixed', 'treerl', 'independent-2x', 1, small).budgetPerStep).toBe(16384);
    expect(trainConfig('mixed', 'treerl', 'trace', 1, small).budgetPerStep).toBe(8192);
  });

  for (const global of [false, true]) {
    it.each(ALLOCATORS)(`%s spends one step budget exactly in one grow call (${global ? 'global' : 'per-tree'} round)`, (name) => {
      const env = createEnv('navigation', 4);
      const g = grower(env, 333, 4);
      createAllocator(name, 4, { perTree: 2, global }).grow(g);
      expect(g.used).toBe(333);
      expect(g.forest.size - 4).toBe(333);
    });
  }

  it('trie trees: an action already taken from a node walks into its child, and every step still costs one', () => {
    const env = createEnv('twochoice', 1);
    const g = new Grower(new RolloutForest(env.dim), env, new TabularPolicy(env.stateCount, env.actions), new Rng(1), 100, true);
    const root = g.addRoot(0, env.start(0));
    const a = g.extend(root, 2), b = g.extend(root, 2), c = g.extend(root, 3);
    expect(b).toBe(a);
    expect(c).not.toBe(a);
    expect(g.forest.children[root]).toEqual([a, c]);
    expect(g.used).toBe(3);
    expect(g.forest.size).toBe(3);
    // The same path twice to an episode's end: one chain of nodes, its end finished twice.
    const walk = (from: number) => { let v = from; while (!g.forest.terminal[v]) v = g.extend(v, 0); return v; };
    const before = g.used;
    const end1 = walk(a), end2 = walk(a);
    expect(end2).toBe(end1);
    expect(g.forest.visits[end1]).toBe(2);
    expect(g.forest.visits[root]).toBe(2);
    expect(g.used - before).toBe(2 * (g.forest.depth[end1] - 1));
    // Plain trees add a node per step whatever the action.
    const plain = grower(env, 100, 1);
    expect(plain.extend(plain.forest.roots[0], 2)).not.toBe(plain.extend(plain.forest.roots[0], 2));
  });
});

describe('settings and learners', () => {
  it('the task table: 2048 steps per training step on 4 prompts, 8192 on mixed\'s 16 in a global round; steps per (env, learner); GRPO at 16× the rate', () => {
    const steps = Object.fromEntries(ENVS.map((e) => [e, [TASKS[e].treerl.steps, TASKS[e].grpo.steps]]));
    expect(steps).toEqual({ maze: [4, 4], navigation: [5, 10], dependency: [5, 5], toolagent: [3, 10], twochoice: [5, 5], midchoice: [4, 4], mixed: [4, 4], twoclean: [3, 3] });
    expect(ENVS).toEqual(['maze', 'navigation', 'dependency', 'toolagent', 'twochoice', 'midchoice', 'mixed', 'twoclean']);
    for (const e of ENVS) {
      for (const l of LEARNERS) {
        const t = TASKS[e][l];
        expect([t.prompts, t.budgetPerStep, t.round]).toEqual(e === 'mixed' ? [16, 8192, { perTree: 4, global: true }] : [4, 2048, { perTree: 4, global: false }]);
      }
      expect(TASKS[e].treerl.learningRate).toBe(e === 'mixed' ? 4 : 1);
      expect(TASKS[e].grpo.learningRate).toBe(GRPO_RATE_FACTOR * TASKS[e].treerl.learningRate);
      expect(TASKS[e]['treerl-leaf']).toEqual({ ...TASKS[e].treerl, learningRate: TREERL_LEAF_RATE_FACTOR * TASKS[e].treerl.learningRate, steps: e === 'toolagent' ? 5 : TASKS[e].treerl.steps });
    }
    expect(GRPO_RATE_FACTOR).toBe(16);
    expect(LEARNERS).toEqual(['treerl-leaf', 'grpo', 'treerl', 'treerl-branch']);
    for (const e of ENVS) expect(TASKS[e]['treerl-branch']).toEqual(TASKS[e]['treerl-leaf']);
    // Branch means are defined on plain trees: on trie trees a child holds several draws.
    expect(() => train({ ...trainConfig('maze', 'treerl-branch', 'trace', 1, small), merge: true })).toThrow(/plain trees/);
    const c = trainConfig('toolagent', 'grpo', 'trace', 7, small);
    expect([c.learner, c.steps, c.budgetPerStep, c.learningRate, c.prompts, c.merge]).toEqual(['grpo', 10, 2048, 16, 4, false]);
  });

  it('GRPO: every step of a finished rollout gets its reward minus the tree\'s mean, divided by the tree\'s finished rollouts', () => {
    // root (state 0) → A (action 0, ends, R = 1); root → B (action 1, state 1) → C (action 2, ends, R = 0), B → D (action 3, ends, R = 1).
    const f = new RolloutForest(0);
    const root = f.add(0, -1, 0, -1, 0, 1);
    const A = f.add(0, root, 1, 0, 0, 0), B = f.add(0, root, 1, 1, 0, 1), C = f.add(0, B, 1, 2, 0, 0), D = f.add(0, B, 1, 3, 0, 0);
    for (const [v, r] of [[A, 1], [C, 0], [D, 1]] as const) {
      f.terminal[v] = 1; f.outcome[v] = r;
      for (let u = v; u >= 0; u = f.parent[u]) { f.visits[u]++; f.rewardSum[u] += r; }
    }
    const policy = new TabularPolicy(2, 4);
    grpoUpdate(policy, f, 1);
    // Advantages / 3 rollouts: A +1/9, C −2/9, D +1/9; B carries C + D = −1/9. π uniform: ∇ log π(a|s) = onehot(a) − ¼.
    const expected = [1 / 9, -1 / 9, 0, 0, 0.25 / 9, 0.25 / 9, -2 / 9 + 0.25 / 9, 1 / 9 + 0.25 / 9];
    Array.from(policy.logits).forEach((x, i) => expect(x).toBeCloseTo(expected[i], 12));
    // TreeRL on the same tree moves B's branch differently (per-node advantages): the learners differ.
    const treerl = new TabularPolicy(2, 4);
    treerlNodeUpdate(treerl, f, 1);
    expect(Array.from(treerl.logits)).not.toEqual(Array.from(policy.logits));
  });
});

describe('TRACE rows and the knapsack baseline', () => {
  it('trace-nocontrast is independent chains, seed for seed (per-tree and global rounds, both learners)', () => {
    for (const [env, learner] of [['twochoice', 'treerl'], ['mixed', 'grpo'], ['maze', 'grpo']] as const) {
      const run = (allocator: 'independent' | 'trace-nocontrast') => train(trainConfig(env, learner, allocator, 3, { evalEvery: 1, evalEpisodes: 30, finalEpisodes: 60 }, { task: { steps: 3, budgetPerStep: env === 'mixed' ? 900 : 400 } }));
      const a = run('independent'), b = run('trace-nocontrast');
      expect(b.rootShare).toBe(1);
      expect([b.curve, b.finalSuccess, b.mixedFraction, b.stepsPerRollout]).toEqual([a.curve, a.finalSuccess, a.mixedFraction, a.stepsPerRollout]);
    }
  });

  it('trace-nocontrast and trace-outcome scores on a hand forest: w = 1/k; I = 0, or the share of visited pairs with different rewards', () => {
    // root: children 1 (visits 2, r 1), 2 (visits 1, r 0), 3 (unvisited, r 0.5); 1: children 4, 5 (r 0.25, 0.75); 2: one child 6.
    const forest = packForest({ dim: 2, trees: [{ nodes: [
      { visits: 3, reward: 2 / 3 }, { parent: 0, visits: 2, reward: 1 }, { parent: 0, visits: 1, reward: 0 }, { parent: 0, reward: 0.5 },
      { parent: 1, visits: 1, reward: 0.25, terminal: true }, { parent: 1, visits: 1, reward: 0.75, terminal: true }, { parent: 2, visits: 1, terminal: true },
    ].map((n, i) => ({ ...n, embedding: [1, i / 10] })) }] });
    const params = { alpha: 1, tau: 0.5, rule: 'v3' as const };
    const outcome = ablatedScores(forest, 'outcome', params), none = ablatedScores(forest, 'nocontrast', params);
    for (const s of [outcome, none]) {
      expect(Array.from(s.weight)).toEqual([1, 1 / 3, 1 / 3, 1 / 3, 1 / 2, 1 / 2, 1]);
      expect(Array.from(s.gradAlpha).every((x) => x === 0) && Array.from(s.gradTau).every((x) => x === 0)).toBe(true);
    }
    // Groups by parent: 0 → pairs (1,2) differ by 1, (1,3) and (2,3) unvisited: 1/3; 1 → |0.25 − 0.75| over 1 pair; 2 → one child.
    const byParent = (s: typeof outcome) => Object.fromEntries(Array.from(forest.groupParent, (p, g) => [p, s.intensity[g]]));
    expect(byParent(outcome)).toEqual({ 0: 1 / 3, 1: 0.5, 2: 0 });
    expect(byParent(none)).toEqual({ 0: 0, 1: 0, 2: 0 });
    // C is each child's mean over its pairs, so I = mean C.
    expect(Array.from(outcome.contrast).map((x) => +x.toFixed(12))).toEqual([0, 0.5, 0.5, 0, 0.5, 0.5, 0]);
    // Under v3, no contest anywhere: every rollout at the root; the outcome forks claim their share.
    expect(Array.from(allocate(forest, none, { budget: 8 }).branches)).toEqual([8, 0, 0, 0, 0, 0, 0]);
    expect(allocate(forest, outcome, { budget: 8 }).branches[0]).toBeLessThan(8);
  });

  it('knapsack value: the chance of both outcomes × p(1−p)², and its marginal value in closed form', () => {
    for (const p of [0.05, 0.3, 0.5, 0.9]) {
      expect(knapsackValue(1, p)).toBeCloseTo(0, 15);
      for (let n = 0; n < 12; n++) {
        expect(marginalValue(n, p)).toBeCloseTo(knapsackValue(n + 1, p) - knapsackValue(n, p), 14);
        expect(marginalValue(n + 1, p)).toBeLessThan(marginalValue(n, p));
      }
    }
  });

  it('knapsack split: the greedy marginal-value split is the best split of the round, ties to the smaller tree', () => {
    const total = (x: number[], counts: number[], p: number[]) => x.reduce((a, xi, t) => a + knapsackValue(counts[t] + xi, p[t]), 0);
    const cases: Array<[number, number[], number[]]> = [[6, [6, 2, 0], [0.5, 0.1, 0.02]], [8, [3, 3, 3, 3], [0.9, 0.5, 0.2, 0.6]], [5, [0, 10, 1], [0.3, 0.5, 0.97]]];
    for (const [units, counts, p] of cases) {
      const split = knapsackSplit(units, counts, p);
      expect(split.reduce((a, b) => a + b, 0)).toBe(units);
      let best = -Infinity;
      const visit = (t: number, left: number, x: number[]) => {
        if (t === counts.length - 1) { best = Math.max(best, total([...x, left], counts, p)); return; }
        for (let k = 0; k <= left; k++) visit(t + 1, left - k, [...x, k]);
      };
      visit(0, units, []);
      expect(total(split, counts, p)).toBeCloseTo(best, 14);
      // Every prompt's last unit is worth at least the next unit of any other.
      for (let t = 0; t < counts.length; t++) for (let s = 0; s < counts.length; s++) {
        if (split[t] > 0 && s !== t) expect(marginalValue(counts[t] + split[t] - 1, p[t])).toBeGreaterThanOrEqual(marginalValue(counts[s] + split[s], p[s]));
      }
    }
    // Relabelling the prompts relabels the split.
    const [x0, x1, x2] = knapsackSplit(6, [6, 2, 0], [0.5, 0.1, 0.02]);
    expect(knapsackSplit(6, [0, 6, 2], [0.02, 0.5, 0.1])).toEqual([x2, x0, x1]);
    // Equal prompts: one each in tree order, then again: ties go to the smaller tree.
    expect(knapsackSplit(4, [0, 0, 0], [0.5, 0.5, 0.5])).toEqual([2, 1, 1]);
    expect(knapsackSplit(3, [5, 4, 4], [0.5, 0.5, 0.5])).toEqual([1, 1, 1]);
    expect(knapsackSplit(1, [5, 4, 4], [0.5, 0.5, 0.5])).toEqual([0, 1, 0]);
  });

  it('knapsack rollouts are chains from the prompts; the first round of a step gives every tree its round share', () => {
    const env = createEnv('mixed', 2);
    const g = grower(env, 2000, 16);
    const alloc = new KnapsackAllocator({ perTree: 4, global: true });
    alloc.grow(g);
    expect(g.used).toBe(2000);
    expect(g.rootLaunches).toBe(g.launches);
    for (let v = 0; v < g.forest.size; v++) if (g.forest.parent[v] >= 0) expect(g.forest.children[v].length).toBeLessThanOrEqual(1);
    // 64 rollouts of ~15 steps: the first round ends near step 1000, so each tree started at least 4.
    expect(Math.min(...g.forest.roots.map((r) => g.forest.children[r].length))).toBeGreaterThanOrEqual(4);
  });
});

describe('training pieces', () => {
  it('TreeRL advantages push the policy toward the successful branch', () => {
    const env = createEnv('dependency', 1);
    const f = new RolloutForest(env.dim);
    const policy = new TabularPolicy(env.stateCount, env.actions);
    const g = new Grower(f, env, policy, new Rng(1), 1000);
    const root = g.addRoot(0, 0);
    const good = g.extend(root, (env as DependencyEnv).correctKey);
    const bad = g.extend(root, ((env as DependencyEnv).correctKey + 1) % 4);
    // Finish both by hand: success under the good key, failure under the bad one.
    f.terminal[good] = 1; f.terminal[bad] = 1;
    f.visits[good] = 1; f.rewardSum[good] = 1; f.visits[bad] = 1; f.visits[root] = 2; f.rewardSum[root] = 1;
    treerlNodeUpdate(policy, f, 1);
    const p = policy.distribution(0);
    expect(p[(env as DependencyEnv).correctKey]).toBeGreaterThan(0.25);
    expect(p[((env as DependencyEnv).correctKey + 1) % 4]).toBeLessThan(0.25);
  });

  it('mixed groups and dead steps are counted as defined', () => {
    const env = createEnv('maze', 1);
    const g = grower(env, 1000, 1);
    const f = g.forest, root = f.roots[0];
    const a = g.extend(root, 0), b = g.extend(root, 1), c = g.extend(root, 2);
    f.terminal[a] = f.terminal[b] = 1;
    f.visits[a] = 1; f.rewardSum[a] = 1; f.visits[b] = 1;
    const m = treeMetrics(f);
    expect(m).toEqual({ scoredGroups: 1, mixedGroups: 1, deadSteps: 1, zeroSteps: 1 });
    expect(c).toBeGreaterThan(0);
  });

  it('v1 sends a finished chain\'s whole budget to the node just above its end; v2 spreads it over the chain; v3 starts fresh', () => {
    // root → 1 → 2 → 3 (episode over): under v1, 2 is open and has no live child, so x_2 = m.
    const chain = packForest({ dim: 0, trees: [{ nodes: [{}, { parent: 0 }, { parent: 1 }, { parent: 2, terminal: true, visits: 1 }] }] });
    const v1 = scoreCpu(chain, { rule: 'v1' });
    expect(Array.from(allocate(chain, v1, { budget: 4 }).branches)).toEqual([0, 0, 4, 0]);
    // Presenting the exhausted nodes 1, 2 as terminal sends it back to the root instead.
    const closed = packForest({ dim: 0, trees: [{ nodes: [{}, { parent: 0, terminal: true }, { parent: 1, terminal: true }, { parent: 2, terminal: true, visits: 1 }] }] });
    expect(Array.from(allocate(closed, scoreCpu(closed, { rule: 'v1' }), { budget: 4 }).branches)).toEqual([4, 0, 0, 0]);
    // v2: the three open steps claim 1 each (x = 4/3): floors 1 + 1 + 1, the last unit to the root (ties to the smaller index).
    const a = allocate(chain, scoreCpu(chain, { rule: 'v2' }), { budget: 4 });
    expect(Array.from(a.mass, (x) => +x.toFixed(12))).toEqual([4 / 3, 4 / 3, 4 / 3, 0].map((x) => +x.toFixed(12)));
    expect(Array.from(a.branches)).toEqual([2, 1, 1, 0]);
    // v3: no contested fork anywhere, so only the root claims: fresh rollouts, as independent chains.
    expect(Array.from(allocate(chain, scoreCpu(chain), { budget: 4 }).branches)).toEqual([4, 0, 0, 0]);
  });

  it('exhausted chains are closed but roots never are', () => {
    const env = createEnv('maze', 1);
    const g = grower(env, 1000, 1);
    const f = g.forest, root = f.roots[0];
    const mid = g.extend(root, 0);
    const end = g.extend(mid, 1);
    f.terminal[end] = 1;
    const open = g.extend(root, 2);
    const closed = exhaustedNodes(f);
    expect([closed[root], closed[mid], closed[end], closed[open]]).toEqual([0, 1, 1, 0]);
    const packed = packRollouts(f, closed);
    expect(Array.from(packed.terminal)).toEqual([0, 1, 1, 0]);
  });

  for (const [rule, envName, steps] of [['v3', 'toolagent', 6], ['v2', 'toolagent', 6], ['v1', 'dependency', 6]] as const) {
    it(`TRACE ${rule}-learned moves α, τ from the step gains; TRACE ${rule} default keeps them`, () => {
      const env = createEnv(envName, 2);
      const policy = new TabularPolicy(env.stateCount, env.actions);
      const learned = new TraceAllocator({ rule, learn: true, baseDepth: 9, round: { perTree: 2, global: true } });
      const fixed = new TraceAllocator({ rule, baseDepth: 9, round: { perTree: 2, global: true } });
      const rng = new Rng(3);
      for (let step = 0; step < steps; step++) {
        for (const alloc of [learned, fixed]) {
          const g = new Grower(new RolloutForest(env.dim), env, policy, rng, 600);
          for (let t = 0; t < 4; t++) g.addRoot(t, env.start(t));
          alloc.grow(g);
        }
      }
      expect(fixed.params()).toEqual({ alpha: 1, tau: 0.5, rule });
      const p = learned.params();
      expect(Math.abs(Math.log(p.alpha)) + Math.abs(Math.log(p.tau / 0.5))).toBeGreaterThan(0.01);
    });
  }

  it('with one rollout per tree per round, closed-chains TRACE grows independent chains and α, τ never move', () => {
    const env = createEnv('dependency', 2);
    const policy = new TabularPolicy(env.stateCount, env.actions);
    const alloc = new TraceAllocator({ rule: 'v1', learn: true, baseDepth: 9, round: { perTree: 1, global: true }, closeExhausted: true });
    const rng = new Rng(4);
    for (let step = 0; step < 4; step++) {
      const g = new Grower(new RolloutForest(env.dim), env, policy, rng, 600);
      for (let t = 0; t < 4; t++) g.addRoot(t, env.start(t));
      alloc.grow(g);
      // Every non-root node has at most one child: the trees are stars of chains.
      for (let v = 0; v < g.forest.size; v++) if (g.forest.parent[v] >= 0) expect(g.forest.children[v].length).toBeLessThanOrEqual(1);
      // Nudge the policy so later steps differ from the first.
      policy.logits[(env as DependencyEnv).correctKey] += 0.5;
    }
    expect(alloc.params()).toEqual({ alpha: 1, tau: 0.5, rule: 'v1' });
  });

  it('meanCi gives the t interval', () => {
    const ci = meanCi([1, 2, 3, 4, 5]);
    expect(ci.mean).toBe(3);
    expect(ci.hi - ci.mean).toBeCloseTo(2.776 * Math.sqrt(2.5 / 5), 10);
    expect(meanCi([7])).toEqual({ mean: 7, lo: 7, hi: 7, n: 1 });
  });
});

/** Walsh patterns of period 4: zero mean over any multiple of 4 seeds, orthogonal to each other. */
const WALSH = [[1, -1, 1, -1], [1, 1, -1, -1], [1, -1, -1, 1]];

/**
 * Per-seed final success for `seeds` seeds (a multiple of 4): the first allocator is the leader
 * (a smooth per-seed baseline); every other one sits `gap` below it with per-seed spread
 * `spread` (a ±spread Walsh pattern, its own per allocator), so (leader − it) has mean `gap` exactly.
 */
function runs(seeds: number, gaps: Record<string, [gap: number, spread: number]>): Record<string, number[]> {
  const base = Array.from({ length: seeds }, (_, i) => 0.5 + 0.2 * Math.sin(i));
  return Object.fromEntries(Object.entries(gaps).map(([name, [gap, spread]], k) => [name, base.map((x, i) => x - gap - spread * WALSH[k % 3][i % 4])]));
}

describe('compute-equivalence', () => {
  const chains: Array<[number, number]> = [[1, 0.4], [1.5, 0.5], [2, 0.7]];
  it('interpolates the chains\' means linearly, the first crossing on non-monotone means', () => {
    expect(chainsMultiplier(0.45, chains)).toEqual({ kind: 'at', multiplier: 1.25 });
    expect(chainsMultiplier(0.6, chains)).toEqual({ kind: 'at', multiplier: 1.75 });
    expect(chainsMultiplier(0.5, chains)).toEqual({ kind: 'at', multiplier: 1.5 });
    expect(chainsMultiplier(0.55, [[1, 0.4], [1.5, 0.6], [2, 0.5]]).multiplier).toBeCloseTo(1.375, 12);
  });

  it('says "≤ 1" when chains at 1× already match and "> 2" when chains at 2× do not', () => {
    expect(formatEquivalence(chainsMultiplier(0.4, chains))).toBe('≤ 1');
    expect(formatEquivalence(chainsMultiplier(0.3, chains))).toBe('≤ 1');
    expect(formatEquivalence(chainsMultiplier(0.71, chains))).toBe('> 2');
    expect(formatEquivalence(chainsMultiplier(0.6, chains))).toBe('1.75');
    expect([0.3, 0.45, 0.5, 0.6, 0.71].map((t) => needsAtLeast(chainsMultiplier(t, chains), 1.5))).toEqual([false, false, true, true, true]);
  });
});

describe('direction (leader, leading group, separably behind)', () => {
  it('t95 follows the t table up to 30 degrees of freedom and the expansion beyond', () => {
    expect(t95(4)).toBe(2.776);
    expect(t95(30)).toBe(2.042);
    expect(t95(49)).toBeCloseTo(2.0096, 3);
    expect(t95(99)).toBeCloseTo(1.9842, 3);
    expect(t95(1e6)).toBeCloseTo(1.96, 3);
    expect(meanCi(Array.from({ length: 50 }, (_, i) => i % 2)).hi - 0.5).toBeCloseTo(t95(49) * Math.sqrt(((50 / 49) * 0.25) / 50), 10);
  });

  it('is paired by seed: a constant per-seed gap separates even when the marginal intervals overlap', () => {
    const b = [0.1, 0.3, 0.5, 0.7, 0.9];
    const a = b.map((x) => x + 0.05);
    expect(meanCi(b).hi).toBeGreaterThan(meanCi(a).mean); // the old "interval reaches the leader's mean" rule would call them tied
    const d = direction({ b, a });
    expect(d.leader).toBe('a');
    expect(d.leadingGroup).toEqual(['a']);
    expect(d.behind).toEqual(['b']);
    expect(d.gaps.b.lo).toBeCloseTo(0.05, 12);
  });

  it('keeps noisy or identical allocators in the leading group and orders by mean', () => {
    const lead = [1, 0.5, 1, 0.5, 1];
    const noisy = [0.5, 1, 1, 0.5, 0.5]; // gaps 0.5, −0.5, 0, 0, 0.5: mean 0.1, interval contains 0
    const low = [0.6, 0.05, 0.55, 0.1, 0.6]; // gaps 0.4–0.45 on every seed
    const d = direction({ low, noisy, lead, same: [...lead] });
    expect(d.leader).toBe('lead'); // exact tie with `same`: first in input order
    expect(d.leadingGroup).toEqual(['lead', 'same', 'noisy']);
    expect(d.behind).toEqual(['low']);
    expect(pairedGap(lead, noisy).lo).toBeLessThan(0);
    expect(d.gaps.same).toEqual({ mean: 0, lo: 0, hi: 0, n: 5 });
  });

  it('rejects runs with different seed counts', () => {
    expect(() => direction({ a: [1, 0], b: [1] })).toThrow(/seeds/);
    expect(() => pairedGap([1, 0], [1])).toThrow(/paired/);
  });

  const spec = ['trace', 'trace-learned'];
  const check = (quick: Record<string, number[]>, full: Record<string, number[]>) => checkDirection(direction(quick), direction(full), spec);

  it('passes when the leaders differ but each is inside the other run\'s leading group', () => {
    const full = runs(100, { uniform: [0, 0], 'spo-tree': [0.01, 0.2], independent: [0.02, 0.2], trace: [0.3, 0.1], 'trace-learned': [0.25, 0.1] });
    const quick = runs(20, { 'spo-tree': [0, 0], uniform: [0.02, 0.2], entropy: [0.03, 0.2], independent: [0.1, 0.05], trace: [0.3, 0.1], 'trace-learned': [0.25, 0.1] });
    const c = check(quick, full);
    expect(direction(full).leadingGroup).toEqual(['uniform', 'spo-tree', 'independent']);
    expect(direction(quick).leadingGroup).toEqual(['spo-tree', 'uniform', 'entropy']);
    expect(c.status).toBe('PASS');
    expect(c.failures).toEqual([]);
    // independent changes sides, which the check reports but does not fail on (entropy is not in the full run).
    expect(c.otherDifferences).toEqual(['independent inside (full) vs outside (quick)']);
  });

  it('passes when SPEC TRACE is inside the leading group in both runs', () => {
    const full = runs(100, { 'trace-closed': [0, 0], trace: [0.005, 0.2], 'trace-learned': [0.01, 0.2], uniform: [0.02, 0.2] });
    const quick = runs(20, { uniform: [0, 0], 'trace-learned': [0.005, 0.2], 'trace-closed': [0.01, 0.2], trace: [0.02, 0.2] });
    expect(check(quick, full).status).toBe('PASS');
  });

  it('fails when the quick leader is separably behind the full leader', () => {
    const full = runs(100, { independent: [0, 0], treepo: [0.01, 0.2], uniform: [0.1, 0.1], trace: [0.5, 0.1], 'trace-learned': [0.5, 0.1] });
    const quick = runs(20, { uniform: [0, 0], independent: [0.01, 0.2], trace: [0.5, 0.1], 'trace-learned': [0.5, 0.1] });
    const c = check(quick, full);
    expect(c.status).toBe('FAIL');
    expect(c.failures).toEqual(['quick leader uniform is separably behind the full leader independent']);
  });

  it('fails when the full leader is separably behind the quick leader', () => {
    const full = runs(100, { independent: [0, 0], treepo: [0.01, 0.2], trace: [0.5, 0.1], 'trace-learned': [0.5, 0.1] });
    const quick = runs(20, { treepo: [0, 0], independent: [0.1, 0.05], trace: [0.5, 0.1], 'trace-learned': [0.5, 0.1] });
    const c = check(quick, full);
    expect(c.status).toBe('FAIL');
    expect(c.failures).toEqual(['full leader independent is separably behind the quick leader treepo']);
  });

  it('is INCONCLUSIVE, not PASS, when the quick run calls SPEC TRACE tied with a gap interval that overlaps the full run\'s', () => {
    // Full, 100 seeds: TRACE 5 points behind, separably (≈ ±3). Quick, 20 seeds: the same gap, ≈ ±7: tied.
    const full = runs(100, { 'trace-closed': [0, 0], treepo: [0.005, 0.2], trace: [0.05, 0.15], 'trace-learned': [0.3, 0.1] });
    const quick = runs(20, { 'trace-closed': [0, 0], treepo: [0.005, 0.2], trace: [0.05, 0.15], 'trace-learned': [0.3, 0.1] });
    expect(direction(full).behind).toContain('trace');
    expect(direction(quick).leadingGroup).toContain('trace');
    const c = check(quick, full);
    expect(c.status).toBe('INCONCLUSIVE');
    expect(c.pass).toBe(false);
    expect(c.failures).toEqual([]);
    expect(c.unresolved).toHaveLength(1);
    expect(c.unresolved[0]).toMatch(/^trace is outside the leading group in the full run but inside in the quick run; gap to trace-closed, points: full 5\.0 \[2\.0, 8\.0\], quick 5\.0 \[-\d\.\d, 1\d\.\d\] — the intervals overlap: compatible, not resolved$/);
  });

  it('fails when the quick run calls SPEC TRACE tied with a gap interval disjoint from the full run\'s', () => {
    const full = runs(100, { uniform: [0, 0], puct: [0.005, 0.2], trace: [0.3, 0.1], 'trace-learned': [0.3, 0.1] });
    const quick = runs(20, { uniform: [0, 0], puct: [0.005, 0.2], trace: [0.3, 0.1], 'trace-learned': [0.01, 0.3] });
    const c = check(quick, full);
    expect(c.status).toBe('FAIL');
    expect(c.failures).toHaveLength(1);
    expect(c.failures[0]).toMatch(/^trace-learned is outside the leading group in the full run but inside in the quick run; .* — the intervals are disjoint: contradiction$/);
  });

  it('is INCONCLUSIVE when the quick run separates SPEC TRACE that the full run only just cannot, and FAIL when their gap intervals are disjoint', () => {
    // Full: 3.5 [−0.5, 7.5] points, tied. Quick: 6 [1, 11] points, separably behind; the intervals overlap.
    const full = runs(100, { 'trace-closed': [0, 0], treepo: [0.005, 0.2], 'trace-learned': [0.035, 0.2], trace: [0.3, 0.1] });
    const quick = runs(20, { 'trace-closed': [0, 0], treepo: [0.005, 0.2], 'trace-learned': [0.06, 0.1], trace: [0.3, 0.1] });
    const c = check(quick, full);
    expect(c.status).toBe('INCONCLUSIVE');
    expect(c.unresolved[0]).toMatch(/^trace-learned is inside the leading group in the full run but outside in the quick run; .* — the intervals overlap/);
    // Full: tied within ±1 point; quick: 10 [7.6, 12.4] points behind — disjoint.
    const tight = runs(100, { 'trace-closed': [0, 0], treepo: [0.005, 0.2], 'trace-learned': [0, 0.05], trace: [0.3, 0.1] });
    const quick2 = runs(20, { 'trace-closed': [0, 0], treepo: [0.005, 0.2], 'trace-learned': [0.1, 0.05], trace: [0.3, 0.1] });
    const c2 = check(quick2, tight);
    expect(c2.status).toBe('FAIL');
    expect(c2.failures[0]).toMatch(/the intervals are disjoint: contradiction$/);
    expect(overallStatus([c, check(full, full)])).toBe('INCONCLUSIVE');
    expect(overallStatus([c, c2])).toBe('FAIL');
    expect(overallStatus([check(full, full)])).toBe('PASS');
  });

  it('fails when an allocator the check needs is missing from one run', () => {
    const full = runs(100, { uniform: [0, 0], puct: [0.005, 0.2], trace: [0.3, 0.1], 'trace-learned': [0.3, 0.1] });
    const quick = runs(20, { puct: [0, 0], uniform: [0.005, 0.2], trace: [0.3, 0.1] });
    const c = check(quick, full);
    expect(c.status).toBe('FAIL');
    expect(c.failures).toEqual(['trace-learned is missing from the quick run']);
  });

  it('compares a quick run with fewer rows only on the allocators both runs have', () => {
    // The full run's leader (puct) is not in the quick run: on the common rows uniform leads both.
    const full = runs(100, { puct: [0, 0], uniform: [0.1, 0.05], independent: [0.3, 0.1], trace: [0.11, 0.2], 'trace-learned': [0.1, 0.2], 'independent-2x': [-0.5, 0.1] });
    const quick = runs(20, { uniform: [0, 0], independent: [0.2, 0.1], trace: [0.01, 0.3] });
    expect(checkDirection(direction(quick), direction(full), spec).status).toBe('FAIL');
    const c = checkCommon(quick, full, spec, (a) => a, ['independent-2x']);
    expect(c.status).toBe('PASS');
    expect(c.details).toEqual(['quick leader uniform is in the full leading group', 'full leader uniform is in the quick leading group', 'trace inside the leading group in both']);
  });

  it('checks disjoint blocks of a run against the whole run', () => {
    const whole = runs(100, { uniform: [0, 0], puct: [0.005, 0.2], trace: [0.3, 0.1], 'trace-learned': [0.3, 0.1] });
    const blocks = blockChecks(whole, 20, spec);
    expect(blocks.map((b) => [b.from, b.to, b.check.status])).toEqual([[1, 20, 'PASS'], [21, 40, 'PASS'], [41, 60, 'PASS'], [61, 80, 'PASS'], [81, 100, 'PASS']]);
    expect(blockChecks(whole, 40, spec).map((b) => b.to)).toEqual([40, 80]);
  });
});
