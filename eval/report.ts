// Tables and chart series of the evaluation report (summary.md, the SVG charts): pure functions
// of the training results, so `run.ts` only trains, writes and checks.
import { DEFAULT_RULE } from '../src/allocate/rules/index.js';
import { markdownTable, type Series } from '../report/svg.js';
import type { AllocatorName } from './allocators/index.js';
import { pairedGap } from './direction.js';
import { chainsMultiplier, formatEquivalence, needsAtLeast, type Equivalence } from './equivalence.js';
import { LABEL, SHORT, TRACE_ROWS } from './profiles.js';
import { meanCi, type Interval } from './stats.js';
import type { TrainResult } from './train.js';

/** One row of a results table: mean and 95% t-interval over seeds of each metric. */
export interface Summary {
  allocator: AllocatorName;
  label: string;
  budgetPerStep: number;
  finalSuccess: Interval;
  meanSuccess: Interval;
  mixedFraction: Interval;
  stepsPerRollout: Interval;
  rootShare: Interval;
  allocatorMs: Interval;
  /** Runs that found a reward, and the budget spent until the first one (runs without: the whole budget). */
  firstRewardFound: number;
  firstReward: Interval;
  deadEndShare: Interval | null;
}

export function summarize(allocator: AllocatorName, runs: readonly TrainResult[]): Summary {
  const budget = runs[0].config.steps * runs[0].config.budgetPerStep;
  return {
    allocator,
    label: LABEL[allocator],
    budgetPerStep: runs[0].config.budgetPerStep,
    finalSuccess: meanCi(runs.map((r) => r.finalSuccess)),
    meanSuccess: meanCi(runs.map((r) => r.meanSuccess)),
    mixedFraction: meanCi(runs.map((r) => r.mixedFraction)),
    stepsPerRollout: meanCi(runs.map((r) => r.stepsPerRollout)),
    rootShare: meanCi(runs.map((r) => r.rootShare)),
    allocatorMs: meanCi(runs.map((r) => r.allocatorMs)),
    firstRewardFound: runs.filter((r) => r.firstReward !== null).length,
    firstReward: meanCi(runs.map((r) => r.firstReward ?? budget)),
    deadEndShare: runs[0].deadEndShare === null ? null : meanCi(runs.map((r) => r.deadEndShare ?? 0)),
  };
}

/** A training run without its config, numbers rounded: what the per-environment JSON keeps per seed. */
export function compactRun(r: TrainResult): Record<string, unknown> {
  const round = (x: number) => Math.round(x * 1e5) / 1e5;
  return {
    seed: r.config.seed, finalSuccess: r.finalSuccess, meanSuccess: round(r.meanSuccess), mixedFraction: round(r.mixedFraction),
    stepsPerRollout: round(r.stepsPerRollout), rootShare: round(r.rootShare), allocatorMs: round(r.allocatorMs), firstReward: r.firstReward,
    deadEndShare: r.deadEndShare === null ? null : round(r.deadEndShare), curve: r.curve.map(([x, y]) => [x, round(y)]),
    ...(r.alpha.length > 0 && r.config.allocator.endsWith('learned') ? { alpha: r.alpha.map(round), tau: r.tau.map(round) } : {}),
  };
}

/** mean [lo, hi]; the t-interval is clipped to the metric's range [min, max] (it is symmetric, the metrics are not). */
export const fmt = (x: Interval, digits: number, scale = 1, min = 0, max = Infinity) =>
  `${(x.mean * scale).toFixed(digits)} [${(Math.max(min, x.lo) * scale).toFixed(digits)}, ${(Math.min(max, x.hi) * scale).toFixed(digits)}]`;

/** A paired gap in points with its interval and "*" when the interval excludes 0. */
export const gapCell = (g: Interval) => `${fmt(g, 1, 100, -1, 1)}${separable(g) ? ' *' : ''}`;

export const separable = (g: Interval) => g.lo > 0 || g.hi < 0;

