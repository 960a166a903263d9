// The simulated evaluation (issue 5): every allocator on every environment at equal budget.
// `npx tsx eval/run.ts [--quick] [--out DIR]` writes JSON results, SVG charts and a Markdown
// table into eval/results/. Progress goes to stderr.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { barChart, lineChart, markdownTable, type Series } from '../report/svg.js';
import { ALLOCATORS, type AllocatorName } from './allocators/index.js';
import { ENVS, type EnvName } from './envs/index.js';
import { meanCi, type Interval } from './stats.js';
import { train, type TrainConfig, type TrainResult } from './train.js';

interface Profile { name: 'quick' | 'full'; seeds: number; steps: number; budgetPerStep: number; prompts: number; evalEvery: number; evalEpisodes: number; finalEpisodes: number }

const PROFILES: Record<'quick' | 'full', Profile> = {
  quick: { name: 'quick', seeds: 5, steps: 40, budgetPerStep: 512, prompts: 4, evalEvery: 5, evalEpisodes: 100, finalEpisodes: 400 },
  full: { name: 'full', seeds: 20, steps: 40, budgetPerStep: 512, prompts: 4, evalEvery: 5, evalEpisodes: 200, finalEpisodes: 1000 },
};
const POLICY_LR = 1;
const TRACE_ROLLOUTS_PER_TREE = 2;

const LABEL: Record<AllocatorName, string> = {
  trace: 'TRACE (α=1, τ=0.5)',
  'trace-learned': 'TRACE (learned α, τ)',
  'trace-closed': 'TRACE, closed chains (proposal, not SPEC)',
  uniform: 'Uniform (Tree-GRPO)',
  entropy: 'Entropy (TreeRL/ARPO)',
  puct: 'PUCT (mctx)',
  'spo-tree': 'Fixed tree (SPO-tree)',
  treepo: 'Logprob split (TreePO)',
};

interface Summary {
  allocator: AllocatorName;
  label: string;
  firstReward: Interval;
  firstRewardFound: number;
  mixedFraction: Interval;
  finalSuccess: Interval;
  deadFraction: Interval;
  zeroFraction: Interval;
  allocatorMs: Interval;
  budgetPerRun: number;
}

function parseArgs(argv: string[]): { profile: Profile; out: string; only: EnvName[] } {
  let profile = PROFILES.full, out = 'eval/results', only: EnvName[] = [...ENVS];
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--quick') profile = PROFILES.quick;
    else if (a === '--out') out = argv[++i];
    else if (a === '--env') only = argv[++i].split(',') as EnvName[];
    else throw new Error(`unknown argument ${a} (use --quick, --out DIR, --env maze,navigation,dependency)`);
  }
  for (const e of only) if (!ENVS.includes(e)) throw new Error(`unknown environment ${e}`);
  return { profile, out, only };
}

class Progress {
  private readonly start = performance.now();
  private lastLine = -1;
  constructor(private readonly total: number) {}
  tick(done: number, what: string): void {
    const frac = done / this.total;
    const elapsed = (performance.now() - this.start) / 1000;
    const eta = done > 0 ? (elapsed / done) * (this.total - done) : 0;
    const bar = '#'.repeat(Math.round(frac * 30)).padEnd(30, '.');
    const line = `[${bar}] ${done}/${this.total} ${elapsed.toFixed(0)}s elapsed, ~${eta.toFixed(0)}s left  ${what}`;
    if (process.stderr.isTTY) process.stderr.write(`\r${line.padEnd(100)}`);
    else if (Math.floor(frac * 10) !== this.lastLine) { this.lastLine = Math.floor(frac * 10); process.stderr.write(`${line}\n`); }
  }
  end(): void { if (process.stderr.isTTY) process.stderr.write('\n'); }
}

function summarize(allocator: AllocatorName, runs: TrainResult[]): Summary {
  const budget = runs[0].config.steps * runs[0].config.budgetPerStep;
  const found = runs.filter((r) => r.firstReward !== null).length;
  return {
    allocator,
    label: LABEL[allocator],
    // Runs that never found a reward count as the whole budget (a lower bound on the true value).
    firstReward: meanCi(runs.map((r) => r.firstReward ?? budget)),
    firstRewardFound: found,
    mixedFraction: meanCi(runs.map((r) => r.mixedFraction)),
    finalSuccess: meanCi(runs.map((r) => r.finalSuccess)),
    deadFraction: meanCi(runs.map((r) => r.deadFraction)),
    zeroFraction: meanCi(runs.map((r) => r.zeroFraction)),
    allocatorMs: meanCi(runs.map((r) => r.allocatorMs)),
    budgetPerRun: budget,
  };
}

const fmt = (x: Interval, digits: number, scale = 1) => `${(x.mean * scale).toFixed(digits)} [${(x.lo * scale).toFixed(digits)}, ${(x.hi * scale).toFixed(digits)}]`;

function table(rows: Summary[], seeds: number): string {
  return markdownTable(
    ['allocator', 'success after budget, %', 'steps to first reward', 'found', 'mixed sibling groups, %', 'dead-branch steps, %', 'zero-reward steps, %', 'allocator ms / step'],
    rows.map((s) => [s.label, fmt(s.finalSuccess, 1, 100), fmt(s.firstReward, 0), `${s.firstRewardFound}/${seeds}`, fmt(s.mixedFraction, 1, 100), fmt(s.deadFraction, 1, 100), fmt(s.zeroFraction, 1, 100), fmt(s.allocatorMs, 2)]),
  );
}

