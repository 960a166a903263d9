import { allocate } from '../allocate/allocate.js';
import { planToJson } from '../allocate/plan.js';
import { allocateOnThreads } from '../allocate/threaded.js';
import { checkGroupSizes } from '../forest/limits.js';
import { loadForestFile } from '../forest/load.js';
import { statSync } from 'node:fs';
import { CpuScorer } from '../score/cpu.js';
import { FOREST_FLAGS, loadOptions, maxGroupSizeFlag, parseFlags, SCORE_FLAGS, scoreSettings, UsageError } from './flags.js';
import { defineCommand, FOREST_FLAG_HELP, SCORE_FLAG_HELP } from './help.js';
import { checkOutputPath, noticePrinter, writeResult } from './output.js';

export const SCORE_COMMAND = defineCommand({
  name: 'score',
  operands: 'FILE|-',
  summary: `Reads a forest (JSON, JSON Lines, .npz or Arrow IPC, told apart by extension or first
bytes; - for standard input), scores every sibling group and writes the allocation plan as
JSON (docs/ALGORITHM.md, 'Allocation'). --budget and
--total-budget exclude each other. Exit 0 ok, 2 bad input or flags (one line on stderr naming
the tree, the node and the field), 1 internal error; nothing is written when anything fails.`,
  flags: { ...SCORE_FLAGS, ...FOREST_FLAGS, scores: 'boolean', out: 'string' },
  docs: {
    ...SCORE_FLAG_HELP,
    ...FOREST_FLAG_HELP,
    scores: { default: 'off', meaning: 'add per-node scores and per-fork intensities to the plan' },
    out: { value: 'FILE', default: 'standard output', meaning: 'write the plan there (atomically) instead of standard output' },
  },
});

/** From this file size a forest is worth scoring on threads (about the work `PARALLEL_MIN_COST` stands for). */
const THREADS_WHILE_READING_BYTES = 4 << 20;

function fileSize(path: string): number {
  try {
    return statSync(path).size;
  } catch {
    return 0; // loadForestFile reports it
  }
}

/** `trace-alloc score`: forest file → plan JSON (docs/ALGORITHM.md, 'Allocation'). Nothing is written unless everything succeeded. */
export async function runScore(argv: readonly string[]): Promise<number> {
  const { values, positionals } = parseFlags(argv, SCORE_COMMAND.flags);
  if (positionals.length !== 1) throw new UsageError(`score needs exactly one FILE (or - for standard input), got ${positionals.length}`);
  const settings = scoreSettings(values);
  for (const line of settings.notices) process.stderr.write(`trace-alloc: ${line}\n`);
  const maxGroupSize = maxGroupSizeFlag(values);
  checkOutputPath(values.out as string | undefined);
  const path = positionals[0];
  // On the cpu backend the scoring threads boot while a large file is read (the GPU modules are not loaded at all).
  const early = settings.backend === 'cpu' ? new CpuScorer({ threads: settings.threads }) : undefined;
  if (early !== undefined && path !== '-' && fileSize(path) >= THREADS_WHILE_READING_BYTES) await early.startThreads();
  let forest;
  try {
    forest = loadForestFile(path, loadOptions(values));
    checkGroupSizes(forest, maxGroupSize);
  } catch (err) {
    early?.destroy();
    throw err;
  }
  const scorer = early ?? await (await import('../backend/select.js')).createScorer({ backend: settings.backend, threads: settings.threads, onNotice: noticePrinter('trace-alloc', settings.verbose) });
  let plan;
  try {
    const scores = await scorer.score(forest, settings.params);
    // On the CPU the allocation runs on the scorer's threads too (the same plan bit for bit).
    const allocation = scorer instanceof CpuScorer ? await allocateOnThreads(forest, scores, settings.allocate, scorer) : allocate(forest, scores, settings.allocate);
    plan = planToJson(forest, scores, allocation, { includeScores: values.scores === true });
  } finally {
    scorer.destroy();
  }
  await writeResult(`${JSON.stringify(plan)}\n`, values.out as string | undefined);
  return 0;
}
