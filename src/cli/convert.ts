import { formatOfPath, loadForestFile } from '../forest/load.js';
import { writeForestFile } from '../forest/write.js';
import { parseFlags, UsageError } from './flags.js';
import { checkOutputPath } from './output.js';

export const CONVERT_USAGE = `usage: trace-alloc convert IN OUT [--format json|jsonl|npz|arrow]

Reads a forest (JSON, JSON Lines, .npz or Arrow IPC; '-' reads standard input) and writes it in
the format OUT's extension names (.json, .jsonl, .npz, .arrow). The input is validated as for
'score'; nothing is written if it is rejected.

  --format     the output format when OUT's extension names none (default: from OUT)`;

const FORMATS = ['json', 'jsonl', 'npz', 'arrow'] as const;

/** `trace-alloc convert IN OUT`: one forest format to another. */
export async function runConvert(argv: readonly string[]): Promise<number> {
  const { values, positionals } = parseFlags(argv, { format: FORMATS });
  if (positionals.length !== 2) throw new UsageError(`convert needs IN and OUT, got ${positionals.length} argument${positionals.length === 1 ? '' : 's'}`);
  const [input, output] = positionals;
  const format = (values.format as (typeof FORMATS)[number] | undefined) ?? formatOfPath(output);
  if (format === undefined) throw new UsageError(`cannot tell the output format from ${JSON.stringify(output)}: use a .json, .jsonl, .npz or .arrow name, or --format`);
  if (output === '-') throw new UsageError('convert writes a file: give OUT a path');
  checkOutputPath(output);
  const forest = loadForestFile(input);
  writeForestFile(forest, output, format);
  process.stderr.write(`trace-alloc: wrote ${forest.treeCount} trees, ${forest.nodeCount} nodes (dim ${forest.dim}) to ${output} as ${format}\n`);
  return 0;
}
