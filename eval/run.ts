// The simulated evaluation (issue 5): every allocator on every environment at equal budget.
// `npx tsx eval/run.ts [--quick] [--seeds N] [--out DIR] [--env a,b] [--against FILE]` writes JSON
// results, SVG charts and a Markdown table into eval/results/ (quick: eval/results/quick/).
// Progress goes to stderr. A quick run ends with a direction check against the committed full
// run (`--against`, default eval/results/summary.json), printed to stdout; the exit code is 0
// whether it passes or not.
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { barChart, lineChart, markdownTable, type Series } from '../report/svg.js';
import { ALLOCATORS, type AllocatorName } from './allocators/index.js';
import { blockChecks, checkDirection, direction, overallStatus, pairedGap, type CheckStatus, type Direction, type DirectionCheck } from './direction.js';
import { ENVS, type EnvName } from './envs/index.js';
import { STEPS } from './settings.js';
import { meanCi, type Interval } from './stats.js';
import { train, type TrainConfig, type TrainResult } from './train.js';

interface Profile { name: 'quick' | 'full'; seeds: number; budgetPerStep: number; prompts: number; evalEvery: number; evalEpisodes: number; finalEpisodes: number }

/**
 * Seeds 1…N (the quick run's seeds are the full run's first 40; the TRACE sweep's tuning seeds
 * 101–105 are in neither). Quick: 40 seeds — in the full run, disjoint blocks of 25–50 seeds all
 * reproduced the leaders and blocks of 20 did not always (the full summary's stability table);
 * about a minute on a shared 2-core box. Full: 100 seeds, about two minutes there.
 * Training is identical at equal seeds; the profiles differ only in evaluation episodes.
 */
const PROFILES: Record<'quick' | 'full', Profile> = {
  quick: { name: 'quick', seeds: 40, budgetPerStep: 512, prompts: 4, evalEvery: 5, evalEpisodes: 100, finalEpisodes: 400 },
  full: { name: 'full', seeds: 100, budgetPerStep: 512, prompts: 4, evalEvery: 5, evalEpisodes: 200, finalEpisodes: 1000 },
};
const POLICY_LR = 1;
/**
 * TRACE rollouts per tree per allocation round, chosen per variant on tuning seeds 101–105 by
 * the summed final success over the three environments (`npx tsx eval/sweep.ts`, results/sweep.md).
 * The closed-chains variant scored best with 1, but with one rollout per tree per round it never
 * forms a contested fork (it degenerates into independent chains, which `independent` measures
 * directly), so it runs with the next best, 2.
 */
const TRACE_ROLLOUTS_PER_TREE: Partial<Record<AllocatorName, number>> = { trace: 4, 'trace-learned': 4, 'trace-v1': 4, 'trace-v1-learned': 4, 'trace-closed': 2, 'trace-closed-learned': 2 };
/**
 * What the run trains with: every allocator but v1's closed-chains variants (a v1 proposal that
 * led to v2; `createAllocator` still builds them for the tests and sweeps).
 */
const RUN: readonly AllocatorName[] = ALLOCATORS.filter((a) => a !== 'trace-closed' && a !== 'trace-closed-learned');

const LABEL: Record<AllocatorName, string> = {
  trace: 'TRACE v2 (α=1, τ=0.5)',
  'trace-learned': 'TRACE v2 (learned α, τ)',
  'trace-v1': 'TRACE v1 (α=1, τ=0.5)',
  'trace-v1-learned': 'TRACE v1 (learned α, τ)',
  'trace-closed': 'TRACE v1, closed chains',
  'trace-closed-learned': 'TRACE v1, closed chains, learned α, τ',
  independent: 'Independent chains (GRPO, no tree)',
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
  meanSuccess: Interval;
  stepsPerRollout: Interval;
  deadEndShare: Interval | null;
  budgetPerRun: number;
}

/** TRACE v2 (default and learned α, τ): the direction check requires the same inside/outside verdict for these. */
const SPEC_TRACE: readonly AllocatorName[] = ['trace', 'trace-learned'];
const FULL_SUMMARY = 'eval/results/summary.json';

