import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { Plan, SpecParams } from './spec.js';
import type { V2Params, V2Plan } from './v2.js';
import type { V3Params, V3Plan } from './v3.js';

export const REPO_ROOT = fileURLToPath(new URL('../..', import.meta.url));
export const CLI = fileURLToPath(new URL('../../dist/cli/main.js', import.meta.url));

export interface CliResult {
  status: number | null;
  stdout: string;
  stderr: string;
}

/** Runs the built CLI (`npm test` builds dist/ with tsc before vitest). */
export function runCli(args: readonly string[], input?: string): CliResult {
  if (!existsSync(CLI)) throw new Error(`${CLI} is missing: build with \`npx tsc -p tsconfig.json\` first`);
  const r = spawnSync(process.execPath, [CLI, ...args], { cwd: REPO_ROOT, encoding: 'utf8', input, maxBuffer: 256 << 20 });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

/**
 * The score flags for a v1 parameter set; defaults are spelled out only when `explicit` says so.
 * `--rule v1` always: spec.ts is the v1 reference (v5 is the CLI's default rule).
 */
export function scoreFlags(p: SpecParams, explicit: Partial<Record<keyof SpecParams, boolean>> = {}): string[] {
  const f: string[] = ['--rule', 'v1'];
  const put = (flag: string, value: number, dflt: number | undefined, key: keyof SpecParams) => {
    if (value !== dflt || explicit[key]) f.push(flag, String(value));
  };
  put('--alpha', p.alpha, 1, 'alpha');
  put('--tau', p.tau, 0.5, 'tau');
  put('--prune-ratio', p.pruneRatio, 0.5, 'pruneRatio');
  put('--widen', p.widen, 0.5, 'widen');
  put('--base-depth', p.baseDepth, 4, 'baseDepth');
  put('--depth-gain', p.depthGain, 1, 'depthGain');
  if (p.maxDepth !== undefined) f.push('--max-depth', String(p.maxDepth));
  if (p.budget.kind === 'perTree') put('--budget', p.budget.budget, 16, 'budget');
  else {
    f.push('--total-budget', String(p.budget.total));
    if (p.budget.minPerTree !== 1 || explicit.budget) f.push('--min-per-tree', String(p.budget.minPerTree));
  }
  return f;
}

/** `trace-alloc score FILE --scores --backend cpu [flags]`, parsed; throws with stderr on a non-zero exit. */
export function scoreFile(file: string, params: SpecParams, opts: { scores?: boolean; explicit?: Partial<Record<keyof SpecParams, boolean>> } = {}): Plan {
  const args = ['score', file, ...(opts.scores === false ? [] : ['--scores']), '--backend', 'cpu', ...scoreFlags(params, opts.explicit)];
  const r = runCli(args);
  if (r.status !== 0) throw new Error(`trace-alloc ${args.join(' ')} exited ${r.status}: ${r.stderr.trim()}`);
  return JSON.parse(r.stdout) as Plan;
}

export interface V2FlagOptions {
  /** Spell out every setting, defaults included. */
  explicit?: boolean;
  /** `--rule v2` (given with a space) or `--rule=v2`: v2 is no longer the default, so it is always named. */
  rule?: 'spaced' | 'joined';
  /** Pass this --widen too: a v1 setting v2 must accept and ignore. */
  widen?: number;
}

/**
 * The CLI flags of one parameter set: `head` (the rule flag), then every `[flag, value, default]`
 * setting that differs from its default (all of them with `explicit`), the depth cap, `--widen`
 * and the budget. minDepth has no flag, so it must be 1.
 */
function ruleFlags(
  head: string[], settings: Array<[string, number, number]>,
  p: { minDepth: number; maxDepth?: number; budget: V2Params['budget'] }, o: { explicit?: boolean; widen?: number },
): string[] {
  if (p.minDepth !== 1) throw new Error(`minDepth ${p.minDepth} has no CLI flag`);
  const f = [...head];
  const put = (flag: string, value: number, dflt: number) => {
    if (value !== dflt || o.explicit) f.push(flag, String(value));
  };
  for (const [flag, value, dflt] of settings) put(flag, value, dflt);
  if (p.maxDepth !== undefined) f.push('--max-depth', String(p.maxDepth));
  if (o.widen !== undefined) f.push('--widen', String(o.widen));
  if (p.budget.kind === 'perTree') put('--budget', p.budget.budget, 16);
  else {
    f.push('--total-budget', String(p.budget.total));
    put('--min-per-tree', p.budget.minPerTree, 1);
  }
  return f;
}

/** The score flags for a v2 parameter set (minDepth has no flag: it must be 1). */
export function v2Flags(p: V2Params, o: V2FlagOptions = {}): string[] {
  return ruleFlags(o.rule === 'joined' ? ['--rule=v2'] : ['--rule', 'v2'], [
    ['--alpha', p.alpha, 1], ['--tau', p.tau, 0.5], ['--prune-ratio', p.pruneRatio, 0.5], ['--contest-gain', p.contestGain, 4],
    ['--tree-floor', p.treeFloor, 0.25], ['--base-depth', p.baseDepth, 4], ['--depth-gain', p.depthGain, 1],
  ], p, o);
}

/** `trace-alloc score FILE --scores --backend cpu [v2 flags]`, parsed; throws with stderr on a non-zero exit. */
export function scoreFileV2(file: string, params: V2Params, opts: V2FlagOptions & { scores?: boolean } = {}): V2Plan {
  const args = ['score', file, ...(opts.scores === false ? [] : ['--scores']), '--backend', 'cpu', ...v2Flags(params, opts)];
  const r = runCli(args);
  if (r.status !== 0) throw new Error(`trace-alloc ${args.join(' ')} exited ${r.status}: ${r.stderr.trim()}`);
  return JSON.parse(r.stdout) as V2Plan;
}

export interface V3FlagOptions {
  /** Spell out every setting, defaults included. */
  explicit?: boolean;
  /** No --rule flag (the default rule), `--rule vN`, or `--rule=vN`. */
  rule?: 'default' | 'spaced' | 'joined';
  /** Pass this --widen too: a v1 setting v3 must accept and ignore. */
  widen?: number;
}

/** The settings v3, v4 and v5 read, as [flag, value, default] (the same defaults under all three rules). */
function contestFlowSettings(p: V3Params): Array<[string, number, number]> {
  // --tree-floor is accepted with a per-tree budget too, where it has no effect.
  return [
    ['--alpha', p.alpha, 1], ['--tau', p.tau, 0.5], ['--prune-ratio', p.pruneRatio, 0.5], ['--contest-gain', p.contestGain, 4],
    ['--fork-keep', p.forkKeep, 0.25], ['--base-depth', p.baseDepth, 4], ['--depth-gain', p.depthGain, 1],
    ['--tree-floor', p.treeFloor, 1],
  ];
}

/** The score flags for a v3 parameter set (minDepth has no flag: it must be 1). */
export function v3Flags(p: V3Params, o: V3FlagOptions = {}): string[] {
  // v3 is no longer the default rule: every form names it ('default' as 'spaced').
  return ruleFlags(o.rule === 'joined' ? ['--rule=v3'] : ['--rule', 'v3'], contestFlowSettings(p), p, o);
}

/** The score flags for a v4 parameter set: `--rule v4` or `--rule=v4` (v4 is no longer the default rule: 'default' is taken as 'spaced'). */
export function v4Flags(p: V3Params, o: V3FlagOptions = {}): string[] {
  return ruleFlags(o.rule === 'joined' ? ['--rule=v4'] : ['--rule', 'v4'], contestFlowSettings(p), p, o);
}

/** The score flags for a v5 parameter set: no --rule flag ('default', v5 is the default), `--rule v5` or `--rule=v5`. */
export function v5Flags(p: V3Params, o: V3FlagOptions = {}): string[] {
  const head = o.rule === 'joined' ? ['--rule=v5'] : o.rule === 'spaced' ? ['--rule', 'v5'] : [];
  return ruleFlags(head, contestFlowSettings(p), p, o);
}

/** `trace-alloc score FILE --scores --backend cpu [v3 flags]`, parsed; throws with stderr on a non-zero exit. */
export function scoreFileV3(file: string, params: V3Params, opts: V3FlagOptions = {}): V3Plan {
  const args = ['score', file, '--scores', '--backend', 'cpu', ...v3Flags(params, opts)];
  const r = runCli(args);
  if (r.status !== 0) throw new Error(`trace-alloc ${args.join(' ')} exited ${r.status}: ${r.stderr.trim()}`);
  return JSON.parse(r.stdout) as V3Plan;
}
