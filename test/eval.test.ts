import { describe, expect, it } from 'vitest';
import { allocate } from '../src/allocate/allocate.js';
import { packForest } from '../src/forest/packed.js';
import { scoreCpu } from '../src/score/cpu.js';
import { Rng } from '../src/util/random.js';
import { ALLOCATORS, createAllocator } from '../eval/allocators/index.js';
import { TraceAllocator } from '../eval/allocators/trace.js';
import { DependencyEnv } from '../eval/envs/dependency.js';
import { ENVS, createEnv } from '../eval/envs/index.js';
import { MazeEnv } from '../eval/envs/maze.js';
import { NavigationEnv } from '../eval/envs/navigation.js';
import type { Env } from '../eval/envs/types.js';
import { treeMetrics } from '../eval/metrics.js';
import { exhaustedNodes, packRollouts } from '../eval/pack.js';
import { TabularPolicy } from '../eval/policy.js';
import { meanCi } from '../eval/stats.js';
import { train, updatePolicy } from '../eval/train.js';
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

  it.each(ALLOCATORS)('%s spends exactly the budget of every training step', (name) => {
    for (const env of ENVS) {
      const r = train({
        env, allocator: name, seed: 5, steps: 3, budgetPerStep: 150, prompts: 3, learningRate: 1,
        evalEvery: 3, evalEpisodes: 10, finalEpisodes: 10, traceRolloutsPerTree: 2,
      });
      expect(r.budgetUsed).toBe(450);
      expect(r.curve.map((c) => c[0])).toEqual([0, 450]);
    }
  });

  it.each(ALLOCATORS)('%s spends one step budget exactly in one grow call', (name) => {
    const env = createEnv('navigation', 4);
    const g = grower(env, 333, 4);
    createAllocator(name, 4, 2).grow(g);
    expect(g.used).toBe(333);
    expect(g.forest.size - 4).toBe(333);
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
    updatePolicy(policy, f, 1);
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

  it('SPEC §4 sends a finished chain\'s whole budget to the node just above its end (what closed chains change)', () => {
    // root → 1 → 2 → 3 (episode over): 2 is open and has no live child, so x_2 = m.
    const chain = packForest({ dim: 0, trees: [{ nodes: [{}, { parent: 0 }, { parent: 1 }, { parent: 2, terminal: true, visits: 1 }] }] });
    expect(Array.from(allocate(chain, scoreCpu(chain), { budget: 4 }).branches)).toEqual([0, 0, 4, 0]);
    // Presenting the exhausted nodes 1, 2 as terminal sends it back to the root instead.
    const closed = packForest({ dim: 0, trees: [{ nodes: [{}, { parent: 0, terminal: true }, { parent: 1, terminal: true }, { parent: 2, terminal: true, visits: 1 }] }] });
    expect(Array.from(allocate(closed, scoreCpu(closed), { budget: 4 }).branches)).toEqual([4, 0, 0, 0]);
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

  it('TRACE-learned moves α, τ from the step gains; TRACE default keeps them', () => {
    const env = createEnv('dependency', 2);
    const policy = new TabularPolicy(env.stateCount, env.actions);
    const learned = new TraceAllocator({ learn: true, baseDepth: 9, rolloutsPerTree: 2 });
    const fixed = new TraceAllocator({ baseDepth: 9, rolloutsPerTree: 2 });
    const rng = new Rng(3);
    for (let step = 0; step < 6; step++) {
      for (const alloc of [learned, fixed]) {
        const g = new Grower(new RolloutForest(env.dim), env, policy, rng, 600);
        for (let t = 0; t < 4; t++) g.addRoot(t, env.start(t));
        alloc.grow(g);
      }
    }
    expect(fixed.params()).toEqual({ alpha: 1, tau: 0.5 });
    const p = learned.params();
    expect(Math.abs(Math.log(p.alpha)) + Math.abs(Math.log(p.tau / 0.5))).toBeGreaterThan(0.01);
  });

  it('with one rollout per tree per round, closed-chains TRACE grows independent chains and α, τ never move', () => {
    const env = createEnv('dependency', 2);
    const policy = new TabularPolicy(env.stateCount, env.actions);
    const alloc = new TraceAllocator({ learn: true, baseDepth: 9, rolloutsPerTree: 1, closeExhausted: true });
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
    expect(alloc.params()).toEqual({ alpha: 1, tau: 0.5 });
  });

  it('meanCi gives the t interval', () => {
    const ci = meanCi([1, 2, 3, 4, 5]);
    expect(ci.mean).toBe(3);
    expect(ci.hi - ci.mean).toBeCloseTo(2.776 * Math.sqrt(2.5 / 5), 10);
    expect(meanCi([7])).toEqual({ mean: 7, lo: 7, hi: 7, n: 1 });
  });
});
