import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { allocate, type Allocation } from '../allocate/allocate.js';
import type { PackedForest } from '../forest/packed.js';
import { createScorer } from '../backend/select.js';
import type { Scores } from '../score/types.js';
import { generateForest } from '../synth/generate.js';
import { depthMeaning } from '../viz/depth.js';
import { writeTreeView } from '../viz/write.js';
import { parseFlags, SCORE_FLAGS, scoreSettings, UsageError } from './flags.js';
import { defineCommand, SCORE_FLAG_HELP } from './help.js';
import { checkOutputPath } from './output.js';

export const DEMO_COMMAND = defineCommand({
  name: 'demo',
  operands: '',
  summary: `Generates a seeded synthetic batch (default 4096 trees of 20–200 nodes, forks of 2–8
children, dim 64), scores and allocates it, and prints a summary with the time per phase.
Writes the explorable view of its most contested trees to --view and prints the path.`,
  flags: { ...SCORE_FLAGS, trees: 'int', seed: 'int', dim: 'int', 'min-nodes': 'int', 'max-nodes': 'int', view: 'string' },
  docs: {
    ...SCORE_FLAG_HELP,
    trees: { value: 'N', default: '4096', meaning: 'synthetic rollout trees to generate' },
    seed: { value: 'S', default: '1', meaning: 'seed of the generator (the same seed gives the same batch)' },
    dim: { value: 'D', default: '64', meaning: 'embedding dimension of the generated nodes' },
    'min-nodes': { value: 'N', default: '20', meaning: 'fewest nodes of a generated tree' },
    'max-nodes': { value: 'N', default: '200', meaning: 'most nodes of a generated tree' },
    view: { value: 'FILE', default: '$TMPDIR/trace-alloc-demo.html', meaning: 'where to write the explorable view of the most contested trees' },
  },
});

/** `trace-alloc demo`: the project's main job on an embedded default workload. */
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
  if (trees < 1) throw new UsageError(`--trees must be >= 1, got ${trees}`);
  if (dim < 0) throw new UsageError(`--dim must be >= 0, got ${dim}`);
  if (minNodes < 1 || maxNodes < minNodes) throw new UsageError(`need 1 <= --min-nodes <= --max-nodes, got ${minNodes} and ${maxNodes}`);

  const timings: Array<[string, number]> = [];
  const timed = async <T>(phase: string, work: () => T | Promise<T>): Promise<T> => {
    const start = performance.now();
    const result = await work();
    timings.push([phase, performance.now() - start]);
    return result;
  };

  const forest = await timed('generate + pack', () => generateForest({ trees, dim, seed, minNodes, maxNodes }));
  const notices: string[] = [];
  const scorer = await timed('backend setup', () => createScorer({ backend: settings.backend, threads: settings.threads, onNotice: (line) => notices.push(line) }));
  let scores: Scores;
  try {
    scores = await timed(`score (${scorer.backend})`, () => scorer.score(forest, settings.params));
  } finally {
    scorer.destroy();
  }
  const allocation = await timed('allocate', () => allocate(forest, scores, settings.allocate));
  const out = process.stdout;
  out.write(summarize(forest, scores, allocation, { trees, seed, dim, backend: scores.backend, notices, timings }));
  const view = writeTreeView(forest, scores, allocation, { outFile: (values.view as string | undefined) ?? join(tmpdir(), 'trace-alloc-demo.html') });
  out.write(`\n  view      ${view.path}\n            tree ${forest.treeIds[view.selection.initialTree]} (the most contested) first; open it in a browser, no network needed\n`);
  return 0;
}

interface SummaryContext {
  trees: number;
  seed: number;
  dim: number;
  backend: string;
  notices: string[];
  timings: Array<[string, number]>;
}

