// Golden plans: every byte the CLI and the live service answered on the random forests of
// test/reference/ (rules v1, v2, v3; a budget per tree and a global one; random settings), as
// recorded in test/fixtures/golden-plans.json.gz by test/golden/record.ts. A refactor of the
// rules must leave every plan where it was: the CLI's `score` output, the same plan made on
// three worker threads and by the two phases of a sharded global budget in process, and every
// response of the `serve --stdio` sessions (feedback, finished rollouts, new nodes, stopped
// branches, re-plans, shards, refused settings).
import { afterAll, describe, expect, it } from 'vitest';
import { planToJson, type PlanJson } from '../src/allocate/plan.js';
import { allocateShard, globalBudgetShares, type ShardShares } from '../src/allocate/shards.js';
import { allocateOnThreads } from '../src/allocate/threaded.js';
import { SCORE_COMMAND } from '../src/cli/score.js';
import { parseFlags, scoreSettings } from '../src/cli/flags.js';
import type { TreeInput } from '../src/forest/input.js';
import { parseForest } from '../src/forest/load.js';
import { packForest, treeIdOf } from '../src/forest/packed.js';
import { CpuScorer } from '../src/score/cpu.js';
import { inParallel, readGolden, replaySession, runScore, type ScoreRun } from './golden/plans.js';

const golden = readGolden();
/** 600 CLI runs and 17 sessions take about 50 s on an idle 2-core machine; a loaded one may take several times that. */
const SPAWNING = { timeout: 15 * 60_000 };
const threads = new CpuScorer({ threads: 3, minParallelCost: 0 });
afterAll(() => threads.destroy());

/** The first line of difference between two texts, for a failure message a person can read. */
function firstDifference(got: string, want: string): string {
  let i = 0;
  while (i < got.length && got[i] === want[i]) i++;
  return `at byte ${i}: got …${JSON.stringify(got.slice(Math.max(0, i - 80), i + 80))}…, recorded …${JSON.stringify(want.slice(Math.max(0, i - 80), i + 80))}…`;
}

/** No plan moved; otherwise how many did and the first few (an empty list passes). */
function expectNoneMoved(moved: readonly string[]): void {
  expect(moved.length === 0 ? [] : [`${moved.length} moved; the first:`, ...moved.slice(0, 5)]).toEqual([]);
}

function settingsOf(run: ScoreRun) {
  return scoreSettings(parseFlags(run.args, SCORE_COMMAND.flags).values);
}

describe('golden plans', () => {
  it('holds a few hundred forests under every rule and budget mode (the fixture is what the test checks)', () => {
    expect(golden.forests.length).toBeGreaterThanOrEqual(150);
    for (const rule of ['v1', 'v2', 'v3']) {
      const runs = golden.score.filter((r) => r.args.includes(rule));
      expect(runs.filter((r) => r.args.includes('--total-budget')).length).toBeGreaterThan(20);
      expect(runs.filter((r) => !r.args.includes('--total-budget')).length).toBeGreaterThan(20);
    }
    expect(golden.serve.reduce((n, s) => n + s.requests.length, 0)).toBeGreaterThan(5000);
  });

  it('trace-alloc score - --scores --backend cpu: every plan, byte for byte', SPAWNING, async () => {
    const got = await inParallel(golden.score.map((run) => () => runScore(golden.forests[run.forest], run.args)), 2);
    const moved: string[] = [];
    golden.score.forEach((run, i) => {
      const r = got[i];
      if (r.status !== run.status || r.stdout !== run.stdout || (run.stderr !== undefined && r.stderr !== run.stderr)) {
        moved.push(`${run.name} (score - ${run.args.join(' ')}): exit ${r.status} (recorded ${run.status}) ${firstDifference(r.stdout + (r.stderr ?? ''), run.stdout + (run.stderr ?? ''))}`);
      }
    });
    expectNoneMoved(moved);
  });

  it('the same plans on three worker threads (allocateOnThreads), in process', async () => {
    const moved: string[] = [];
    for (const run of golden.score) {
      if (run.status !== 0) continue;
      const settings = settingsOf(run);
      const forest = parseForest(golden.forests[run.forest]);
      const scores = threads.scoreSync(forest, settings.params);
      const allocation = await allocateOnThreads(forest, scores, settings.allocate, threads, { minRows: 0 });
      const text = `${JSON.stringify(planToJson(forest, scores, allocation, { includeScores: run.args.includes('--scores') }))}\n`;
      if (text !== run.stdout) moved.push(`${run.name}: ${firstDifference(text, run.stdout)}`);
    }
    expectNoneMoved(moved);
  });

  it('the same global plans from two shards (globalBudgetShares, allocateShard), in process', () => {
    const moved: string[] = [];
    let checked = 0;
    for (const run of golden.score) {
      if (run.status !== 0 || !run.args.includes('--total-budget')) continue;
      const text = golden.forests[run.forest];
      const whole = parseForest(text);
      if (whole.treeCount < 2) continue;
      const settings = settingsOf(run);
      // The trees as the file holds them, each with the id the whole forest gave it.
      const lines = text.trim().split('\n').map((l) => JSON.parse(l) as { trees?: TreeInput[] } & TreeInput);
      const raw = lines.length === 1 && lines[0].trees !== undefined ? lines[0].trees : lines;
      const trees = raw.map((t, i) => ({ ...t, id: treeIdOf(t.id, i) }));
      const cut = Math.ceil(trees.length / 2);
      const parts = [trees.slice(0, cut), trees.slice(cut)].map((part) => {
        const forest = packForest({ dim: whole.dim, trees: part });
        return { forest, scores: threads.scoreSync(forest, settings.params) };
      });
      const gathered: ShardShares[] = parts.map(({ forest, scores }) => JSON.parse(JSON.stringify(globalBudgetShares(forest, scores, settings.allocate))) as ShardShares);
      const plans = parts.map(({ forest, scores }, i) => planToJson(forest, scores, allocateShard(forest, scores, gathered, i, settings.allocate), { includeScores: run.args.includes('--scores') }));
      const want = JSON.parse(run.stdout) as PlanJson;
      const got = JSON.stringify({ ...want, trees: plans.flatMap((p) => p.trees), unallocated: plans[0].unallocated });
      if (got !== JSON.stringify(want)) moved.push(`${run.name}: ${firstDifference(got, JSON.stringify(want))}`);
      checked++;
    }
    expect(checked).toBeGreaterThan(50);
    expectNoneMoved(moved);
  });

  it('trace-alloc serve --stdio --backend cpu: every response of every session, byte for byte', SPAWNING, async () => {
    const got = await inParallel(golden.serve.map((session) => () => replaySession(session.requests)), 2);
    const moved: string[] = [];
    golden.serve.forEach((session, s) => {
      expect(got[s].length, session.name).toBe(session.responses.length);
      session.responses.forEach((want, i) => {
        if (got[s][i] !== want) moved.push(`${session.name}, request ${session.requests[i].slice(0, 120)}…: ${firstDifference(got[s][i], want)}`);
      });
    });
    expectNoneMoved(moved);
  });
});
