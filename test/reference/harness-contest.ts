/**
 * What the v3 and v4 conformance suites (test/conformance-v3.test.ts, test/conformance-v4.test.ts)
 * do alike around the references: write a forest as the CLI reads it (JSON or JSON Lines), read
 * the same bytes back for the reference, run `trace-alloc score FILE --scores --backend cpu` with a
 * rule's flags, keep a failing forest with its command line, and compare numbers with the ones the
 * document prints.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'vitest';
import { runCli } from './cli.js';
import type { SpecForest, SpecTree } from './spec.js';
import type { V3Case } from './arbitrary-v3.js';
import { compareV3, type TiesFollowed } from './compare-v3.js';
import { knownDisagreements, knownSkips, type KnownDisagreement } from './known-v3.js';
import type { V3Params, V3Plan, V3Result } from './v3.js';

export type ForestFormat = 'json' | 'jsonl';

export function forestText(forest: SpecForest, format: ForestFormat): string {
  return format === 'json' ? jsonKeepingNegativeZero(forest) : forest.trees.map((t) => jsonKeepingNegativeZero(t)).join('\n') + '\n';
}

/** JSON.stringify, except that −0 is written `-0` (JSON.stringify writes it `0`, so a forest drawn with −0 would reach the library as +0). */
function jsonKeepingNegativeZero(value: unknown): string {
  const mark = 'trace-alloc:negative-zero';
  return JSON.stringify(value, (_, v: unknown) => (Object.is(v, -0) ? mark : v)).split(`"${mark}"`).join('-0');
}

/** The forest as the library reads it back from `text` (the reference reads the very same bytes). */
export function readBack(text: string, format: ForestFormat, dim: number | undefined): SpecForest {
  return format === 'json' ? (JSON.parse(text) as SpecForest) : { dim, trees: text.trim().split('\n').map((l) => JSON.parse(l) as SpecTree) };
}

let kept = 0;

/** Keeps a failing forest and what was run on it under $TMPDIR/trace-alloc-conformance/; returns the path without extension. */
export function keepFailure(tag: string, format: string, text: string, what: string, problems: string[]): string {
  const dir = join(tmpdir(), 'trace-alloc-conformance');
  mkdirSync(dir, { recursive: true });
  const base = join(dir, `${tag}-failure-${process.pid}-${kept++}`);
  writeFileSync(`${base}.${format}`, text);
  writeFileSync(`${base}.txt`, `${what}\n\n${problems.join('\n')}\n`);
  return base;
}

/** Runs the CLI on forests written into a private folder (`dispose` removes it). */
export interface CliRunner {
  plan(forest: SpecForest, flags: readonly string[], format?: ForestFormat): { plan: V3Plan; text: string; args: string[] };
  dispose(): void;
}

export function cliRunner(tag: string): CliRunner {
  const workDir = mkdtempSync(join(tmpdir(), `trace-alloc-conf-${tag}-`));
  let files = 0;
  return {
    plan(forest, flags, format = 'json') {
      const text = forestText(forest, format);
      const file = join(workDir, `forest-${files++}.${format}`);
      writeFileSync(file, text);
      const args = ['score', file, '--scores', '--backend', 'cpu', ...flags];
      const r = runCli(args);
      if (r.status !== 0) throw new Error(`trace-alloc ${args.join(' ')} exited ${r.status}: ${r.stderr.trim()}`);
      return { plan: JSON.parse(r.stdout) as V3Plan, text, args };
    },
    dispose: () => rmSync(workDir, { recursive: true, force: true }),
  };
}

/** |got − printed| within half a unit of the printed number's last decimal. */
export function expectPrinted(got: readonly number[], printed: readonly number[]): void {
  expect(got.length).toBe(printed.length);
  printed.forEach((p, i) => {
    const decimals = (String(p).split('.')[1] ?? '').length;
    expect(Math.abs(got[i] - p), `#${i}: ${got[i]} printed as ${p}`).toBeLessThanOrEqual(0.5 * 10 ** -decimals + 1e-12);
  });
}

/** What a suite counts as it holds plans to a reference: forests, trees, and the ties it followed. */
export interface ReferenceTally extends TiesFollowed {
  forests: number;
  trees: number;
}

/** Holds a suite's plans to one rule's reference, counting into `totals` and keeping every case seen. */
export interface ReferenceHolder {
  /** Holds one case's plan (`got`) to the reference; throws with the kept forest on any disagreement. */
  hold(c: V3Case, text: string, got: V3Plan, what: string): void;
  readonly knownCounts: Partial<Record<KnownDisagreement, number>>;
  readonly cases: V3Case[];
  readonly refs: V3Result[];
}

export function referenceHolder(rule: string, reference: (forest: SpecForest, p: V3Params) => V3Result,
  totals: ReferenceTally): ReferenceHolder {
  const knownCounts: Partial<Record<KnownDisagreement, number>> = {};
  const cases: V3Case[] = [];
  const refs: V3Result[] = [];
  const hold = (c: V3Case, text: string, got: V3Plan, what: string): void => {
    const forest = readBack(text, c.format, c.forest.dim);
    const ref = reference(forest, c.params);
    const known = knownDisagreements(forest, c.params, ref);
    const { problems, followed } = compareV3(got, forest, c.params, ref, knownSkips(known, c.params, forest.trees.length));
    if (problems.length > 0) {
      const where = keepFailure(rule, c.format, text, what, problems);
      throw new Error(`${problems.length} disagreement(s) with the ${rule} reference (kept at ${where}):\n${problems.slice(0, 20).join('\n')}`);
    }
    totals.forests++;
    totals.trees += forest.trees.length;
    for (const k of ['budget', 'prune', 'rounding', 'depth'] as const) totals[k] += followed[k];
    for (const kind of known.values()) knownCounts[kind] = (knownCounts[kind] ?? 0) + 1;
    cases.push(c);
    refs.push(ref);
  };
  return { hold, knownCounts, cases, refs };
}
