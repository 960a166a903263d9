import { DEFAULT_BUDGET, DEFAULT_RULE, resolveAllocateOptions } from '../allocate/options.js';
import { DEFAULT_PARAMS } from '../score/types.js';
import { DEFAULT_MAX_GROUP_SIZE, DEFAULT_MAX_INFLATED_BYTES, DEFAULT_MAX_INPUT_BYTES } from '../forest/limits.js';
import type { FlagDefs, FOREST_FLAGS, SCORE_FLAGS } from './flags.js';

/** What `--help` says about one flag: its value's placeholder, its default (or that it is required) and a one-line meaning. */
export type FlagHelp = {
  /** Placeholder of the value (`N`, `FILE`); enums show their choices, booleans take none. */
  value?: string;
  meaning: string;
} & ({ default: string; required?: never } | { required: true; default?: never });

/**
 * A command as `--help` shows it. `flags` is the very object the command hands to `parseFlags`,
 * and `docs` must have an entry for each of its keys (the type says so), so a flag the parser
 * accepts cannot be missing from the help.
 */
export interface CommandHelp<F extends FlagDefs = FlagDefs> {
  name: string;
  /** What follows `trace-alloc <name>` besides the flags, e.g. `FILE|-`. */
  operands: string;
  summary: string;
  flags: F;
  docs: { readonly [K in keyof F]: FlagHelp };
}

export function defineCommand<F extends FlagDefs>(help: CommandHelp<F>): CommandHelp<F> {
  return help;
}

const allocateDefaults = resolveAllocateOptions();

/** `--verbose` of every command that scores (`score`, `viz`, `demo`, `serve`). */
export const VERBOSE_MEANING = "explain the backend notice: why auto did not use a GPU (without it, the choice is one short line on stderr)";

/** The scoring and allocation flags shared by `score`, `viz` and `demo`. */
export const SCORE_FLAG_HELP: { readonly [K in keyof typeof SCORE_FLAGS]: FlagHelp } = {
  budget: { value: 'N', default: String(DEFAULT_BUDGET), meaning: 'new rollouts per tree' },
  'total-budget': { value: 'N', default: 'off, a budget per tree', meaning: 'one budget for the whole forest, split across live trees by intensity' },
  'min-per-tree': { value: 'M', default: String(allocateDefaults.minPerTree), meaning: 'floor per live tree with --total-budget' },
  alpha: { value: 'A', default: String(DEFAULT_PARAMS.alpha), meaning: 'contrast damping α > 0' },
  tau: { value: 'T', default: String(DEFAULT_PARAMS.tau), meaning: 'softmax temperature τ > 0' },
  'prune-ratio': { value: 'R', default: String(allocateDefaults.pruneRatio), meaning: 'stop siblings whose weight is below R × the best, R in [0, 1)' },
  rule: { default: DEFAULT_RULE, meaning: 'the scoring and allocation rule of docs/ALGORITHM.md: v5, or v4, v3, v2 and v1 (each kept exactly for reproducibility)' },
  'contest-gain': { value: 'K', default: String(allocateDefaults.contestGain), meaning: 'v3, v4, v5: a contested fork draws K × ψ × its intensity beside the root\'s fresh share of 1; v2: an open node heading a fork claims 1 + K × the fork\'s intensity; K >= 0' },
  'fork-keep': { value: 'E', default: String(allocateDefaults.forkKeep), meaning: 'v3, v4, v5: the part of a contested fork\'s draw that starts new siblings at the fork itself (the rest goes down its kept children), E in [0, 1]' },
  'tree-floor': { value: 'Q', default: `${allocateDefaults.treeFloor} (v2: ${resolveAllocateOptions({ rule: 'v2' }).treeFloor})`, meaning: 'v2 to v5, with --total-budget: every live tree\'s weight is Q + its evidence (v3 to v5: the intensity of its root\'s fork; v2: its mean intensity), Q > 0' },
  widen: { value: 'L', default: String(allocateDefaults.widen), meaning: "v1 only: share of an open node's mass kept at it, scaled by its fork's intensity, L in [0, 1]" },
  'base-depth': { value: 'D', default: String(allocateDefaults.baseDepth), meaning: 'the plan\'s depth at a node of uniform priority, depth = clamp(⌊D·ψ^G + ½⌋, 1, X): the fork horizon, steps below the node within which the new branch may fork again (rollouts run to the end); under --rule v1, the steps a rollout takes' },
  'depth-gain': { value: 'G', default: String(allocateDefaults.depthGain), meaning: 'how strongly priority ψ stretches depth' },
  'max-depth': { value: 'X', default: '4 × --base-depth', meaning: 'the largest depth (fork horizon) a plan gives' },
  threads: { value: 'N', default: 'available parallelism', meaning: 'CPU scoring threads (small forests stay on one); results are the same for any N' },
  backend: { default: 'auto', meaning: 'where scores are computed: cpu (float64 reference), gpu (WebGPU, any adapter), auto (the GPU when a hardware adapter exists, else the CPU: never a CPU-emulated adapter such as lavapipe)' },
  verbose: { default: 'off', meaning: VERBOSE_MEANING },
};