function summarize(forest: PackedForest, scores: Scores, allocation: Allocation, ctx: SummaryContext): string {
  const fmt = (x: number) => x.toLocaleString('en-US');
  const lines: string[] = [];
  lines.push(`trace-alloc demo: ${fmt(ctx.trees)} synthetic rollout trees (seed ${ctx.seed}, dim ${ctx.dim}), scored on ${ctx.backend}`);
  for (const notice of ctx.notices) lines.push(`  note: ${notice}`);
  const children = forest.nodeCount - forest.treeCount;
  lines.push(`  nodes ${fmt(forest.nodeCount)}   sibling groups ${fmt(forest.groupCount)}   mean group size ${(children / Math.max(1, forest.groupCount)).toFixed(2)}`);
  lines.push('', '  phase                 ms');
  let total = 0;
  for (const [phase, ms] of ctx.timings) {
    lines.push(`  ${phase.padEnd(18)} ${ms.toFixed(1).padStart(8)}`);
    total += ms;
  }
  lines.push(`  ${'total'.padEnd(18)} ${total.toFixed(1).padStart(8)}`);

  let budget = 0, placed = 0, unallocated = 0, pruned = 0, starts = 0, depthSum = 0;
  for (let t = 0; t < forest.treeCount; t++) { budget += allocation.treeBudget[t]; unallocated += allocation.unallocated[t]; }
  for (let v = 0; v < forest.nodeCount; v++) {
    pruned += allocation.pruned[v];
    if (allocation.branches[v] > 0) { placed += allocation.branches[v]; starts++; depthSum += allocation.depth[v] * allocation.branches[v]; }
  }
  lines.push('');
  lines.push(`  budget    ${fmt(budget)} rollouts: ${fmt(placed)} placed at ${fmt(starts)} nodes, ${fmt(unallocated + allocation.unallocatedTotal)} unallocated`);
  lines.push(`  depth     mean ${(depthSum / Math.max(1, placed)).toFixed(2)} (${depthMeaning(allocation.options.rule).tooltip})`);
  lines.push(`  pruned    ${fmt(pruned)} branches stopped early (${((100 * pruned) / Math.max(1, children)).toFixed(1)}% of children)`);
  // Rollouts placed anywhere under each node, to show where a contested fork's budget went.
  const below = Float64Array.from(allocation.branches);
  for (let v = forest.nodeCount - 1; v >= 0; v--) if (forest.parentRow[v] >= 0) below[forest.parentRow[v]] += below[v];
  // Forks the plan sends nothing to are contested but out of reach this step; show where budget went.
  const reached = (g: number) => below[forest.groupParent[g]] > 0;
  lines.push('', '  most contested forks that receive rollouts (intensity I, sibling weights w, rollouts in the fork\'s subtree):');
  for (const g of topGroups(forest, scores.intensity, 5, reached)) {
    const t = forest.nodeTree[forest.groupParent[g]];
    const base = forest.treeOffset[t];
    const kids = forest.groupChild.subarray(forest.groupOffset[g], forest.groupOffset[g + 1]);
    const weights = Array.from(kids, (row) => scores.weight[row].toFixed(2)).join(' ');
    const parentRow = forest.groupParent[g];
    lines.push(`    tree ${forest.treeIds[t]} node ${parentRow - base}: k=${kids.length} I=${scores.intensity[g].toFixed(3)} w=[${weights}] rollouts=${below[parentRow]}`);
  }
  return `${lines.join('\n')}\n`;
}

/** Indices of the `count` groups (passing `keep`) with the highest intensity; ties to the larger group, then the earlier. */
export function topGroups(forest: PackedForest, intensity: ArrayLike<number>, count: number, keep: (g: number) => boolean = () => true): number[] {
  const size = (g: number) => forest.groupOffset[g + 1] - forest.groupOffset[g];
  const before = (a: number, b: number) => intensity[b] - intensity[a] || size(b) - size(a) || a - b;
  const best: number[] = [];
  for (let g = 0; g < forest.groupCount; g++) {
    if (!keep(g)) continue;
    if (best.length < count || before(g, best[best.length - 1]) < 0) {
      best.push(g);
      best.sort(before);
      if (best.length > count) best.pop();
    }
  }
  return best;
}
