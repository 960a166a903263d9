import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { allocate, type Allocation } from '../allocate/allocate.js';
import type { AllocateOptions } from '../allocate/options.js';
import type { PackedForest } from '../forest/packed.js';
import { createScorer } from '../backend/select.js';
import type { ScoreParams, Scores } from '../score/types.js';
import { compareStrategies, demoTask, pairedGap, type StrategyRuns } from '../sim/compare.js';
import { independentChains, traceStrategy, uniformExpansion } from '../sim/strategies.js';
import { generateForest } from '../synth/generate.js';
import { depthMeaning } from '../viz/depth.js';
import { writeTreeView } from '../viz/write.js';
import { parseFlags, SCORE_FLAGS, scoreSettings, UsageError } from './flags.js';
import { defineCommand, SCORE_FLAG_HELP } from './help.js';
import { checkOutputPath } from './output.js';

/** Share of the demo's trees whose rollouts all agreed (no contested fork): the trees budget moves away from. */
export const DEMO_SETTLED_RATE = 0.3;
/** Rollouts per tree on average when neither --budget nor --total-budget is given. */
export const DEMO_ROLLOUTS_PER_TREE = 16;
/** Forks listed in the summary. */
export const DEMO_LISTED_FORKS = 5;

export const DEMO_COMMAND = defineCommand({
  name: 'demo',
  operands: '',
  summary: `Generates a seeded synthetic batch (default 4096 trees of 20–200 nodes, forks of 2–8
children, dim 64; 30% of the trees settled, every rollout agreeing), scores it and allocates one
global budget (16 rollouts per tree on average) with the default rule, and prints where the
budget went: across trees, to the prompts, and to the forks that received the most. Writes the
explorable view with the first listed tree shown first. Then trains a small simulated policy
with TRACE, independent chains and uniform expansion at equal environment steps and prints the
measured success of each.`,
  flags: { ...SCORE_FLAGS, trees: 'int', seed: 'int', dim: 'int', 'min-nodes': 'int', 'max-nodes': 'int', view: 'string', 'compare-seeds': 'int' },
  docs: {
    ...SCORE_FLAG_HELP,
    budget: { value: 'N', default: 'off', meaning: 'new rollouts per tree, the same for every tree, instead of the demo\'s global budget' },
    'total-budget': { value: 'N', default: '16 × trees', meaning: 'one budget for the whole forest, split across live trees (the demo\'s default mode)' },
    trees: { value: 'N', default: '4096', meaning: 'synthetic rollout trees to generate' },
    seed: { value: 'S', default: '1', meaning: 'seed of the generator and of the comparison (the same seed gives the same output, timings aside)' },
    dim: { value: 'D', default: '64', meaning: 'embedding dimension of the generated nodes' },
    'min-nodes': { value: 'N', default: '20', meaning: 'fewest nodes of a generated tree' },
    'max-nodes': { value: 'N', default: '200', meaning: 'most nodes of a generated tree' },
    view: { value: 'FILE', default: '$TMPDIR/trace-alloc-demo.html', meaning: 'where to write the explorable view (the first listed fork\'s tree first)' },
    'compare-seeds': { value: 'N', default: '10', meaning: 'seeds of the simulated training comparison (0 skips it)' },
  },
});

