// The simulated evaluation: every allocator on every (environment, learner) at equal budget.
// `npx tsx eval/run.ts [--quick | --trie] [--seeds N] [--first-seed S] [--out DIR] [--env a,b] [--learner treerl,grpo]
// [--against FILE | --no-check]` writes per-environment JSON, SVG charts and summary.md /
// summary.json into DIR (default: a temporary folder). Progress goes to stderr. The quick run
// ends with a direction check against the committed full run (`--against`, default
// eval/results/summary.json), printed to stdout; the exit code is 0 whether it passes or not.
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { barChart, lineChart, markdownTable, type Series } from '../report/svg.js';
import type { AllocatorName } from './allocators/index.js';
import { blockChecks, checkCommon, direction, overallStatus, type CheckStatus, type Direction, type DirectionCheck } from './direction.js';
import { ENVS, type EnvName } from './envs/index.js';
import { BAR_ROWS, CURVE_ROWS, LABEL, MORE_BUDGET, PROFILES, type Profile } from './profiles.js';
import { acrossTable, compactRun, computeEquivalence, curveSeries, equivalenceLine, fmt, learnedParams, resultsTable, summarize, traceGapTable, trajectory, untrained, type BySeed, type Summary } from './report.js';
import { LEARNERS, TASKS, trainConfig } from './settings.js';
import { DEFAULT_RULE } from '../src/allocate/rules/index.js';
import type { Interval } from './stats.js';
import { train, type Learner, type TrainResult } from './train.js';

/** Marks summary.json files this harness wrote; a check against any other file is skipped (its rows mean other things). */
const HARNESS = 'v5';
const FULL_SUMMARY = 'eval/results/summary.json';
/** TRACE's default rule, default and learned: the direction check requires the same inside/outside verdict for those both runs have. */
const WATCHED: readonly AllocatorName[] = ['trace', 'trace-learned'];

interface Args { profile: Profile; out: string; envs: EnvName[]; learners: Learner[]; against: string | null }

function parseArgs(argv: string[]): Args {
  let profile = PROFILES.full, out: string | undefined, envs: EnvName[] = [...ENVS], learners: Learner[] | undefined, seeds: number | undefined, firstSeed: number | undefined, against: string | null | undefined;
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--quick') profile = PROFILES.quick;
    else if (a === '--trie') profile = PROFILES.robustness;
    else if (a === '--out') out = argv[++i];
    else if (a === '--env') envs = argv[++i].split(',') as EnvName[];
    else if (a === '--learner') learners = argv[++i].split(',') as Learner[];
    else if (a === '--seeds') seeds = Number(argv[++i]);
    else if (a === '--first-seed') firstSeed = Number(argv[++i]);
    else if (a === '--against') against = argv[++i];
    else if (a === '--no-check') against = null;
    else throw new Error(`unknown argument ${a} (use --quick or --trie, --seeds N, --first-seed S, --out DIR, --env ${ENVS.join(',')}, --learner ${LEARNERS.join(',')}, --against FILE, --no-check)`);
  }
  for (const e of envs) if (!ENVS.includes(e)) throw new Error(`unknown environment ${e}`);
  for (const l of learners ?? []) if (!LEARNERS.includes(l)) throw new Error(`unknown learner ${l}`);
  if (firstSeed !== undefined) {
    // Tuning seeds (1001 and up) are in no reported run: a rule explored there is judged on seeds it never saw.
    if (!Number.isInteger(firstSeed) || firstSeed < 1) throw new Error('--first-seed needs an integer ≥ 1');
    profile = { ...profile, firstSeed };
  }
  if (seeds !== undefined) {
    if (!Number.isInteger(seeds) || seeds < 2) throw new Error('--seeds needs an integer ≥ 2');
    profile = { ...profile, seeds };
  }
  // Results go to a temporary folder unless --out names one: re-running never rewrites the
  // committed files by accident (their timing columns would change).
  return {
    profile, envs, learners: learners ?? [...profile.learners],
    out: out ?? join(tmpdir(), `trace-alloc-eval-${profile.name}`),
    against: against === undefined ? (profile.name === 'quick' ? FULL_SUMMARY : null) : against,
  };
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
    if (process.stderr.isTTY) process.stderr.write(`\r${line.padEnd(110)}`);
    else if (Math.floor(frac * 20) !== this.lastLine) { this.lastLine = Math.floor(frac * 20); process.stderr.write(`${line}\n`); }
  }
  end(): void { if (process.stderr.isTTY) process.stderr.write('\n'); }
}

