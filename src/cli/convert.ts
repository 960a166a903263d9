import { formatOfPath, loadForestFile } from '../forest/load.js';
import { writeForestFile } from '../forest/write.js';
import { checkGroupSizes } from '../forest/limits.js';
import { FOREST_FLAGS, loadOptions, maxGroupSizeFlag, parseFlags, UsageError } from './flags.js';
import { defineCommand, FOREST_FLAG_HELP } from './help.js';
import { checkOutputPath } from './output.js';

const FORMATS = ['json', 'jsonl', 'npz', 'arrow'] as const;

export const CONVERT_COMMAND = defineCommand({
  name: 'convert',
  operands: 'IN OUT',
  summary: `Reads a forest (JSON, JSON Lines, .npz or Arrow IPC; '-' reads standard input) and writes it in
the format OUT's extension names (.json, .jsonl, .npz, .arrow). The input is validated as for
'score'; nothing is written if it is rejected.`,
  flags: { format: FORMATS, ...FOREST_FLAGS },
  docs: {
    format: { value: 'F', default: "from OUT's extension", meaning: 'the output format: json, jsonl, npz or arrow' },
    ...FOREST_FLAG_HELP,
  },
});

/** `trace-alloc convert IN OUT`: one forest format to another. */
export async function runConvert(argv: readonly string[]): Promise<number> {
  const { values, positionals } = parseFlags(argv, CONVERT_COMMAND.flags);
  if (positionals.length !== 2) throw new UsageError(`convert needs IN and OUT, got ${positionals.length} argument${positionals.length === 1 ? '' : 's'}`);
  const [input, output] = positionals;
  const format = (values.format as (typeof FORMATS)[number] | undefined) ?? formatOfPath(output);
  if (format === undefined) throw new UsageError(`cannot tell the output format from ${JSON.stringify(output)}: use a .json, .jsonl, .npz or .arrow name, or --format`);
  if (output === '-') throw new UsageError('convert writes a file: give OUT a path');
  checkOutputPath(output);
  const forest = loadForestFile(input, loadOptions(values));
  checkGroupSizes(forest, maxGroupSizeFlag(values));
  writeForestFile(forest, output, format);
  process.stderr.write(`trace-alloc: wrote ${forest.treeCount} trees, ${forest.nodeCount} nodes (dim ${forest.dim}) to ${output} as ${format}\n`);
  return 0;
}
