import { DEFAULT_RULE, MAX_WHOLE, RULES, type AllocateOptions, type Rule } from '../allocate/options.js';
import { ruleNamed, rulesReading } from '../allocate/rules/index.js';
import { DEFAULT_MAX_GROUP_SIZE } from '../forest/limits.js';
import type { LoadOptions } from '../forest/load.js';
import type { Backend } from '../backend/select.js';
import type { ScoreParams } from '../score/types.js';
import { didYouMean } from '../util/suggest.js';

/** Bad flags or arguments: the CLI prints the message on one line and exits with 2. */
export class UsageError extends Error {
  override name = 'UsageError';
}

type FlagKind = 'int' | 'number' | 'string' | 'boolean' | readonly string[];
export type FlagDefs = Record<string, FlagKind>;
export type FlagValues = Record<string, number | string | boolean | undefined>;

/**
 * A number as a person types it in decimal: optional minus, digits, optional fraction,
 * optional exponent (`16`, `0.5`, `-2`, `1e3`, `2.5E-4`). Hexadecimal (`0x10`), octal,
 * binary, `Infinity`, a leading `+` or `.` and digit separators are refused.
 */
const DECIMAL = /^-?\d+(\.\d+)?([eE][-+]?\d+)?$/;

/**
 * Parses `--name value`, `--name=value` and boolean `--name`. Unknown flags, missing values,
 * values of the wrong kind and a flag given twice are `UsageError`s that name the flag.
 */
export function parseFlags(argv: readonly string[], defs: FlagDefs): { values: FlagValues; positionals: string[] } {
  const values: FlagValues = Object.create(null) as FlagValues;
  const positionals: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (!arg.startsWith('--') || arg === '-') { positionals.push(arg); continue; }
    const eq = arg.indexOf('=');
    const name = arg.slice(2, eq < 0 ? undefined : eq);
    const kind = Object.hasOwn(defs, name) ? defs[name] : undefined;
    if (kind === undefined) throw new UsageError(`unknown flag --${name}${didYouMean(name, Object.keys(defs))}`);
    if (Object.hasOwn(values, name)) throw new UsageError(`--${name} is given more than once: give each flag once`);
    if (kind === 'boolean') {
      if (eq >= 0) throw new UsageError(`--${name} takes no value`);
      values[name] = true;
      continue;
    }
    let raw: string | undefined = eq >= 0 ? arg.slice(eq + 1) : argv[++i];
    if (raw === undefined) throw new UsageError(`--${name} needs a value`);
    if (Array.isArray(kind)) {
      if (!kind.includes(raw)) throw new UsageError(`--${name} must be one of ${kind.join(', ')}, got ${JSON.stringify(raw)}`);
      values[name] = raw;
    } else if (kind === 'string') {
      values[name] = raw;
    } else {
      raw = raw.trim();
      const n = DECIMAL.test(raw) ? Number(raw) : NaN;
      if (!Number.isFinite(n)) throw new UsageError(`--${name} must be a decimal number (such as 16, 0.5 or 1e3), got ${JSON.stringify(raw)}`);
      if (kind === 'int' && !Number.isSafeInteger(n)) throw new UsageError(`--${name} must be an integer, got ${JSON.stringify(raw)}`);
      values[name] = n;
    }
  }
  return { values, positionals };
}

/** The scoring and allocation flags of `trace-alloc score` (README, "CLI"), shared by `viz` and `demo`. */
export const SCORE_FLAGS = {
  budget: 'int',
  'total-budget': 'int',
  'min-per-tree': 'int',
  alpha: 'number',
  tau: 'number',
  'prune-ratio': 'number',
  widen: 'number',
  rule: RULES,
  'contest-gain': 'number',
  'fork-keep': 'number',
  'tree-floor': 'number',
  'base-depth': 'int',
  'depth-gain': 'number',
  'max-depth': 'int',
  backend: ['auto', 'gpu', 'cpu'],
  threads: 'int',
  verbose: 'boolean',
} as const satisfies FlagDefs;

/** The flags of every command that reads a forest file. */
export const FOREST_FLAGS = { 'allow-unknown-fields': 'boolean', 'max-group-size': 'int', 'max-inflated-bytes': 'int', 'max-input-bytes': 'int' } as const satisfies FlagDefs;

export interface ScoreSettings {
  params: ScoreParams;
  allocate: AllocateOptions;
  backend: Backend;
  /** Lines for stderr: settings accepted but without effect. */
  notices: string[];
  /** CPU scoring threads; undefined: available parallelism. */
  threads?: number;
  /** `--verbose`: notices carry their explanation (why `auto` did not use a GPU). */
  verbose: boolean;
}