const key = (env: string, learner: string) => `${env}/${learner}`;
const label = (a: string) => LABEL[a as AllocatorName] ?? a;
const pick = (bySeed: BySeed, names: readonly string[]): Record<string, readonly number[]> => Object.fromEntries(names.map((n) => [n, bySeed[n]]));
/** The rows that compete at equal budget (the direction's rows). */
const equalBudget = (bySeed: BySeed) => Object.keys(bySeed).filter((a) => !MORE_BUDGET.includes(a as AllocatorName));

/**
 * How often would a smaller run reproduce this run's direction? Disjoint blocks of this run's
 * seeds (20–50), each checked against the whole run like a quick run.
 */
function stabilitySection(bySeed: Record<string, BySeed>, seeds: number): string[] {
  const sizes = [...new Set([20, 25, 30, PROFILES.quick.seeds, 50])].sort((a, b) => a - b).filter((k) => 2 * k <= seeds);
  if (sizes.length === 0) return [];
  const out = ['## Direction stability (disjoint blocks of this run\'s seeds, each checked against the whole run)', '',
    'Blocks in seed order, each with its direction-check status against the whole run (P = PASS, I = INCONCLUSIVE, F = FAIL); gaps are to the whole run\'s leader, points of success, paired 95% t-intervals.', ''];
  const rows: string[][] = [];
  const pts = (g: Interval) => `${(100 * g.mean).toFixed(1)} [${(100 * g.lo).toFixed(1)}, ${(100 * g.hi).toFixed(1)}]`;
  for (const k of sizes) {
    for (const [which, all] of Object.entries(bySeed)) {
      const rowsHere = equalBudget(all);
      const blocks = blockChecks(pick(all, rowsHere), k, WATCHED.filter((w) => rowsHere.includes(w)), label);
      const why = blocks.filter((b) => b.check.status !== 'PASS').map((b) => `${b.from}–${b.to}: ${[
        ...b.check.failures.filter((f) => !b.check.mismatches.some((m) => f.startsWith(label(m.allocator)))),
        ...b.check.mismatches.map((m) => `${label(m.allocator)} ${m.full} (whole run, gap ${pts(m.gapFull)}) vs ${m.quick} (block, gap ${pts(m.gapQuick)})${m.compatible ? '' : ', disjoint'}`),
      ].join('; ')}`);
      rows.push([`${k}`, which, blocks.map((b) => b.check.status[0]).join(' '), `${blocks.filter((b) => b.check.status === 'PASS').length}/${blocks.length}`, why.join(' · ') || '—']);
    }
  }
  out.push(markdownTable(['seeds per block', 'environment / learner', 'blocks', 'PASS', 'why not PASS'], rows), '');
  return out;
}

/**
 * The direction check: this run against a full run's summary.json, per (environment, learner)
 * both have, on the allocators both have (a quick run trains fewer rows and one learner).
 */