/** `trace-alloc demo`: the project's main job on an embedded default workload, then a measured comparison. */
export async function runDemo(argv: readonly string[]): Promise<number> {
  const { values, positionals } = parseFlags(argv, DEMO_COMMAND.flags);
  if (positionals.length > 0) throw new UsageError(`demo takes no file, got ${JSON.stringify(positionals[0])}`);
  const settings = scoreSettings(values);
  for (const line of settings.notices) process.stderr.write(`trace-alloc: ${line}\n`);
  checkOutputPath(values.view as string | undefined, '--view');
  const trees = (values.trees as number | undefined) ?? 4096;
  const seed = (values.seed as number | undefined) ?? 1;
  const dim = (values.dim as number | undefined) ?? 64;
  const minNodes = (values['min-nodes'] as number | undefined) ?? 20;
  const maxNodes = (values['max-nodes'] as number | undefined) ?? 200;
  const compareSeeds = (values['compare-seeds'] as number | undefined) ?? 10;
  if (trees < 1) throw new UsageError(`--trees must be >= 1, got ${trees}`);
  if (dim < 0) throw new UsageError(`--dim must be >= 0, got ${dim}`);
  if (minNodes < 1 || maxNodes < minNodes) throw new UsageError(`need 1 <= --min-nodes <= --max-nodes, got ${minNodes} and ${maxNodes}`);
  if (compareSeeds < 0 || compareSeeds > 1000) throw new UsageError(`--compare-seeds must be in [0, 1000], got ${compareSeeds}`);
  // The demo shows budget moving between trees, so one global budget is its default mode.
  const allocateOptions: AllocateOptions = settings.allocate.budget === undefined && settings.allocate.totalBudget === undefined
    ? { ...settings.allocate, totalBudget: DEMO_ROLLOUTS_PER_TREE * trees }
    : settings.allocate;

  const timings: Array<[string, number]> = [];
  const timed = async <T>(phase: string, work: () => T | Promise<T>): Promise<T> => {
    const start = performance.now();
    const result = await work();
    timings.push([phase, performance.now() - start]);
    return result;
  };

  const forest = await timed('generate + pack', () => generateForest({ trees, dim, seed, minNodes, maxNodes, settledRate: DEMO_SETTLED_RATE }));
  const notices: string[] = [];
  const scorer = await timed('backend setup', () => createScorer({ backend: settings.backend, threads: settings.threads, onNotice: (line, detail) => notices.push(...(settings.verbose && detail !== undefined ? [line, detail] : [line])) }));
  let scores: Scores;
  try {
    scores = await timed(`score (${scorer.backend})`, () => scorer.score(forest, settings.params));
  } finally {
    scorer.destroy();
  }
  const allocation = await timed('allocate', () => allocate(forest, scores, allocateOptions));
  const forks = forksByRollouts(forest, scores.intensity, allocation, DEMO_LISTED_FORKS);
  const out = process.stdout;
  out.write(summarize(forest, scores, allocation, forks, { trees, seed, dim, backend: scores.backend, notices, timings }));
  const initialTree = forks.length > 0 ? forest.nodeTree[forks[0].row] : undefined;
  const view = writeTreeView(forest, scores, allocation, { outFile: (values.view as string | undefined) ?? join(tmpdir(), 'trace-alloc-demo.html'), initialTree });
  const shown = initialTree === undefined ? 'the most contested tree' : 'the first listed fork\'s tree';
  out.write(`\n  view      ${view.path}\n            tree ${forest.treeIds[view.selection.initialTree]} (${shown}) first; open it in a browser, no network needed\n`);
  if (compareSeeds > 0) out.write(compareSection(settings.params, allocateOptions, seed, compareSeeds));
  return 0;
}

/** A fork (a node heading ≥ 2 children) and the rollouts the plan placed at it and below it. */
export interface ForkRollouts {
  /** Packed row of the node that heads the fork. */
  row: number;
  /** Its sibling group. */
  group: number;
  /** Rollouts starting at the fork's node (new siblings). */
  atFork: number;
  /** Rollouts starting anywhere below it. */
  below: number;
}

/**
 * The `count` forks below the root that received the most rollouts (at the fork plus below
 * it), most first, at most one per tree (its first in this order); ties to the more contested
 * fork (higher intensity), then the earlier row. Root forks are left out: a root's own
 * rollouts are the prompt's fresh share, not something the fork drew.
 */
export function forksByRollouts(forest: PackedForest, intensity: ArrayLike<number>, allocation: Allocation, count: number): ForkRollouts[] {
  const under = Float64Array.from(allocation.branches);
  for (let v = forest.nodeCount - 1; v >= 0; v--) if (forest.parentRow[v] >= 0) under[forest.parentRow[v]] += under[v];
  const forks: ForkRollouts[] = [];
  for (let g = 0; g < forest.groupCount; g++) {
    const row = forest.groupParent[g];
    if (forest.parentRow[row] < 0 || forest.groupOffset[g + 1] - forest.groupOffset[g] < 2 || under[row] === 0) continue;
    forks.push({ row, group: g, atFork: allocation.branches[row], below: under[row] - allocation.branches[row] });
  }
  forks.sort((a, b) => b.atFork + b.below - (a.atFork + a.below) || intensity[b.group] - intensity[a.group] || a.row - b.row);
  // Forks nested in one tree share the rollouts below the deepest: one per tree says more.
  const seen = new Set<number>();
  return forks.filter((fork) => {
    const tree = forest.nodeTree[fork.row];
    if (seen.has(tree)) return false;
    seen.add(tree);
    return true;
  }).slice(0, count);
}