function parseArgs(argv: string[]): { profile: Profile; out: string; only: EnvName[]; against: string | null } {
  let profile = PROFILES.full, out: string | undefined, only: EnvName[] = [...ENVS], seeds: number | undefined, against: string | null | undefined;
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--quick') profile = PROFILES.quick;
    else if (a === '--out') out = argv[++i];
    else if (a === '--env') only = argv[++i].split(',') as EnvName[];
    else if (a === '--seeds') seeds = Number(argv[++i]);
    else if (a === '--against') against = argv[++i];
    else if (a === '--no-check') against = null;
    else throw new Error(`unknown argument ${a} (use --quick, --seeds N, --out DIR, --env ${ENVS.join(',')}, --against FILE, --no-check)`);
  }
  for (const e of only) if (!ENVS.includes(e)) throw new Error(`unknown environment ${e}`);
  if (seeds !== undefined) {
    if (!Number.isInteger(seeds) || seeds < 2) throw new Error('--seeds needs an integer ≥ 2');
    profile = { ...profile, seeds };
  }
  // Results go to a temporary folder unless --out names one: re-running never rewrites the
  // committed files by accident (their timing columns would change). The quick profile checks
  // itself against the committed full run.
  const isQuick = profile.name === 'quick';
  return { profile, out: out ?? join(tmpdir(), `trace-alloc-eval-${profile.name}`), only, against: against === undefined ? (isQuick ? FULL_SUMMARY : null) : against };
}

/**
 * How often would a smaller run reproduce this run's direction? Disjoint blocks of this run's
 * seeds (20–50 seeds, the quick profile's size among them), each checked against the whole run like a quick run.
 * The blocks reuse this run's evaluation episodes (the quick profile samples fewer).
 */
function stabilitySection(bySeed: Record<string, Record<string, number[]>>, seeds: number): string[] {
  const sizes = [...new Set([20, 25, 30, PROFILES.quick.seeds, 50])].sort((a, b) => a - b).filter((k) => 2 * k <= seeds);
  if (sizes.length === 0) return [];
  const out = ['## Direction stability (disjoint blocks of this run\'s seeds, each checked against the whole run)', '',
    'Blocks in seed order, each with its direction-check status against the whole run (P = PASS, I = INCONCLUSIVE, F = FAIL); gaps are to the whole run\'s leader, points of success, paired 95% t-intervals.', ''];
  const rows: string[][] = [];
  for (const k of sizes) {
    for (const env of Object.keys(bySeed)) {
      const blocks = blockChecks(bySeed[env], k, SPEC_TRACE, (a) => LABEL[a as AllocatorName] ?? a);
      const pts = (g: Interval) => `${(100 * g.mean).toFixed(1)} [${(100 * g.lo).toFixed(1)}, ${(100 * g.hi).toFixed(1)}]`;
      const why = blocks.filter((b) => b.check.status !== 'PASS').map((b) => `${b.from}–${b.to}: ${[
        ...b.check.failures.filter((f) => !b.check.mismatches.some((m) => f.startsWith(LABEL[m.allocator as AllocatorName]))),
        ...b.check.mismatches.map((m) => `${LABEL[m.allocator as AllocatorName]} ${m.full} (whole run, gap ${pts(m.gapFull)}) vs ${m.quick} (block, gap ${pts(m.gapQuick)})${m.compatible ? '' : ', disjoint'}`),
      ].join('; ')}`);
      rows.push([`${k}`, env, blocks.map((b) => b.check.status[0]).join(' '), `${blocks.filter((b) => b.check.status === 'PASS').length}/${blocks.length}`, why.join(' · ') || '—']);
    }
  }
  out.push(markdownTable(['seeds per block', 'environment', 'blocks', 'PASS', 'why not PASS'], rows), '');
  return out;
}

/**
 * The direction check: this run against a full run's summary.json (its per-seed final success is
 * re-analysed with the same rule). Returns the printable lines and the overall status.
 */