/** Turns parsed score flags into library settings, checking ranges so errors name the flag. */
export function scoreSettings(values: FlagValues): ScoreSettings {
  const num = (name: string) => values[name] as number | undefined;
  if (num('budget') !== undefined && num('total-budget') !== undefined) throw new UsageError('--budget and --total-budget exclude each other');
  if (num('min-per-tree') !== undefined && num('total-budget') === undefined) throw new UsageError('--min-per-tree needs --total-budget');
  const check = (name: string, ok: (x: number) => boolean, what: string) => {
    const x = num(name);
    if (x !== undefined && !ok(x)) throw new UsageError(`--${name} must be ${what}, got ${x}`);
  };
  check('budget', (x) => x >= 0, 'an integer >= 0');
  check('total-budget', (x) => x >= 0, 'an integer >= 0');
  check('min-per-tree', (x) => x >= 0, 'an integer >= 0');
  check('alpha', (x) => x > 0, 'a number > 0');
  check('tau', (x) => x > 0, 'a number > 0');
  check('prune-ratio', (x) => x >= 0 && x < 1, 'in [0, 1)');
  check('widen', (x) => x >= 0 && x <= 1, 'in [0, 1]');
  check('contest-gain', (x) => x >= 0 && x <= 1e6, 'in [0, 1e6]');
  check('tree-floor', (x) => x > 0 && x <= 1e6, 'in (0, 1e6]');
  check('fork-keep', (x) => x >= 0 && x <= 1, 'in [0, 1]');
  const rule = (values.rule as Rule | undefined) ?? DEFAULT_RULE;
  // A rule-specific flag the rule does not read is refused, except --widen (accepted with a notice, as before rules refused flags).
  const spec = ruleNamed(rule);
  for (const [flag, setting] of [['contest-gain', 'contestGain'], ['fork-keep', 'forkKeep']] as const) {
    if (num(flag) !== undefined && spec.defaults[setting] === undefined) throw new UsageError(`--${flag} belongs to --rule ${rulesReading(setting).join(' and ')} (the rule is ${rule})`);
  }
  if (num('tree-floor') !== undefined && spec.treeFloor.fixed) {
    const settable = RULES.filter((r) => !ruleNamed(r).treeFloor.fixed);
    throw new UsageError(`--tree-floor belongs to --rule ${settable.join(' and ')} (the rule is ${rule}, whose q0 is fixed at ${spec.treeFloor.default})`);
  }
  const notices: string[] = [];
  if (num('widen') !== undefined && spec.defaults.widen === undefined) {
    const through = spec.defaults.contestGain !== undefined ? ` (${rule} widens contested forks through --contest-gain)` : '';
    notices.push(`--widen is a --rule ${rulesReading('widen').join(' and ')} setting and has no effect under ${rule}${through}`);
  }
  check('base-depth', (x) => x >= 1, 'an integer >= 1');
  const baseDepth = num('base-depth');
  if (baseDepth !== undefined && num('max-depth') === undefined && 4 * baseDepth > MAX_WHOLE) {
    // Else the error would be about --max-depth, a flag not given.
    throw new UsageError(`--base-depth ${baseDepth} makes the default --max-depth (4 × --base-depth = ${4 * baseDepth}) larger than ${MAX_WHOLE}: give --max-depth too, or a --base-depth of at most ${Math.floor(MAX_WHOLE / 4)}`);
  }
  check('depth-gain', (x) => x >= 0, 'a number >= 0');
  check('max-depth', (x) => x >= 1, 'an integer >= 1 (the minimum depth)');
  check('threads', (x) => x >= 1, 'an integer >= 1');
  const allocate: AllocateOptions = {
    rule,
    contestGain: num('contest-gain'),
    forkKeep: num('fork-keep'),
    treeFloor: num('tree-floor'),
    budget: num('budget'),
    totalBudget: num('total-budget'),
    minPerTree: num('min-per-tree'),
    pruneRatio: num('prune-ratio'),
    widen: num('widen'),
    baseDepth: num('base-depth'),
    depthGain: num('depth-gain'),
    maxDepth: num('max-depth'),
  };
  return {
    params: { alpha: num('alpha') ?? 1, tau: num('tau') ?? 0.5, rule },
    allocate,
    backend: (values.backend as Backend | undefined) ?? 'auto',
    notices,
    threads: num('threads'),
    verbose: values.verbose === true,
  };
}

/** Flags of the commands that read forests from files or requests (`score`, `viz`, `serve`). */

/** `--max-group-size N` (default DEFAULT_MAX_GROUP_SIZE): the most children one node may have. */
export function maxGroupSizeFlag(values: FlagValues): number {
  const max = values['max-group-size'] as number | undefined;
  if (max === undefined) return DEFAULT_MAX_GROUP_SIZE;
  if (max < 1) throw new UsageError(`--max-group-size must be an integer >= 1, got ${max}`);
  return max;
}

/** `--max-inflated-bytes N`: the most bytes a compressed `.npz`'s arrays may inflate to (default: the reader's). */
export function maxInflatedBytesFlag(values: FlagValues): number | undefined {
  const max = values['max-inflated-bytes'] as number | undefined;
  if (max !== undefined && max < 1) throw new UsageError(`--max-inflated-bytes must be an integer >= 1, got ${max}`);
  return max;
}

/** How `score`, `viz` and `convert` read their forest file, from the forest flags. */
export function loadOptions(values: FlagValues): LoadOptions {
  const maxInflatedBytes = maxInflatedBytesFlag(values);
  const maxInputBytes = values['max-input-bytes'] as number | undefined;
  if (maxInputBytes !== undefined && maxInputBytes < 1) throw new UsageError(`--max-input-bytes must be an integer >= 1, got ${maxInputBytes}`);
  return {
    allowUnknownFields: values['allow-unknown-fields'] === true,
    ...(maxInflatedBytes !== undefined ? { maxInflatedBytes } : {}),
    ...(maxInputBytes !== undefined ? { maxInputBytes } : {}),
  };
}