interface SummaryContext {
  trees: number;
  seed: number;
  dim: number;
  backend: string;
  notices: string[];
  timings: Array<[string, number]>;
}

const fmt = (x: number) => x.toLocaleString('en-US');
const pct = (part: number, whole: number) => `${((100 * part) / Math.max(1, whole)).toFixed(1)}%`;

function summarize(forest: PackedForest, scores: Scores, allocation: Allocation, forks: ForkRollouts[], ctx: SummaryContext): string {
  const rule = allocation.options.rule;
  const lines: string[] = [];
  lines.push(`trace-alloc demo: one allocation step of rule ${rule} on ${fmt(ctx.trees)} synthetic rollout trees (seed ${ctx.seed}, dim ${ctx.dim}), scored on ${ctx.backend}`);
  for (const notice of ctx.notices) lines.push(`  note: ${notice}`);
  const children = forest.nodeCount - forest.treeCount;
  lines.push(`  workload  ${fmt(forest.nodeCount)} nodes (agent steps), ${fmt(forest.groupCount)} sibling groups; about ${Math.round(100 * DEMO_SETTLED_RATE)}% of the trees are settled`);
  lines.push(`            (every rollout of the prompt agreed: no fork is contested), in the others about 20% of the forks are`);
  lines.push(`            contested (near-identical siblings, different outcomes)`);
  lines.push('', '  phase                 ms');
  let total = 0;
  for (const [phase, ms] of ctx.timings) {
    lines.push(`  ${phase.padEnd(18)} ${ms.toFixed(1).padStart(8)}`);
    total += ms;
  }
  lines.push(`  ${'total'.padEnd(18)} ${total.toFixed(1).padStart(8)}`);

  let budget = 0, placed = 0, unallocated = 0, pruned = 0, starts = 0, depthSum = 0, atRoots = 0;
  for (let t = 0; t < forest.treeCount; t++) {
    budget += allocation.treeBudget[t];
    unallocated += allocation.unallocated[t];
    atRoots += allocation.branches[forest.treeOffset[t]];
  }
  for (let v = 0; v < forest.nodeCount; v++) {
    pruned += allocation.pruned[v];
    if (allocation.branches[v] > 0) { placed += allocation.branches[v]; starts++; depthSum += allocation.depth[v] * allocation.branches[v]; }
  }
  const total_ = allocation.options.totalBudget;
  lines.push('');
  lines.push(total_ !== undefined
    ? `  budget    ${fmt(total_)} rollouts for the whole forest (--total-budget; ${(total_ / forest.treeCount).toFixed(1)} per tree on average): ${fmt(placed)} placed at ${fmt(starts)} nodes, ${fmt(unallocated + allocation.unallocatedTotal)} unallocated`
    : `  budget    ${fmt(budget)} rollouts (--budget, the same for every tree): ${fmt(placed)} placed at ${fmt(starts)} nodes, ${fmt(unallocated)} unallocated`);
  lines.push(...treeBudgetLines(forest, scores, allocation));
  lines.push(`  starts    ${pct(atRoots, placed)} of the rollouts start at a prompt (fresh chains), ${pct(placed - atRoots, placed)} inside a tree`);
  lines.push(`  depth     mean ${(depthSum / Math.max(1, placed)).toFixed(2)} (${depthMeaning(rule).tooltip})`);
  lines.push(`  pruned    ${fmt(pruned)} branches stopped early (${pct(pruned, children)} of children)`);
  lines.push('', `  forks below the root that received the most rollouts, one per tree (I: how contested the fork is, 0 to 1;`);
  lines.push(`  w: its children's weights; rollouts: at the fork + below it, of the tree's budget):`);
  if (forks.length === 0) lines.push('    none: every rollout starts at a prompt');
  for (const fork of forks) {
    const t = forest.nodeTree[fork.row];
    const kids = forest.groupChild.subarray(forest.groupOffset[fork.group], forest.groupOffset[fork.group + 1]);
    const weights = Array.from(kids, (row) => scores.weight[row].toFixed(2)).join(' ');
    lines.push(`    tree ${forest.treeIds[t]} node ${fork.row - forest.treeOffset[t]}: k=${kids.length} I=${scores.intensity[fork.group].toFixed(3)} w=[${weights}] rollouts ${fork.atFork + fork.below} = ${fork.atFork} + ${fork.below} of ${allocation.treeBudget[t]}`);
  }
  return `${lines.join('\n')}\n`;
}