function directionCheck(file: string, mine: Record<string, Direction>, seeds: number): { lines: string[]; status: CheckStatus | 'SKIPPED'; perEnv: Record<string, DirectionCheck> } {
  const head = `Direction check: this run (${seeds} seeds) against the full run in ${file}`;
  if (!existsSync(file)) return { lines: [head, `  SKIPPED: ${file} does not exist (run \`npm run eval\` first)`], status: 'SKIPPED', perEnv: {} };
  const full = JSON.parse(readFileSync(file, 'utf8')) as { profile?: Profile; finalSuccessBySeed?: Record<string, Record<string, number[]>> };
  if (!full.finalSuccessBySeed) return { lines: [head, `  SKIPPED: ${file} has no per-seed final success (written by an older eval/run.ts; rerun \`npm run eval\`)`], status: 'SKIPPED', perEnv: {} };
  const lines = [`Direction check: this run (${seeds} seeds) against the full run in ${file} (${full.profile?.seeds ?? '?'} seeds)`,
    '  leading group = the leader (highest mean final success) + every allocator whose paired 95% t-interval of (leader − allocator) over seeds contains 0',
    '  PASS = quick leader in the full leading group, full leader in the quick leading group, and TRACE v2 (default, learned) inside/outside it in both;',
    '  INCONCLUSIVE = leaders agree, a TRACE v2 verdict differs, but the two runs\' 95% intervals of its gap to the full leader overlap; FAIL = otherwise'];
  const perEnv: Record<string, DirectionCheck> = {};
  for (const env of Object.keys(mine)) {
    const bySeed = full.finalSuccessBySeed[env];
    if (!bySeed) { lines.push(`  ${env.padEnd(11)} SKIPPED: not in the full run`); continue; }
    const c = checkDirection(mine[env], direction(bySeed), SPEC_TRACE, (a) => LABEL[a as AllocatorName] ?? a);
    perEnv[env] = c;
    lines.push(`  ${env.padEnd(11)} ${c.status}: ${c.details.join('; ')}`);
    for (const f of c.failures) lines.push(`              ✗ ${f}`);
    for (const u of c.unresolved) lines.push(`              ? ${u}`);
    if (c.otherDifferences.length > 0) lines.push(`              (not checked: ${c.otherDifferences.join('; ')})`);
  }
  const checks = Object.values(perEnv);
  const status = overallStatus(checks);
  const count = (s: CheckStatus) => checks.filter((c) => c.status === s).length;
  lines.push(`Direction check: ${status} (${count('PASS')} PASS, ${count('INCONCLUSIVE')} INCONCLUSIVE, ${count('FAIL')} FAIL of ${checks.length} environments)`);
  return { lines, status, perEnv };
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
    meanSuccess: meanCi(runs.map((r) => r.meanSuccess)),
    stepsPerRollout: meanCi(runs.map((r) => r.stepsPerRollout)),
    deadEndShare: runs[0].deadEndShare === null ? null : meanCi(runs.map((r) => r.deadEndShare ?? 0)),
    budgetPerRun: budget,
  };
}

/** mean [lo, hi]; the t-interval is clipped to the metric's range [min, max] (it is symmetric, the metrics are not). */
const fmt = (x: Interval, digits: number, scale = 1, min = 0, max = Infinity) =>
  `${(x.mean * scale).toFixed(digits)} [${(Math.max(min, x.lo) * scale).toFixed(digits)}, ${(Math.min(max, x.hi) * scale).toFixed(digits)}]`;

function table(rows: Summary[], seeds: number): string {
  return markdownTable(
    ['allocator', 'success after budget, %', 'mean success during training, %', 'steps to first reward', 'found', 'mixed sibling groups, %', 'dead-branch steps, %', 'zero-reward steps, %', 'steps / rollout', 'allocator ms / step'],
    rows.map((s) => [s.label, fmt(s.finalSuccess, 1, 100, 0, 1), fmt(s.meanSuccess, 1, 100, 0, 1), fmt(s.firstReward, 0, 1, 0, s.budgetPerRun), `${s.firstRewardFound}/${seeds}`, fmt(s.mixedFraction, 1, 100, 0, 1), fmt(s.deadFraction, 1, 100, 0, 1), fmt(s.zeroFraction, 1, 100, 0, 1), fmt(s.stepsPerRollout, 1), fmt(s.allocatorMs, 2)]),
  );
}

const PAIR_ROWS: readonly AllocatorName[] = ['trace', 'trace-learned', 'trace-v1'];
const PAIR_COLS: readonly AllocatorName[] = ['trace', 'trace-learned', 'trace-v1', 'independent', 'uniform', 'entropy', 'puct', 'spo-tree', 'treepo'];
const SHORT: Record<AllocatorName, string> = {
  trace: 'v2', 'trace-learned': 'v2 learned', 'trace-v1': 'v1', 'trace-v1-learned': 'v1 learned', 'trace-closed': 'v1 closed chains', 'trace-closed-learned': 'v1 closed, learned',
  independent: 'independent', uniform: 'uniform', entropy: 'entropy', puct: 'PUCT', 'spo-tree': 'SPO-tree', treepo: 'TreePO',
};