function directionCheck(file: string, mine: Record<string, BySeed>, seeds: number): { lines: string[]; status: CheckStatus | 'SKIPPED'; perKey: Record<string, DirectionCheck> } {
  const head = `Direction check: this run (${seeds} seeds) against the full run in ${file}`;
  if (!existsSync(file)) return { lines: [head, `  SKIPPED: ${file} does not exist (run \`npm run eval -- --out eval/results\` first)`], status: 'SKIPPED', perKey: {} };
  const full = JSON.parse(readFileSync(file, 'utf8')) as { harness?: string; profile?: Profile; finalSuccessBySeed?: Record<string, Record<string, BySeed>> };
  if (full.harness !== HARNESS || !full.finalSuccessBySeed) return { lines: [head, `  SKIPPED: ${file} was written by an earlier harness (its rows and budgets differ; rerun \`npm run eval -- --out eval/results\`)`], status: 'SKIPPED', perKey: {} };
  const lines = [`Direction check: this run (${seeds} seeds) against the full run in ${file} (${full.profile?.seeds ?? '?'} seeds), on the allocators both runs have`,
    '  leading group = the leader (highest mean final success) + every allocator whose paired 95% t-interval of (leader − allocator) over seeds contains 0',
    '  PASS = quick leader in the full leading group, full leader in the quick leading group, and TRACE (the default rule, learned; those both runs have) inside/outside it in both;',
    '  INCONCLUSIVE = leaders agree, a TRACE verdict differs, but the two runs\' 95% intervals of its gap to the full leader overlap; FAIL = otherwise'];
  const perKey: Record<string, DirectionCheck> = {};
  for (const [which, bySeed] of Object.entries(mine)) {
    const [env, learner] = which.split('/');
    const theirs = full.finalSuccessBySeed[env]?.[learner];
    if (!theirs) { lines.push(`  ${which.padEnd(18)} SKIPPED: not in the full run`); continue; }
    const c = checkCommon(bySeed, theirs, WATCHED, label, MORE_BUDGET);
    perKey[which] = c;
    lines.push(`  ${which.padEnd(18)} ${c.status}: ${c.details.join('; ')}`);
    for (const f of c.failures) lines.push(`                     ✗ ${f}`);
    for (const u of c.unresolved) lines.push(`                     ? ${u}`);
    if (c.otherDifferences.length > 0) lines.push(`                     (not checked: ${c.otherDifferences.join('; ')})`);
  }
  const checks = Object.values(perKey);
  const status = overallStatus(checks);
  const count = (s: CheckStatus) => checks.filter((c) => c.status === s).length;
  lines.push(`Direction check: ${status} (${count('PASS')} PASS, ${count('INCONCLUSIVE')} INCONCLUSIVE, ${count('FAIL')} FAIL of ${checks.length} environment/learner pairs)`);
  return { lines, status, perKey };
}