export function resultsTable(rows: readonly Summary[]): string {
  return markdownTable(
    ['allocator', 'budget / step', 'success after budget, %', 'mean success during training, %', 'mixed-outcome groups, %', 'steps / rollout', 'rollouts from the prompt, %', 'allocator ms / step'],
    rows.map((s) => [s.label, s.budgetPerStep, fmt(s.finalSuccess, 1, 100, 0, 1), fmt(s.meanSuccess, 1, 100, 0, 1), fmt(s.mixedFraction, 1, 100, 0, 1), fmt(s.stepsPerRollout, 1), fmt(s.rootShare, 1, 100, 0, 1), fmt(s.allocatorMs, 2)]),
  );
}

/** Per-seed final success of one (environment, learner), by allocator. */
export type BySeed = Readonly<Record<string, readonly number[]>>;

/**
 * The TRACE rows' paired gaps in final success (points, 95% t-interval over seeds, * = separable):
 * row − independent chains, row − uniform expansion, row − knapsack, and TRACE's default − row (the
 * ablations' and the earlier rules' distance from the default). Columns the run lacks are left out.
 */
export function traceGapTable(bySeed: BySeed): string | null {
  const rows = TRACE_ROWS.filter((r) => r in bySeed);
  if (rows.length === 0) return null;
  const against = (['independent', 'uniform', 'knapsack'] as const).filter((c) => c in bySeed);
  const vsTrace = 'trace' in bySeed;
  const header = ['TRACE row', ...against.map((c) => `row − ${SHORT[c]}`), ...(vsTrace ? [`${DEFAULT_RULE} − row`] : [])];
  return markdownTable(header, rows.map((r) => [
    LABEL[r],
    ...against.map((c) => gapCell(pairedGap(bySeed[r], bySeed[c]))),
    ...(vsTrace ? [r === 'trace' ? '—' : gapCell(pairedGap(bySeed.trace, bySeed[r]))] : []),
  ]));
}

/** Compute-equivalence of one (environment, learner), when the run has the rows it needs. */
export interface ComputeEquivalence {
  /** Mean final success of TRACE's default rule and of independent chains at 1×, 1.5×, 2× the budget. */
  trace: number;
  chains: Array<[number, number]>;
  equivalence: Equivalence;
  label: string;
  atLeast15: boolean;
  /** TRACE's default rule − chains at 1.5× and 2× the budget, paired by seed. */
  gap15: Interval;
  gap2: Interval;
}

export function computeEquivalence(bySeed: BySeed): ComputeEquivalence | null {
  if (!('trace' in bySeed && 'independent' in bySeed && 'independent-1.5x' in bySeed && 'independent-2x' in bySeed)) return null;
  const mean = (a: string) => meanCi(bySeed[a]).mean;
  const chains: Array<[number, number]> = [[1, mean('independent')], [1.5, mean('independent-1.5x')], [2, mean('independent-2x')]];
  const equivalence = chainsMultiplier(mean('trace'), chains);
  return {
    trace: mean('trace'), chains, equivalence, label: formatEquivalence(equivalence), atLeast15: needsAtLeast(equivalence, 1.5),
    gap15: pairedGap(bySeed.trace, bySeed['independent-1.5x']), gap2: pairedGap(bySeed.trace, bySeed['independent-2x']),
  };
}

export function equivalenceLine(c: ComputeEquivalence): string {
  const pct = (x: number) => (100 * x).toFixed(1);
  return `Compute-equivalence: TRACE ${DEFAULT_RULE} ${pct(c.trace)}%; independent chains ${c.chains.map(([m, y]) => `${m}× ${pct(y)}%`).join(', ')}. ` +
    `Chains match TRACE ${DEFAULT_RULE} at **${c.label}×** the budget (linear interpolation between the chains' means; ${c.atLeast15 ? 'at least' : 'below'} 1.5×). ` +
    `Paired: ${DEFAULT_RULE} − chains at 1.5× ${gapCell(c.gap15)}, at 2× ${gapCell(c.gap2)} points.`;
}