/** Row − column paired by seed, for the TRACE variants against every other allocator. */
function pairTable(bySeed: Record<string, number[]>): string {
  return markdownTable(['row − column', ...PAIR_COLS.map((c) => SHORT[c])], PAIR_ROWS.map((r) => [SHORT[r], ...PAIR_COLS.map((c) => {
    if (c === r) return '—';
    const g = pairedGap(bySeed[r], bySeed[c]);
    return `${fmt(g, 1, 100, -1, 1)}${g.lo > 0 || g.hi < 0 ? ' *' : ''}`;
  })]));
}

function untrained(runs: TrainResult[]): string {
  const x = runs.map((r) => r.curve[0][1]);
  return `${(100 * meanCi(x).mean).toFixed(1)}% success (${(100 * Math.min(...x)).toFixed(1)}–${(100 * Math.max(...x)).toFixed(1)}% by seed)`;
}

function learnedParams(results: Record<string, TrainResult[]>): string {
  const geo = (v: number[]) => Math.exp(v.reduce((a, x) => a + Math.log(x), 0) / v.length);
  return (['trace-learned', 'trace-v1-learned'] as const).map((a) => {
    const al = results[a].map((r) => r.alpha[r.alpha.length - 1]), ta = results[a].map((r) => r.tau[r.tau.length - 1]);
    const below = (v: number[], start: number) => `${v.filter((x) => x < start).length}/${v.length}`;
    return `${SHORT[a]}: α ${geo(al).toFixed(2)} (${below(al, 1)} below 1), τ ${geo(ta).toFixed(2)} (${below(ta, 0.5)} below 0.5)`;
  }).join('; ');
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
  const { profile, out, only, against } = parseArgs(process.argv.slice(2));
  mkdirSync(out, { recursive: true });
  const total = only.length * RUN.length * profile.seeds;
  const progress = new Progress(total);
  const t0 = performance.now();
  let done = 0;
  const summaries: Record<string, Summary[]> = {};
  const winners: Record<string, string> = {};
  const leading: Record<string, string[]> = {};
  const directions: Record<string, Direction> = {};
  const finalSuccessBySeed: Record<string, Record<string, number[]>> = {};
  const alphaSeries: Series[] = [], tauSeries: Series[] = [];
  const md: string[] = [`# Evaluation results (${profile.name} profile)`, '', `Generated by \`npm run ${profile.name === 'quick' ? 'eval:quick' : 'eval'}\`. ${profile.seeds} seeds; each training step spends ${profile.budgetPerStep} environment steps over ${profile.prompts} trees; training steps: ${only.map((e) => `${e} ${STEPS[e]}`).join(', ')}. Cells: mean [95% t-interval over seeds, clipped to the metric's range].`, ''];
  for (const env of only) {
    const results: Record<string, TrainResult[]> = {};
    for (const allocator of RUN) {
      results[allocator] = [];
      for (let s = 1; s <= profile.seeds; s++) {
        progress.tick(done, `${env}/${allocator} seed ${s}`);
        const config: TrainConfig = {
          env, allocator, seed: s, steps: STEPS[env], budgetPerStep: profile.budgetPerStep, prompts: profile.prompts,
          learningRate: POLICY_LR, evalEvery: profile.evalEvery, evalEpisodes: profile.evalEpisodes, finalEpisodes: profile.finalEpisodes,
          traceRolloutsPerTree: TRACE_ROLLOUTS_PER_TREE[allocator] ?? 0,
        };
        const r = train(config);
        if (r.budgetUsed !== STEPS[env] * profile.budgetPerStep) throw new Error(`${env}/${allocator} seed ${s}: spent ${r.budgetUsed} of ${STEPS[env] * profile.budgetPerStep} budget steps`);
        results[allocator].push(r);
        done++;
      }
    }
    const rows = RUN.map((a) => summarize(a, results[a]));
    summaries[env] = rows;
    finalSuccessBySeed[env] = Object.fromEntries(RUN.map((a) => [a, results[a].map((r) => r.finalSuccess)]));
    const dir = direction(finalSuccessBySeed[env]);
    directions[env] = dir;
    winners[env] = dir.leader;
    leading[env] = dir.leadingGroup;
    const gap = (a: string) => `${LABEL[a as AllocatorName]} (${fmt(dir.gaps[a], 1, 100, -1, 1)})`;
    const traceRows = rows.filter((r) => r.deadEndShare !== null).map((r) => `${r.label}: ${fmt(r.deadEndShare as Interval, 1, 100, 0, 1)}%`);
    writeFileSync(join(out, `${env}.json`), `${JSON.stringify({ env, profile, summary: rows, runs: results }, null, 1)}\n`);
    writeFileSync(join(out, `curve-${env}.svg`), lineChart({
      width: 980, height: 480,
      title: `${env}: success rate of the policy vs. budget spent (${profile.seeds} seeds, 95% band)`,
      xLabel: 'environment steps of rollout budget', yLabel: 'success rate (sampled episodes)',
      series: RUN.map((a) => curveSeries(LABEL[a], results[a].map((r) => r.curve))),
    }));
    for (const a of ['trace-learned', 'trace-v1-learned'] as const) {
      const name = `${env}, ${a === 'trace-learned' ? 'TRACE v2' : 'TRACE v1'}`;
      alphaSeries.push(trajectory(name, results[a].map((r) => r.alpha)));
      tauSeries.push(trajectory(name, results[a].map((r) => r.tau)));
    }
    md.push(`## ${env}`, '', table(rows, profile.seeds), '', `Direction (leader − allocator, paired 95% t-interval over seeds, points of success): leader **${LABEL[dir.leader as AllocatorName]}**; leading group (not separable from the leader): ${dir.leadingGroup.length > 1 ? dir.leadingGroup.slice(1).map(gap).join(', ') : 'none besides the leader'}; separably behind: ${dir.behind.length > 0 ? dir.behind.map(gap).join(', ') : 'none'}.`, '',
      `Share of TRACE rollouts started at a node whose children had all finished: ${traceRows.join('; ')}.`, '',
      `Untrained policy (the curves' first point, ${profile.evalEpisodes} episodes per seed): ${untrained(results.uniform)}.`, '',
      `Learned α, τ in use at the last training step (geometric mean over seeds; share of seeds below the start α = 1, τ = 0.5): ${learnedParams(results)}.`, '',
      'Paired differences in final success between TRACE variants and the others (row − column, points, 95% t-interval over seeds; * = separable from 0):', '',
      pairTable(finalSuccessBySeed[env]), '');
  }
  progress.end();
  const seconds = (performance.now() - t0) / 1000;
  writeFileSync(join(out, 'alpha.svg'), lineChart({ width: 900, height: 460, title: 'Learned α per training step (mean over seeds, 95% band)', xLabel: 'training step', yLabel: 'α', logY: true, series: alphaSeries }));
  writeFileSync(join(out, 'tau.svg'), lineChart({ width: 900, height: 460, title: 'Learned τ per training step (mean over seeds, 95% band)', xLabel: 'training step', yLabel: 'τ', logY: true, series: tauSeries }));
  writeFileSync(join(out, 'success.svg'), barChart({
    width: 980, height: 480,
    title: 'Success rate of the trained policy after the fixed budget (95% interval)',
    yLabel: 'success rate', categories: only,
    groups: RUN.map((a) => ({
      name: LABEL[a],
      values: only.map((e) => summaries[e].find((s) => s.allocator === a)!.finalSuccess.mean),
      errors: only.map((e) => { const s = summaries[e].find((x) => x.allocator === a)!.finalSuccess; return [Math.max(0, s.lo), Math.min(1, s.hi)] as [number, number]; }),
    })),
  }));
  const check = against === null ? null : directionCheck(against, directions, profile.seeds);
  if (profile.name === 'full') md.push(...stabilitySection(finalSuccessBySeed, profile.seeds));
  if (check) md.push('## Direction check', '', '```', ...check.lines, '```', '');
  md.push(`Wall time: ${seconds.toFixed(1)} s on this machine.`, '');
  writeFileSync(join(out, 'summary.md'), `${md.join('\n')}\n`);
  writeFileSync(join(out, 'summary.json'), `${JSON.stringify({
    profile, steps: STEPS, policyLearningRate: POLICY_LR, traceRolloutsPerTree: TRACE_ROLLOUTS_PER_TREE, winners, leading,
    directions: Object.fromEntries(Object.entries(directions).map(([e, d]) => [e, { ...d, bySeed: undefined }])), finalSuccessBySeed,
    directionCheck: check && { against, status: check.status, perEnv: check.perEnv }, seconds, summaries,
  }, null, 1)}\n`);
  process.stderr.write(`done in ${seconds.toFixed(1)} s; leader per environment: ${JSON.stringify(winners)}; leading group (not separable from the leader at 95%, paired by seed): ${JSON.stringify(leading)}; results in ${out}/\n`);
  if (check) process.stdout.write(`${check.lines.join('\n')}\n`);
}

main();