/** How the budget split across trees: trees whose prompt's rollouts disagree at the first fork against those where they agree. */
function treeBudgetLines(forest: PackedForest, scores: Scores, allocation: Allocation): string[] {
  const rootIntensity = new Float64Array(forest.treeCount);
  for (let g = 0; g < forest.groupCount; g++) {
    const row = forest.groupParent[g];
    if (forest.parentRow[row] < 0 && forest.groupOffset[g + 1] - forest.groupOffset[g] >= 2) rootIntensity[forest.nodeTree[row]] = scores.intensity[g];
  }
  const describe = (label: string, keep: (t: number) => boolean) => {
    const got: number[] = [];
    for (let t = 0; t < forest.treeCount; t++) if (keep(t)) got.push(allocation.treeBudget[t]);
    if (got.length === 0) return `            ${label}: none`;
    const mean = got.reduce((s, x) => s + x, 0) / got.length;
    return `            ${label}: ${fmt(got.length)} trees, ${mean.toFixed(1)} rollouts each on average (${Math.min(...got)} to ${Math.max(...got)})`;
  };
  return [
    '  per tree  the first fork\'s rollouts disagree (I > 0) against agree (I = 0, or no fork):',
    describe('disagree', (t) => rootIntensity[t] > 0),
    describe('agree   ', (t) => !(rootIntensity[t] > 0)),
  ];
}

/** The comparison's rows: every strategy's runs, TRACE first. */
export function demoComparison(params: ScoreParams, options: AllocateOptions, seed: number, seeds: number): StrategyRuns[] {
  const list = Array.from({ length: seeds }, (_, i) => seed + i);
  return compareStrategies([traceStrategy(params, options), independentChains, uniformExpansion], list);
}

function compareSection(params: ScoreParams, options: AllocateOptions, seed: number, seeds: number): string {
  const start = performance.now();
  const runs = demoComparison(params, options, seed, seeds);
  const seconds = (performance.now() - start) / 1000;
  const task = demoTask(seed);
  const [trace] = runs;
  const lines = ['', `  Does it train better than what you would do otherwise? A simulated check, measured now (seeds ${seed}–${seed + seeds - 1}):`];
  lines.push(`  ${task.prompts} prompts of mixed difficulty (0 to 4 decisions among 2–4 near-identical options, revealed only at the`);
  lines.push(`  episode's end), a tabular softmax policy, ${task.steps} training steps of ${fmt(task.budgetPerStep)} environment steps shared by all ${task.prompts} trees.`);
  lines.push('', `    ${'strategy'.padEnd(20)} ${'env steps per run'.padStart(17)}  ${'success after training'.padStart(22)}  ${trace.name} − strategy (95% interval)`);
  const verdicts: string[] = [];
  for (const row of runs) {
    const steps = new Set(row.envSteps);
    const stepText = steps.size === 1 ? fmt(row.envSteps[0]) : `${fmt(Math.min(...row.envSteps))}–${fmt(Math.max(...row.envSteps))}`;
    const mean = row.success.reduce((s, x) => s + x, 0) / row.success.length;
    let gapText = '';
    if (row !== trace) {
      const gap = pairedGap(trace.success, row.success);
      const points = (x: number) => `${x >= 0 ? '+' : ''}${(100 * x).toFixed(1)}`;
      gapText = Number.isNaN(gap.low) ? `${points(gap.mean)} points (one seed: no interval)` : `${points(gap.mean)} points [${points(gap.low)}, ${points(gap.high)}]`;
      verdicts.push(Number.isNaN(gap.low) ? `not compared with ${row.name} (one seed)` : gap.low > 0 ? `ahead of ${row.name}` : gap.high < 0 ? `behind ${row.name}` : `not separable from ${row.name} (the interval holds 0)`);
    }
    lines.push(`    ${row.name.padEnd(20)} ${stepText.padStart(17)}  ${`${(100 * mean).toFixed(1)}%`.padStart(22)}  ${gapText}`);
  }
  lines.push('', `  On this task, with these seeds, ${trace.name} is ${verdicts.join(' and ')}.`);
  lines.push(`  (${seconds.toFixed(1)} s. The full evaluation, more tasks, learners and baselines: docs/EVALUATION.md.)`);
  return `${lines.join('\n')}\n`;
}
