import { extname } from 'node:path';
import { checkOutputPath, noticePrinter } from './output.js';
import { allocate } from '../allocate/allocate.js';
import type { PackedForest } from '../forest/packed.js';
import { checkGroupSizes } from '../forest/limits.js';
import { loadForestFile } from '../forest/load.js';
import { createScorer } from '../backend/select.js';
import { DEFAULT_MAX_TREES, rankTreesByContest } from '../viz/model.js';
import { COLOR_METRICS, type ColorMetric } from '../viz/palette.js';
import { writeTreeSvg, writeTreeView } from '../viz/write.js';
import { FOREST_FLAGS, loadOptions, maxGroupSizeFlag, parseFlags, SCORE_FLAGS, scoreSettings, UsageError } from './flags.js';
import { defineCommand, FOREST_FLAG_HELP, SCORE_FLAG_HELP } from './help.js';

export const VIZ_COMMAND = defineCommand({
  name: 'viz',
  operands: 'FILE|- --out FILE',
  summary: `Scores and allocates the forest like 'trace-alloc score', then writes one self-contained HTML
page (works offline) with the ${DEFAULT_MAX_TREES} most contested trees (--max-trees) plus the --tree one,
shown first. With --svg, writes a static SVG of that one tree instead (default: the most
contested tree), coloured by --metric.`,
  flags: {
    ...SCORE_FLAGS,
    ...FOREST_FLAGS,
    out: 'string',
    tree: 'string',
    svg: 'boolean',
    metric: COLOR_METRICS,
    'max-trees': 'int',
  },
  docs: {
    ...SCORE_FLAG_HELP,
    ...FOREST_FLAG_HELP,
    out: { value: 'FILE', required: true, meaning: 'the HTML page (or, with --svg, the SVG file) to write' },
    tree: { value: 'ID', default: 'the most contested tree', meaning: 'the tree shown first on the page, or drawn with --svg' },
    svg: { default: 'off', meaning: 'write a static SVG of one tree instead of the page' },
    metric: { value: 'M', default: 'weight', meaning: 'what colours the nodes (priority weight, contrast, reward, uncertainty)' },
    'max-trees': { value: 'N', default: String(DEFAULT_MAX_TREES), meaning: 'how many of the most contested trees the page holds (plus --tree)' },
  },
});

/** `trace-alloc viz`: forest file → explorable HTML view (or a static SVG of one tree). */
export async function runViz(argv: string[]): Promise<number> {
  const { values, positionals } = parseFlags(argv, VIZ_COMMAND.flags);
  if (positionals.length !== 1) throw new UsageError(`viz needs exactly one FILE (or - for standard input), got ${positionals.length}`);
  const out = values.out as string | undefined;
  if (out === undefined || out === '-') throw new UsageError('viz needs --out FILE (the page is a file to open in a browser)');
  checkOutputPath(out);
  const maxTrees = values['max-trees'] as number | undefined;
  if (maxTrees !== undefined && maxTrees < 1) throw new UsageError(`--max-trees must be an integer >= 1, got ${maxTrees}`);
  const metric = values.metric as ColorMetric | undefined;
  const settings = scoreSettings(values);
  for (const line of settings.notices) process.stderr.write(`trace-alloc: ${line}\n`);
  const mismatch = extensionMismatch(out, values.svg === true);
  if (mismatch !== undefined) process.stderr.write(`trace-alloc: warning: ${mismatch}\n`);

  const maxGroupSize = maxGroupSizeFlag(values);
  const forest = loadForestFile(positionals[0], loadOptions(values));
  checkGroupSizes(forest, maxGroupSize);
  if (forest.treeCount === 0) throw new UsageError(`${positionals[0]} holds no trees to draw`);
  const treeId = values.tree as string | undefined;
  const initialTree = treeId === undefined ? undefined : findTree(forest, treeId);

  const scorer = await createScorer({ backend: settings.backend, threads: settings.threads, onNotice: noticePrinter('trace-alloc', settings.verbose) });
  let scores;
  try {
    scores = await scorer.score(forest, settings.params);
  } finally {
    scorer.destroy();
  }
  const allocation = allocate(forest, scores, settings.allocate);

  if (values.svg === true) {
    const tree = initialTree ?? rankTreesByContest(forest, scores)[0];
    const written = writeTreeSvg(forest, scores, allocation, tree, { outFile: out, metric });
    process.stdout.write(`wrote ${written.path}: tree ${JSON.stringify(forest.treeIds[tree])} (#${tree}), ${forest.treeOffset[tree + 1] - forest.treeOffset[tree]} nodes, ${kib(written.bytes)}\n`);
    return 0;
  }
  const written = writeTreeView(forest, scores, allocation, { outFile: out, initialTree, maxTrees, metric });
  const shown = written.selection.initialTree;
  process.stdout.write(`wrote ${written.path}: ${written.selection.trees.length} of ${forest.treeCount} trees, `
    + `showing ${JSON.stringify(forest.treeIds[shown])} (#${shown}) first, ${kib(written.bytes)}; open it in a browser (no network needed)\n`);
  return 0;
}

/** A warning when --out's extension says the other format (the file is still written as asked). */
export function extensionMismatch(out: string, svg: boolean): string | undefined {
  const ext = extname(out).toLowerCase();
  if (svg && (ext === '.html' || ext === '.htm')) return `--svg writes an SVG image, but --out ${out} ends in ${ext}; name it .svg, or drop --svg for the HTML page`;
  if (!svg && ext === '.svg') return `without --svg the output is an HTML page, but --out ${out} ends in .svg; add --svg for a static SVG of one tree`;
  return undefined;
}

function findTree(forest: PackedForest, id: string): number {
  const t = forest.treeIds.indexOf(id);
  if (t < 0) {
    const some = forest.treeIds.slice(0, 5).map((x) => JSON.stringify(x)).join(', ');
    throw new UsageError(`--tree ${JSON.stringify(id)} is not a tree id of this forest (ids: ${some}${forest.treeCount > 5 ? ', …' : ''})`);
  }
  return t;
}

function kib(bytes: number): string {
  return bytes >= 1 << 20 ? `${(bytes / (1 << 20)).toFixed(1)} MiB` : `${Math.ceil(bytes / 1024)} KiB`;
}