/** One (environment, learner) block of summary.md. */
function section(env: EnvName, learner: Learner, rows: Summary[], bySeed: BySeed, dir: Direction, results: Record<string, TrainResult[]>, profile: Profile): string[] {
  const gap = (a: string) => `${label(a)} (${fmt(dir.gaps[a], 1, 100, -1, 1)})`;
  const task = TASKS[env][learner];
  const out = [`### ${env}, ${learner}`, '',
    `${task.steps} training steps × ${task.budgetPerStep} environment steps over ${task.prompts} trees (learning rate ${task.learningRate}); TRACE and knapsack: ${task.round.perTree} rollouts per tree per round${task.round.global ? ` in one global budget (\`totalBudget\` ${task.round.perTree * task.prompts}, \`minPerTree\` 1)` : ' (`budget` per tree)'}.`, '',
    resultsTable(rows), '',
    `Direction (leader − allocator at equal budget, paired 95% t-interval over seeds, points of success): leader **${label(dir.leader)}**; leading group (not separable from the leader): ${dir.leadingGroup.length > 1 ? dir.leadingGroup.slice(1).map(gap).join(', ') : 'none besides the leader'}; separably behind: ${dir.behind.length > 0 ? dir.behind.map(gap).join(', ') : 'none'}.`, ''];
  const gaps = traceGapTable(bySeed);
  if (gaps) out.push('Paired differences in final success (points, 95% t-interval over seeds; * = separable from 0):', '', gaps, '');
  const ce = computeEquivalence(bySeed);
  if (ce) out.push(equivalenceLine(ce), '');
  const first = results.independent ?? Object.values(results)[0];
  out.push(`Untrained policy (the curves' first point, ${profile.evaluation.evalEpisodes} episodes per seed): ${untrained(first)}.`, '');
  if (results['trace-learned']) out.push(`Learned α, τ in use at the last training step (geometric mean over seeds; seeds below the start α = 1, τ = 0.5): ${learnedParams(results['trace-learned'])}.`, '');
  return out;
}

function main(): void {
  const { profile, out, envs, learners, against } = parseArgs(process.argv.slice(2));
  mkdirSync(out, { recursive: true });
  const seeds = Array.from({ length: profile.seeds }, (_, i) => profile.firstSeed + i);
  const progress = new Progress(envs.length * learners.length * profile.rows.length * seeds.length);
  const load = [loadavg()[0]];
  const t0 = performance.now();
  let done = 0;
  const summaries: Record<string, Record<string, Summary[]>> = {};
  const finalSuccessBySeed: Record<string, Record<string, Record<string, number[]>>> = {};
  const directions: Record<string, Direction> = {};
  const seconds: Record<string, Record<string, Record<string, number>>> = {};
  const sections: string[] = [];
  const alphaSeries: Series[] = [], tauSeries: Series[] = [];
  for (const env of envs) {
    const envJson: Record<string, unknown> = {};
    summaries[env] = {}; finalSuccessBySeed[env] = {}; seconds[env] = {};
    sections.push(`## ${env}`, '');
    for (const learner of learners) {
      const results: Record<string, TrainResult[]> = {};
      const time: Record<string, number> = {};
      for (const allocator of profile.rows) {
        const started = performance.now();
        results[allocator] = seeds.map((seed) => {
          progress.tick(done++, `${env}/${learner}/${allocator} seed ${seed}`);
          const config = trainConfig(env, learner, allocator, seed, profile.evaluation, { merge: profile.merge });
          const r = train(config);
          if (r.budgetUsed !== config.steps * config.budgetPerStep) throw new Error(`${env}/${learner}/${allocator} seed ${seed}: spent ${r.budgetUsed} of ${config.steps * config.budgetPerStep} budget steps`);
          return r;
        });
        time[allocator] = (performance.now() - started) / 1000;
      }
      seconds[env][learner] = time;
      const rows = profile.rows.map((a) => summarize(a, results[a]));
      const bySeed = Object.fromEntries(profile.rows.map((a) => [a, results[a].map((r) => r.finalSuccess)]));
      summaries[env][learner] = rows;
      finalSuccessBySeed[env][learner] = bySeed;
      const dir = direction(pick(bySeed, equalBudget(bySeed)));
      directions[key(env, learner)] = dir;
      sections.push(...section(env, learner, rows, bySeed, dir, results, profile));
      envJson[learner] = { task: TASKS[env][learner], summary: rows, runs: Object.fromEntries(profile.rows.map((a) => [a, results[a].map(compactRun)])) };
      const main = CURVE_ROWS.filter((a) => profile.rows.includes(a));
      writeFileSync(join(out, `curve-${env}-${learner}.svg`), lineChart({
        width: 980, height: 480,
        title: `${env}, ${learner}: success of the policy vs. budget spent (${seeds.length} seeds, 95% band)`,
        xLabel: 'environment steps of rollout budget', yLabel: 'success rate (sampled episodes)',
        series: main.map((a) => curveSeries(LABEL[a], results[a].map((r) => r.curve))),
      }));
      if (results['trace-learned']) {
        alphaSeries.push(trajectory(`${env}, ${learner}`, results['trace-learned'].map((r) => r.alpha)));
        tauSeries.push(trajectory(`${env}, ${learner}`, results['trace-learned'].map((r) => r.tau)));
      }
    }
    writeFileSync(join(out, `${env}.json`), `${JSON.stringify({ harness: HARNESS, env, profile, learners: envJson })}\n`);
  }
  progress.end();
  load.push(loadavg()[0]);
  const wall = (performance.now() - t0) / 1000;

  const categories = envs.flatMap((e) => learners.map((l) => `${e} ${l}`));
  const chartRows = BAR_ROWS.filter((a) => profile.rows.includes(a));
  writeFileSync(join(out, 'success.svg'), barChart({
    width: Math.max(980, 70 * categories.length), height: 480,
    title: 'Success of the trained policy after the fixed budget (95% interval)',
    yLabel: 'success rate', categories,
    groups: chartRows.map((a) => {
      const cells = envs.flatMap((e) => learners.map((l) => summaries[e][l].find((s) => s.allocator === a)!.finalSuccess));
      return { name: LABEL[a], values: cells.map((c) => c.mean), errors: cells.map((c) => [Math.max(0, c.lo), Math.min(1, c.hi)] as [number, number]) };
    }),
  }));
  if (alphaSeries.length > 0) {
    writeFileSync(join(out, 'alpha.svg'), lineChart({ width: 900, height: 460, title: 'TRACE (default rule), learned α per training step (mean over seeds, 95% band)', xLabel: 'training step', yLabel: 'α', logY: true, series: alphaSeries }));
    writeFileSync(join(out, 'tau.svg'), lineChart({ width: 900, height: 460, title: 'TRACE (default rule), learned τ per training step (mean over seeds, 95% band)', xLabel: 'training step', yLabel: 'τ', logY: true, series: tauSeries }));
  }

  const bySeedFlat = Object.fromEntries(envs.flatMap((e) => learners.map((l) => [key(e, l), finalSuccessBySeed[e][l]])));
  const check = against === null ? null : directionCheck(against, bySeedFlat, seeds.length);
  const command = profile.name === 'quick' ? 'npm run eval:quick' : profile.name === 'robustness' ? 'npm run eval -- --trie' : 'npm run eval';
  const md: string[] = [`# Evaluation results (${profile.name} profile)`, '',
    `Generated by \`${command}\`: seeds ${seeds[0]}–${seeds[seeds.length - 1]}, learners ${learners.join(', ')}, ${profile.merge ? 'trie trees (identical actions share a child)' : 'plain trees (every step adds a node)'}. Cells: mean [95% t-interval over seeds, clipped to the metric's range]; gaps in points of final success, paired by seed, * = separable from 0.`, '',
    markdownTable(['environment', 'learner', 'trees', 'budget / step', 'training steps', 'learning rate', 'TRACE / knapsack round'],
      envs.flatMap((e) => learners.map((l) => { const t = TASKS[e][l]; return [e, l, t.prompts, t.budgetPerStep, t.steps, t.learningRate, t.round.global ? `${t.round.perTree * t.prompts} in one global budget` : `${t.round.perTree} per tree`]; }))), ''];
  if (profile.rows.includes('trace')) {
    md.push(`## TRACE ${DEFAULT_RULE} (the default rule) across environments`, '');
    for (const l of learners) md.push(`### ${l}`, '', acrossTable(envs.map((e) => ({ env: e, bySeed: finalSuccessBySeed[e][l] }))), '');
  }
  md.push(...sections);
  if (profile.name === 'full') md.push(...stabilitySection(bySeedFlat, seeds.length));
  if (check) md.push('## Direction check', '', '```', ...check.lines, '```', '');
  md.push('## Wall time', '', markdownTable(['environment', 'learner', 'seconds', 'slowest rows (seconds)'], envs.flatMap((e) => learners.map((l) => {
    const t = seconds[e][l];
    const total = Object.values(t).reduce((a, b) => a + b, 0);
    return [e, l, total.toFixed(1), Object.entries(t).sort((a, b) => b[1] - a[1]).slice(0, 3).map(([a, s]) => `${a} ${s.toFixed(1)}`).join(', ')];
  }))), '', `Total ${wall.toFixed(1)} s on this machine (1-minute load average ${load[0].toFixed(1)} at the start, ${load[1].toFixed(1)} at the end).`, '');
  writeFileSync(join(out, 'summary.md'), `${md.join('\n')}\n`);
  writeFileSync(join(out, 'summary.json'), `${JSON.stringify({
    harness: HARNESS, profile, tasks: Object.fromEntries(envs.map((e) => [e, Object.fromEntries(learners.map((l) => [l, TASKS[e][l]]))])),
    directions: Object.fromEntries(Object.entries(directions).map(([k, d]) => [k, { ...d, bySeed: undefined }])), finalSuccessBySeed,
    computeEquivalence: Object.fromEntries(Object.entries(bySeedFlat).map(([k, b]) => [k, computeEquivalence(b)])),
    directionCheck: check && { against, status: check.status, perKey: check.perKey }, seconds, wall, load, summaries,
  }, null, 1)}\n`);
  process.stderr.write(`done in ${wall.toFixed(1)} s; leader per environment/learner: ${JSON.stringify(Object.fromEntries(Object.entries(directions).map(([k, d]) => [k, d.leader])))}; results in ${out}/\n`);
  if (check) process.stdout.write(`${check.lines.join('\n')}\n`);
}

main();