/** Mean curve with a 95% band across seeds; all runs share the evaluation points. */
function curveSeries(name: string, curves: Array<Array<[number, number]>>): Series {
  const points: Array<[number, number]> = [], band: Array<[number, number, number]> = [];
  for (let i = 0; i < curves[0].length; i++) {
    const ci = meanCi(curves.map((c) => c[i][1]));
    const x = curves[0][i][0];
    points.push([x, ci.mean]);
    band.push([x, Math.max(0, ci.lo), Math.min(1, ci.hi)]);
  }
  return { name, points, band };
}

function trajectory(name: string, runs: number[][]): Series {
  const points: Array<[number, number]> = [], band: Array<[number, number, number]> = [];
  for (let i = 0; i < runs[0].length; i++) {
    const ci = meanCi(runs.map((r) => r[i]));
    points.push([i, ci.mean]);
    band.push([i, Math.max(1e-3, ci.lo), ci.hi]);
  }
  return { name, points, band };
}

function main(): void {
  const { profile, out, only } = parseArgs(process.argv.slice(2));
  mkdirSync(out, { recursive: true });
  const total = only.length * ALLOCATORS.length * profile.seeds;
  const progress = new Progress(total);
  const t0 = performance.now();
  let done = 0;
  const summaries: Record<string, Summary[]> = {};
  const winners: Record<string, string> = {};
  const alphaSeries: Series[] = [], tauSeries: Series[] = [];
  const md: string[] = [`# Evaluation results (${profile.name} profile)`, '', `Generated by \`npm run ${profile.name === 'quick' ? 'eval:quick' : 'eval'}\`. ${profile.seeds} seeds; each run: ${profile.steps} training steps × ${profile.budgetPerStep} environment steps over ${profile.prompts} trees. Cells: mean [95% interval] over seeds.`, ''];
  for (const env of only) {
    const results: Record<string, TrainResult[]> = {};
    for (const allocator of ALLOCATORS) {
      results[allocator] = [];
      for (let s = 1; s <= profile.seeds; s++) {
        progress.tick(done, `${env}/${allocator} seed ${s}`);
        const config: TrainConfig = {
          env, allocator, seed: s, steps: profile.steps, budgetPerStep: profile.budgetPerStep, prompts: profile.prompts,
          learningRate: POLICY_LR, evalEvery: profile.evalEvery, evalEpisodes: profile.evalEpisodes, finalEpisodes: profile.finalEpisodes,
          traceRolloutsPerTree: TRACE_ROLLOUTS_PER_TREE,
        };
        const r = train(config);
        if (r.budgetUsed !== profile.steps * profile.budgetPerStep) throw new Error(`${env}/${allocator} seed ${s}: spent ${r.budgetUsed} of ${profile.steps * profile.budgetPerStep} budget steps`);
        results[allocator].push(r);
        done++;
      }
    }
    const rows = ALLOCATORS.map((a) => summarize(a, results[a]));
    summaries[env] = rows;
    const best = rows.reduce((b, r) => (r.finalSuccess.mean > b.finalSuccess.mean ? r : b));
    winners[env] = best.allocator;
    writeFileSync(join(out, `${env}.json`), `${JSON.stringify({ env, profile, summary: rows, runs: results }, null, 1)}\n`);
    writeFileSync(join(out, `curve-${env}.svg`), lineChart({
      title: `${env}: success rate of the policy vs. budget spent (${profile.seeds} seeds, 95% band)`,
      xLabel: 'environment steps of rollout budget', yLabel: 'success rate (sampled episodes)',
      series: ALLOCATORS.map((a) => curveSeries(LABEL[a], results[a].map((r) => r.curve))),
    }));
    alphaSeries.push(trajectory(env, results['trace-learned'].map((r) => r.alpha)));
    tauSeries.push(trajectory(env, results['trace-learned'].map((r) => r.tau)));
    md.push(`## ${env}`, '', table(rows, profile.seeds), '', `Highest final success: **${best.label}**.`, '');
  }
  progress.end();
  const seconds = (performance.now() - t0) / 1000;
  writeFileSync(join(out, 'alpha.svg'), lineChart({ title: 'TRACE-learned: α per training step (mean, 95% band)', xLabel: 'training step', yLabel: 'α', logY: true, series: alphaSeries }));
  writeFileSync(join(out, 'tau.svg'), lineChart({ title: 'TRACE-learned: τ per training step (mean, 95% band)', xLabel: 'training step', yLabel: 'τ', logY: true, series: tauSeries }));
  writeFileSync(join(out, 'success.svg'), barChart({
    title: `Success rate after ${profile.steps * profile.budgetPerStep} budget steps (95% interval)`,
    yLabel: 'success rate', categories: only,
    groups: ALLOCATORS.map((a) => ({
      name: LABEL[a],
      values: only.map((e) => summaries[e].find((s) => s.allocator === a)!.finalSuccess.mean),
      errors: only.map((e) => { const s = summaries[e].find((x) => x.allocator === a)!.finalSuccess; return [Math.max(0, s.lo), Math.min(1, s.hi)] as [number, number]; }),
    })),
  }));
  md.push(`Wall time: ${seconds.toFixed(1)} s on this machine.`, '');
  writeFileSync(join(out, 'summary.md'), `${md.join('\n')}\n`);
  writeFileSync(join(out, 'summary.json'), `${JSON.stringify({ profile, policyLearningRate: POLICY_LR, traceRolloutsPerTree: TRACE_ROLLOUTS_PER_TREE, winners, seconds, summaries }, null, 1)}\n`);
  process.stderr.write(`done in ${seconds.toFixed(1)} s; winners: ${JSON.stringify(winners)}; results in ${out}/\n`);
}

main();