/** The forest-reading flags shared by `score`, `viz` and `serve`. */
export const FOREST_FLAG_HELP: { readonly [K in keyof typeof FOREST_FLAGS]: FlagHelp } = {
  'allow-unknown-fields': { default: 'off', meaning: 'accept (and ignore) fields that trees and nodes do not have, e.g. text or logprobs kept beside the forest' },
  'max-group-size': { value: 'N', default: String(DEFAULT_MAX_GROUP_SIZE), meaning: 'refuse (exit 2, naming the tree, node and size) a node with more than N children: scoring a group costs O(children² · dim)' },
  'max-inflated-bytes': { value: 'N', default: `${DEFAULT_MAX_INFLATED_BYTES} (2 GiB)`, meaning: "refuse (exit 2) a compressed .npz whose arrays inflate to more than N bytes in all: memory use follows the inflated size, not the file's" },
  'max-input-bytes': { value: 'N', default: `${DEFAULT_MAX_INPUT_BYTES} (2 GiB)`, meaning: 'refuse (exit 2) an input of more than N bytes: a file from its size, before reading it; standard input, a named pipe or a device (/dev/zero) as soon as it has sent more' },
};

const WIDTH = 100;
const LONGEST_INLINE_CHOICES = 14;
const NBSP = '\u00a0';

function placeholder(kind: FlagDefs[string], help: FlagHelp): string {
  if (kind === 'boolean') return '';
  if (Array.isArray(kind)) return ` ${kind.join('|').length <= LONGEST_INLINE_CHOICES ? kind.join('|') : (help.value ?? 'X')}`;
  return ` ${help.value ?? (kind === 'string' ? 'FILE' : 'N')}`;
}

function describe(kind: FlagDefs[string], help: FlagHelp): string {
  const choices = Array.isArray(kind) && kind.join('|').length > LONGEST_INLINE_CHOICES ? `; one of ${kind.join(', ')}` : '';
  // The bracket is one unit for wrap(): its spaces are non-breaking until the lines are made.
  const tag = `[${help.required ? 'required' : `default: ${help.default}`}]`.replace(/ /g, NBSP);
  return `${help.meaning}${choices} ${tag}`;
}

/** Words of `text` in lines of at most `width` characters. */
function wrap(text: string, width: number): string[] {
  const lines: string[] = [];
  let line = '';
  for (const word of text.split(' ')) {
    if (line !== '' && line.length + 1 + word.length > width) { lines.push(line); line = word; }
    else line = line === '' ? word : `${line} ${word}`;
  }
  return [...lines, line].map((l) => l.replaceAll(NBSP, ' '));
}

/** Flags of `help.flags` that have no entry in `help.docs` (empty when the help is complete). */
export function undocumentedFlags(help: CommandHelp): string[] {
  return Object.keys(help.flags).filter((name) => help.docs[name] === undefined);
}

/** The text of `trace-alloc <command> --help`: usage, summary, then every flag with default and meaning. */
export function renderCommandHelp(help: CommandHelp): string {
  const missing = undocumentedFlags(help);
  if (missing.length > 0) throw new Error(`trace-alloc ${help.name}: no help for ${missing.map((f) => `--${f}`).join(', ')}`);
  const rows = Object.entries(help.flags).map(([name, kind]) => {
    const doc = help.docs[name];
    return { name: `--${name}${placeholder(kind, doc)}`, text: describe(kind, doc) };
  });
  rows.push({ name: '-h, --help', text: 'print this help and exit' });
  const indent = Math.max(...rows.map((r) => r.name.length)) + 4;
  const lines = rows.flatMap((r) => wrap(r.text, WIDTH - indent).map((part, i) => `${i === 0 ? `  ${r.name}`.padEnd(indent) : ' '.repeat(indent)}${part}`));
  return [`usage: trace-alloc ${help.name}${help.operands === '' ? '' : ` ${help.operands}`} [flags]`, '', help.summary, '', 'flags:', ...lines].join('\n');
}
