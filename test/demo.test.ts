// `trace-alloc demo` shows what the default rule does with one global budget and compares it,
// measured at run time, with what a user would do otherwise. These tests recompute the demo's
// allocation from the library and check that the summary lists what it claims to list.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { allocate } from '../src/allocate/allocate.js';
import { DEMO_LISTED_FORKS, DEMO_SETTLED_RATE } from '../src/cli/demo.js';
import { scoreCpu } from '../src/score/cpu.js';
import { mixedPrompts } from '../src/sim/choices.js';
import { compareStrategies, pairedGap } from '../src/sim/compare.js';
import { independentChains, traceStrategy, uniformExpansion } from '../src/sim/strategies.js';
import { generateForest } from '../src/synth/generate.js';
import { runCli } from './cli-helpers.js';

const dir = mkdtempSync(join(tmpdir(), 'trace-alloc-demo-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const TREES = 64, SEED = 3, COMPARE_SEEDS = 3;
const view = join(dir, 'view.html');
const run = runCli(['demo', '--trees', String(TREES), '--seed', String(SEED), '--backend', 'cpu', '--view', view, '--compare-seeds', String(COMPARE_SEEDS)]);

/** The demo's forest and plan, recomputed through the library. */
function recompute() {
  const forest = generateForest({ trees: TREES, dim: 64, seed: SEED, minNodes: 20, maxNodes: 200, settledRate: DEMO_SETTLED_RATE });
  const scores = scoreCpu(forest);
  const plan = allocate(forest, scores, { totalBudget: 16 * TREES });
  return { forest, scores, plan };
}

describe('trace-alloc demo', () => {
  it('exits 0', () => {
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
  });

  it('places exactly the global budget, and gives trees whose rollouts disagree more of it', () => {
    const { forest, plan } = recompute();
    const perTree = Array.from(plan.treeBudget).reduce((a, b) => a + b, 0);
    expect(perTree).toBe(16 * TREES);
    expect(run.stdout).toContain(`budget    1,024 rollouts for the whole forest (--total-budget; 16.0 per tree on average): 1,024 placed`);
    const groups = [...run.stdout.matchAll(/(disagree|agree) *: (\d+) trees, ([\d.]+) rollouts each on average/g)].map((m) => ({ trees: Number(m[2]), mean: Number(m[3]) }));
    expect(groups).toHaveLength(2);
    expect(groups[0].trees + groups[1].trees).toBe(forest.treeCount);
    expect(groups[0].trees * groups[0].mean + groups[1].trees * groups[1].mean).toBeCloseTo(16 * TREES, -1);
    expect(groups[0].mean).toBeGreaterThan(groups[1].mean);
  });

  it('lists the forks below the root that received the most rollouts, one per tree, with their intensity', () => {
    const { forest, scores, plan } = recompute();
    // Rollouts at each node and anywhere below it, walking each node's path up (independent of the demo's one pass).
    const under = new Array<number>(forest.nodeCount).fill(0);
    for (let v = 0; v < forest.nodeCount; v++) for (let u = v; u >= 0; u = forest.parentRow[u]) under[u] += plan.branches[v];
    const expected: { tree: string; node: number; total: number; at: number; intensity: number; row: number }[] = [];
    for (let g = 0; g < forest.groupCount; g++) {
      const row = forest.groupParent[g];
      if (forest.parentRow[row] < 0 || forest.groupOffset[g + 1] - forest.groupOffset[g] < 2 || under[row] === 0) continue;
      const t = forest.nodeTree[row];
      expected.push({ tree: forest.treeIds[t], node: row - forest.treeOffset[t], total: under[row], at: plan.branches[row], intensity: scores.intensity[g], row });
    }
    expected.sort((a, b) => b.total - a.total || b.intensity - a.intensity || a.row - b.row);
    const perTree = expected.filter((fork, i) => expected.findIndex((other) => other.tree === fork.tree) === i);
    const listed = [...run.stdout.matchAll(/^ {4}tree (\S+) node (\d+): k=\d+ I=([\d.]+) w=\[[\d. ]+\] rollouts (\d+) = (\d+) \+ (\d+) of (\d+)$/gm)]
      .map((m) => ({ tree: m[1], node: Number(m[2]), intensity: Number(m[3]), total: Number(m[4]), at: Number(m[5]), below: Number(m[6]) }));
    expect(listed).toHaveLength(DEMO_LISTED_FORKS);
    expect(listed.map(({ tree, node, total, at }) => ({ tree, node, total, at }))).toEqual(perTree.slice(0, DEMO_LISTED_FORKS).map(({ tree, node, total, at }) => ({ tree, node, total, at })));
    for (const [i, fork] of listed.entries()) {
      expect(fork.intensity).toBeCloseTo(perTree[i].intensity, 3);
      expect(fork.at + fork.below).toBe(fork.total);
    }
    // One fork per tree, and no fork of an unlisted tree received more than the last one listed.
    expect(new Set(listed.map((fork) => fork.tree)).size).toBe(listed.length);
    for (const rest of perTree.slice(DEMO_LISTED_FORKS)) expect(rest.total).toBeLessThanOrEqual(listed[listed.length - 1].total);
  });

  it('opens the view on the first listed fork\'s tree', () => {
    const first = /^ {4}tree (\S+) node/m.exec(run.stdout)![1];
    expect(run.stdout).toContain(`tree ${first} (the first listed fork's tree) first`);
    const m = /<script type="application\/json" id="trace-alloc-data">([\s\S]*?)<\/script>/.exec(readFileSync(view, 'utf8'));
    const data = JSON.parse(m![1]) as { trees: Array<{ id: string }>; initial: number };
    expect(data.trees[data.initial].id).toBe(first);
  });

  it('compares TRACE with independent chains and uniform expansion at equal environment steps', () => {
    const rows = [...run.stdout.matchAll(/^ {4}(TRACE v5|independent chains|uniform expansion) +([\d,]+) +([\d.]+)%(.*)$/gm)];
    expect(rows.map((r) => r[1])).toEqual(['TRACE v5', 'independent chains', 'uniform expansion']);
    // 15 training steps of 2,048 environment steps each, the same for every strategy.
    expect(new Set(rows.map((r) => r[2]))).toEqual(new Set(['30,720']));
    for (const r of rows.slice(1)) expect(r[4]).toMatch(/^ +[+-][\d.]+ points \[[+-][\d.]+, [+-][\d.]+\]$/);
    expect(run.stdout).toMatch(new RegExp(`seeds ${SEED}–${SEED + COMPARE_SEEDS - 1}`));
    expect(run.stdout).toMatch(/On this task, with these seeds, TRACE v5 is (ahead of|behind|not separable from) independent chains.* and (ahead of|behind|not separable from) uniform expansion/);
  });
});

describe('the simulated comparison behind the demo', () => {
  const task = (seed: number) => ({ env: mixedPrompts, seed, steps: 2, budgetPerStep: 512, prompts: 16, learningRate: 4, evalEpisodes: 64 });
  const strategies = [traceStrategy({ alpha: 1, tau: 0.5, rule: 'v5' }), independentChains, uniformExpansion];

  it('spends exactly the budget with every strategy and repeats itself from a seed', () => {
    const first = compareStrategies(strategies, [1, 2], task);
    for (const runs of first) {
      expect(runs.envSteps).toEqual([1024, 1024]);
      for (const s of runs.success) expect(s).toBeGreaterThanOrEqual(0), expect(s).toBeLessThanOrEqual(1);
    }
    expect(compareStrategies(strategies, [1, 2], task)).toEqual(first);
  });

  it('a paired gap is the mean difference with a t-interval around it', () => {
    const gap = pairedGap([0.5, 0.7, 0.6], [0.4, 0.5, 0.6]);
    expect(gap.mean).toBeCloseTo(0.1, 12);
    // sd of (0.1, 0.2, 0) is 0.1; t(2) = 4.303; half-width 4.303 · 0.1 / √3.
    expect(gap.high - gap.mean).toBeCloseTo((4.303 * 0.1) / Math.sqrt(3), 9);
    expect(pairedGap([1], [0]).low).toBeNaN();
  });
});
