import { allocate } from '../allocate/allocate.js';
import { planToJson } from '../allocate/plan.js';
import { checkGroupSizes } from '../forest/limits.js';
import { loadForestFile } from '../forest/load.js';
import { createScorer } from '../score/select.js';
import { FOREST_FLAGS, maxGroupSizeFlag, parseFlags, SCORE_FLAGS, scoreSettings, UsageError } from './flags.js';
import { checkOutputPath, writeResult } from './output.js';

export const SCORE_USAGE = `usage: trace-alloc score FILE|- [--budget N | --total-budget N [--min-per-tree M]]
         [--alpha A] [--tau T] [--prune-ratio R] [--widen L] [--base-depth D]
         [--depth-gain G] [--max-depth X] [--backend auto|gpu|cpu] [--max-group-size N]
         [--scores] [--out FILE]

  --max-group-size N   refuse (exit 2, naming the tree, node and size) a node with more than
                       N children (default 4096): scoring a group costs O(children² · dim)`;

/** `trace-alloc score`: forest file → plan JSON (SPEC §5). Nothing is written unless everything succeeded. */
export async function runScore(argv: readonly string[]): Promise<number> {
  const { values, positionals } = parseFlags(argv, { ...SCORE_FLAGS, ...FOREST_FLAGS, scores: 'boolean', out: 'string' });
  if (positionals.length !== 1) throw new UsageError(`score needs exactly one FILE (or - for standard input), got ${positionals.length}`);
  const settings = scoreSettings(values);
  const maxGroupSize = maxGroupSizeFlag(values);
  checkOutputPath(values.out as string | undefined);
  const forest = loadForestFile(positionals[0]);
  checkGroupSizes(forest, maxGroupSize);
  const scorer = await createScorer({ backend: settings.backend, onNotice: (line) => process.stderr.write(`trace-alloc: ${line}\n`) });
  let plan;
  try {
    const scores = await scorer.score(forest, settings.params);
    const allocation = allocate(forest, scores, settings.allocate);
    plan = planToJson(forest, scores, allocation, { includeScores: values.scores === true });
  } finally {
    scorer.destroy();
  }
  writeResult(`${JSON.stringify(plan)}\n`, values.out as string | undefined);
  return 0;
}
