import { allocate } from '../allocate/allocate.js';
import { planToJson } from '../allocate/plan.js';
import { checkGroupSizes } from '../forest/limits.js';
import { loadForestFile } from '../forest/load.js';
import { createScorer } from '../score/select.js';
import { FOREST_FLAGS, loadOptions, maxGroupSizeFlag, parseFlags, SCORE_FLAGS, scoreSettings, UsageError } from './flags.js';
import { defineCommand, FOREST_FLAG_HELP, SCORE_FLAG_HELP } from './help.js';
import { checkOutputPath, writeResult } from './output.js';

export const SCORE_COMMAND = defineCommand({
  name: 'score',
  operands: 'FILE|-',
  summary: `Reads a forest (JSON or JSON Lines; - for standard input), scores every sibling group and
writes the allocation plan as JSON (docs/ALGORITHM.md, 'Allocation'). --budget and
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

/** `trace-alloc score`: forest file → plan JSON (docs/ALGORITHM.md, 'Allocation'). Nothing is written unless everything succeeded. */
export async function runScore(argv: readonly string[]): Promise<number> {
  const { values, positionals } = parseFlags(argv, SCORE_COMMAND.flags);
  if (positionals.length !== 1) throw new UsageError(`score needs exactly one FILE (or - for standard input), got ${positionals.length}`);
  const settings = scoreSettings(values);
  for (const line of settings.notices) process.stderr.write(`trace-alloc: ${line}\n`);
  const maxGroupSize = maxGroupSizeFlag(values);
  checkOutputPath(values.out as string | undefined);
  const forest = loadForestFile(positionals[0], loadOptions(values));
  checkGroupSizes(forest, maxGroupSize);
  const scorer = await createScorer({ backend: settings.backend, threads: settings.threads, onNotice: (line) => process.stderr.write(`trace-alloc: ${line}\n`) });
  let plan;
  try {
    const scores = await scorer.score(forest, settings.params);
    const allocation = allocate(forest, scores, settings.allocate);
    plan = planToJson(forest, scores, allocation, { includeScores: values.scores === true });
  } finally {
    scorer.destroy();
  }
  await writeResult(`${JSON.stringify(plan)}\n`, values.out as string | undefined);
  return 0;
}