/**
 * TRACE's default rule (v5) across environments for one learner: final success, gaps to
 * independent chains, uniform expansion and knapsack, the ablations' gaps (v5 − no contrast, v5 −
 * outcome disagreement), the earlier rules (v5 − v3, v5 − v4: the default it replaced), and the
 * compute-equivalence multiplier.
 */
export function acrossTable(perEnv: ReadonlyArray<{ env: string; bySeed: BySeed }>): string {
  const gap = (bySeed: BySeed, a: string, b: string) => (a in bySeed && b in bySeed ? gapCell(pairedGap(bySeed[a], bySeed[b])) : '—');
  const d = DEFAULT_RULE;
  return markdownTable(
    ['environment', `${d} success, %`, ...['independent', 'uniform', 'knapsack', 'no contrast', 'outcome', 'v3', 'v4'].map((b) => `${d} − ${b}`), `chains match ${d} at`, '≥ 1.5×'],
    perEnv.map(({ env, bySeed }) => {
      const c = computeEquivalence(bySeed);
      return [env, 'trace' in bySeed ? fmt(meanCi(bySeed.trace), 1, 100, 0, 1) : '—',
        gap(bySeed, 'trace', 'independent'), gap(bySeed, 'trace', 'uniform'), gap(bySeed, 'trace', 'knapsack'),
        gap(bySeed, 'trace', 'trace-nocontrast'), gap(bySeed, 'trace', 'trace-outcome'), gap(bySeed, 'trace', 'trace-v3'), gap(bySeed, 'trace', 'trace-v4'),
        c ? `${c.label}×` : '—', c ? (c.atLeast15 ? 'yes' : 'no') : '—'];
    }),
  );
}

/** Mean curve with a 95% band across seeds; all runs of one allocator share the evaluation points. */
export function curveSeries(name: string, curves: ReadonlyArray<ReadonlyArray<readonly [number, number]>>): Series {
  const points: Array<[number, number]> = [], band: Array<[number, number, number]> = [];
  for (let i = 0; i < curves[0].length; i++) {
    const ci = meanCi(curves.map((c) => c[i][1]));
    const x = curves[0][i][0];
    points.push([x, ci.mean]);
    band.push([x, Math.max(0, ci.lo), Math.min(1, ci.hi)]);
  }
  return { name, points, band };
}

/** A per-training-step trajectory (learned α or τ) with its 95% band. */
export function trajectory(name: string, runs: ReadonlyArray<readonly number[]>): Series {
  const points: Array<[number, number]> = [], band: Array<[number, number, number]> = [];
  for (let i = 0; i < runs[0].length; i++) {
    const ci = meanCi(runs.map((r) => r[i]));
    points.push([i, ci.mean]);
    band.push([i, Math.max(1e-3, ci.lo), ci.hi]);
  }
  return { name, points, band };
}

/** The untrained policy's success: the curves' first point. */
export function untrained(runs: readonly TrainResult[]): string {
  const x = runs.map((r) => r.curve[0][1]);
  return `${(100 * meanCi(x).mean).toFixed(1)}% success (${(100 * Math.min(...x)).toFixed(1)}–${(100 * Math.max(...x)).toFixed(1)}% by seed)`;
}

/** Learned α, τ at the last training step: geometric mean over seeds and how many seeds moved below the start. */
export function learnedParams(runs: readonly TrainResult[]): string {
  const geo = (v: number[]) => Math.exp(v.reduce((a, x) => a + Math.log(x), 0) / v.length);
  const al = runs.map((r) => r.alpha[r.alpha.length - 1]), ta = runs.map((r) => r.tau[r.tau.length - 1]);
  const below = (v: number[], start: number) => `${v.filter((x) => x < start).length}/${v.length}`;
  return `α ${geo(al).toFixed(2)} (${below(al, 1)} below 1), τ ${geo(ta).toFixed(2)} (${below(ta, 0.5)} below 0.5)`;
}
