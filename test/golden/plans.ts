/**
 * Golden plans: what the CLI (`trace-alloc score - --scores --backend cpu`) and the live-forest
 * service (`trace-alloc serve --stdio --backend cpu`) answered, byte for byte, on the random
 * forests of test/reference/ under every rule, both budget modes and random settings. The
 * inputs (forest text, flags, request lines) are stored with the answers, so the comparison
 * (test/golden-plans.test.ts) does not depend on fast-check drawing the same forests again.
 *
 * `record.ts` draws the cases and writes test/fixtures/golden-plans.json.gz from the code as it
 * is; this file holds the drawing, the runners both use, and the fixture's format.
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { gunzipSync } from 'node:zlib';
import fc from 'fast-check';
import { caseArb, indistinguishableCaseArb } from '../reference/arbitrary.js';
import { deepCaseArb, mixedCaseArb } from '../reference/arbitrary-v3.js';
import { CLI, REPO_ROOT } from '../reference/cli.js';
import type { SpecForest } from '../reference/spec.js';
import { Rng } from '../../src/util/random.js';

export const FIXTURE = new URL('../fixtures/golden-plans.json.gz', import.meta.url);

export type Rule = 'v1' | 'v2' | 'v3';
export const GOLDEN_RULES: readonly Rule[] = ['v1', 'v2', 'v3'];

/** One `trace-alloc score - ...` run: forest `forest` of the file on standard input, the flags after `-`. */
export interface ScoreRun {
  name: string;
  forest: number;
  args: string[];
  status: number | null;
  stdout: string;
  /** Only for a run that failed (its one-line message is part of the contract). */
  stderr?: string;
}

/** One `trace-alloc serve --stdio --backend cpu` session: request lines in, response lines out. */
export interface ServeSession {
  name: string;
  requests: string[];
  responses: string[];
}

export interface GoldenFile {
  /** What made it (the command and the commit it ran on). */
  recordedWith: string;
  /** Forest texts (JSON or JSON Lines), each scored once per rule. */
  forests: string[];
  score: ScoreRun[];
  serve: ServeSession[];
}

export function readGolden(): GoldenFile {
  return JSON.parse(gunzipSync(readFileSync(FIXTURE)).toString('utf8')) as GoldenFile;
}

// ------------------------------------------------------------------ cases

export type Budget = { kind: 'perTree'; budget: number } | { kind: 'global'; spare: number; minPerTree: number };

/** Settings of one run; a field left undefined is left to its default (no flag, no request field). */
export interface Settings {
  rule: Rule;
  alpha?: number;
  tau?: number;
  pruneRatio?: number;
  widen?: number;
  contestGain?: number;
  forkKeep?: number;
  treeFloor?: number;
  baseDepth?: number;
  depthGain?: number;
  maxDepth?: number;
  budget: Budget;
}

/** A forest drawn from test/reference/'s generators, its file text, and settings for each rule. */
export interface Case {
  name: string;
  forest: SpecForest;
  format: 'json' | 'jsonl';
  settings: Record<Rule, Settings>;
}

const sometimes = <T>(arb: fc.Arbitrary<T>): fc.Arbitrary<T | undefined> => fc.oneof(fc.constant(undefined), arb);
const pow10 = (min: number, max: number) => fc.double({ min, max, noNaN: true }).map((e) => 10 ** e);

const budgetArb: fc.Arbitrary<Budget> = fc.oneof(
  { arbitrary: fc.record({ kind: fc.constant('perTree' as const), budget: fc.oneof(fc.constant(16), fc.integer({ min: 0, max: 200 }), fc.constant(1000)) }), weight: 5 },
  { arbitrary: fc.constant({ kind: 'perTree' as const, budget: 2 ** 31 - 1 }), weight: 1 },
  { arbitrary: fc.record({ kind: fc.constant('global' as const), spare: fc.integer({ min: 0, max: 600 }), minPerTree: fc.oneof(fc.constant(1), fc.integer({ min: 0, max: 3 })) }), weight: 5 },
  { arbitrary: fc.record({ kind: fc.constant('global' as const), spare: fc.integer({ min: 2 ** 30, max: 2 ** 31 - 1000 }), minPerTree: fc.constantFrom(0, 1) }), weight: 1 },
);

function settingsArb(rule: Rule): fc.Arbitrary<Settings> {
  const shared = {
    alpha: sometimes(fc.oneof(pow10(-3, 3), fc.constantFrom(1e-300, 1e300))),
    tau: sometimes(fc.oneof(fc.constant(0.01), pow10(-2, 2), pow10(-4, -1.5))),
    pruneRatio: sometimes(fc.oneof(fc.constant(0), fc.double({ min: 0, max: 0.99, noNaN: true }))),
    baseDepth: sometimes(fc.integer({ min: 1, max: 8 })),
    depthGain: sometimes(fc.oneof(fc.constant(0), fc.double({ min: 0, max: 3, noNaN: true }), pow10(-3, -1))),
    maxDepth: sometimes(fc.integer({ min: 1, max: 40 })),
    budget: budgetArb,
  };
  const gain = sometimes(fc.oneof(fc.constant(0), fc.double({ min: 0, max: 20, noNaN: true }), fc.constantFrom(1e6, 1e-6)));
  const floor = sometimes(fc.oneof(pow10(-6, 6), fc.constantFrom(1e6, 1e-300)));
  const widen = sometimes(fc.oneof(fc.constantFrom(0, 1), fc.double({ min: 0, max: 1, noNaN: true })));
  if (rule === 'v1') return fc.record({ rule: fc.constant(rule), ...shared, widen });
  if (rule === 'v2') return fc.record({ rule: fc.constant(rule), ...shared, contestGain: gain, treeFloor: floor });
  const forkKeep = sometimes(fc.oneof(fc.constantFrom(0, 1), fc.double({ min: 0, max: 1, noNaN: true })));
  return fc.record({ rule: fc.constant(rule), ...shared, contestGain: gain, forkKeep, treeFloor: floor });
}

/** Every setting at its default, a budget per tree: the plan most callers get. */
const defaultsArb = (rule: Rule): fc.Arbitrary<Settings> => fc.constant({ rule, budget: { kind: 'perTree', budget: 16 } });

/** A drawn forest; `tau`: the τ it was drawn for (the deep chains: ψ leaves the float64 range only at a small τ). */
interface Drawn { forest: SpecForest; format: 'json' | 'jsonl'; kind: string; tau?: number }

const forestArb: fc.Arbitrary<Drawn> = fc.oneof(
  { arbitrary: caseArb.map((c) => ({ forest: c.forest, format: c.format, kind: 'v1-forest' })), weight: 8 },
  { arbitrary: indistinguishableCaseArb.map((c) => ({ forest: c.forest, format: c.format, kind: 'ties' })), weight: 2 },
  { arbitrary: mixedCaseArb.map((c) => ({ forest: c.forest, format: c.format, kind: 'v3-forest' })), weight: 8 },
  { arbitrary: deepCaseArb.map((c) => ({ forest: c.forest, format: c.format, kind: 'deep', tau: c.params.tau })), weight: 2 },
);

const caseArbitrary = fc.record({
  drawn: forestArb,
  v1: fc.oneof({ arbitrary: settingsArb('v1'), weight: 4 }, { arbitrary: defaultsArb('v1'), weight: 1 }),
  v2: fc.oneof({ arbitrary: settingsArb('v2'), weight: 4 }, { arbitrary: defaultsArb('v2'), weight: 1 }),
  v3: fc.oneof({ arbitrary: settingsArb('v3'), weight: 4 }, { arbitrary: defaultsArb('v3'), weight: 1 }),
});

/** The cases, drawn with a fixed seed. */
export function drawCases(count: number, seed: number): Case[] {
  return fc.sample(caseArbitrary, { numRuns: count, seed }).map(({ drawn, v1, v2, v3 }, i) => {
    const tau = (s: Settings): Settings => (drawn.tau === undefined ? s : { ...s, tau: drawn.tau });
    return { name: `${i}-${drawn.kind}`, forest: drawn.forest, format: drawn.format, settings: { v1: tau(v1), v2: tau(v2), v3: tau(v3) } };
  });
}

export function forestText(forest: SpecForest, format: 'json' | 'jsonl'): string {
  return format === 'json' ? JSON.stringify(forest) : forest.trees.map((t) => JSON.stringify(t)).join('\n') + '\n';
}

/** Trees with a live root: some node is not terminal. */
export function liveTrees(forest: SpecForest): number {
  return forest.trees.filter((t) => t.nodes.some((n) => n.terminal !== true)).length;
}

/** The total of a global budget: μ per live tree plus the spare part (capped at 2³¹ − 1). */
function totalOf(budget: Extract<Budget, { kind: 'global' }>, trees: number): number {
  return Math.min(2 ** 31 - 1, budget.minPerTree * trees + budget.spare);
}

/** Forests above this many nodes (the deep chains) are planned without `--scores`: their scores would fill most of the fixture. */
const SCORES_UP_TO_NODES = 500;

function nodeCount(forest: SpecForest): number {
  return forest.trees.reduce((n, t) => n + t.nodes.length, 0);
}

/** `trace-alloc score` flags of `s` (flags only for settings away from their default). */
export function scoreArgs(s: Settings, forest: SpecForest): string[] {
  const args = [...(nodeCount(forest) <= SCORES_UP_TO_NODES ? ['--scores'] : []), '--backend', 'cpu', '--rule', s.rule];
  const put = (flag: string, value: number | undefined) => { if (value !== undefined) args.push(flag, String(value)); };
  put('--alpha', s.alpha); put('--tau', s.tau); put('--prune-ratio', s.pruneRatio); put('--widen', s.widen);
  put('--contest-gain', s.contestGain); put('--fork-keep', s.forkKeep); put('--tree-floor', s.treeFloor);
  put('--base-depth', s.baseDepth); put('--depth-gain', s.depthGain); put('--max-depth', s.maxDepth);
  if (s.budget.kind === 'perTree') put('--budget', s.budget.budget);
  else { put('--total-budget', totalOf(s.budget, liveTrees(forest))); put('--min-per-tree', s.budget.minPerTree); }
  return args;
}

/** The allocation fields of a `plan` request for `s` (α, τ and the rule are `set-params`). */
export function planFields(s: Settings, trees: number, ids: readonly string[]): Record<string, unknown> {
  const fields: Record<string, unknown> = {};
  for (const key of ['pruneRatio', 'widen', 'contestGain', 'forkKeep', 'treeFloor', 'baseDepth', 'depthGain', 'maxDepth'] as const) {
    if (s[key] !== undefined) fields[key] = s[key];
  }
  if (s.budget.kind === 'global') { fields.totalBudget = totalOf(s.budget, trees); fields.minPerTree = s.budget.minPerTree; }
  else if (s.budget.budget % 3 === 1) fields.budget = Object.fromEntries(ids.map((id, t) => [id, (s.budget as { budget: number }).budget % (7 + t)]));
  else fields.budget = s.budget.budget;
  return fields;
}

// ------------------------------------------------------------------ runners

/** `trace-alloc score - ARGS` with `stdin`. */
export function runScore(stdin: string, args: readonly string[]): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, 'score', '-', ...args], { cwd: REPO_ROOT });
    const out: Buffer[] = [], err: Buffer[] = [];
    child.stdout.on('data', (b: Buffer) => out.push(b));
    child.stderr.on('data', (b: Buffer) => err.push(b));
    child.on('error', reject);
    child.on('close', (status) => resolve({ status, stdout: Buffer.concat(out).toString('utf8'), stderr: Buffer.concat(err).toString('utf8') }));
    child.stdin.end(stdin);
  });
}

/**
 * A `serve --stdio --backend cpu` process driven one request at a time: `request` writes a line
 * and resolves with the response line (the service answers every request, in order).
 */
export class ServeProcess {
  private readonly child = spawn(process.execPath, [CLI, 'serve', '--stdio', '--backend', 'cpu'], { cwd: REPO_ROOT });
  private buffered = '';
  private waiting: { resolve: (line: string) => void; reject: (err: Error) => void }[] = [];
  private readonly lines: string[] = [];
  private stderr = '';

  constructor() {
    this.child.on('close', () => {
      for (const w of this.waiting.splice(0)) w.reject(new Error(`serve exited before answering: ${this.stderr}`));
    });
    this.child.stdout.setEncoding('utf8');
    this.child.stdout.on('data', (chunk: string) => {
      this.buffered += chunk;
      for (let nl = this.buffered.indexOf('\n'); nl >= 0; nl = this.buffered.indexOf('\n')) {
        const line = this.buffered.slice(0, nl);
        this.buffered = this.buffered.slice(nl + 1);
        const next = this.waiting.shift();
        if (next) next.resolve(line); else this.lines.push(line);
      }
    });
    this.child.stderr.setEncoding('utf8');
    this.child.stderr.on('data', (chunk: string) => { this.stderr += chunk; });
  }

  request(line: string): Promise<string> {
    const got = new Promise<string>((resolve, reject) => {
      const early = this.lines.shift();
      if (early !== undefined) { resolve(early); return; }
      this.waiting.push({ resolve, reject });
    });
    this.child.stdin.write(`${line}\n`);
    return got;
  }

  close(): Promise<void> {
    return new Promise((resolve) => { this.child.on('close', () => resolve()); this.child.stdin.end(); });
  }
}

/** All of `requests` through one `serve --stdio --backend cpu`, written at once; the response lines. */
export function replaySession(requests: readonly string[]): Promise<string[]> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, 'serve', '--stdio', '--backend', 'cpu'], { cwd: REPO_ROOT });
    const out: Buffer[] = [];
    let stderr = '';
    child.stdout.on('data', (b: Buffer) => out.push(b));
    child.stderr.on('data', (b: Buffer) => { stderr += b.toString('utf8'); });
    child.on('error', reject);
    child.on('close', (status) => {
      const text = Buffer.concat(out).toString('utf8');
      if (status !== 0) reject(new Error(`serve exited ${status}: ${stderr}`));
      else resolve(text.length === 0 ? [] : text.replace(/\n$/, '').split('\n'));
    });
    child.stdin.end(requests.map((r) => `${r}\n`).join(''));
  });
}

/** Runs `tasks` with at most `width` in flight, results in order. */
export async function inParallel<T>(tasks: readonly (() => Promise<T>)[], width: number): Promise<T[]> {
  const results: T[] = new Array(tasks.length);
  let next = 0;
  const worker = async () => { while (next < tasks.length) { const i = next++; results[i] = await tasks[i](); } };
  await Promise.all(Array.from({ length: Math.min(width, tasks.length) }, worker));
  return results;
}

// ------------------------------------------------------------------ live sessions

/**
 * One live session of the cases of one embedding dimension: for each case, its forest added,
 * then for each rule in turn the rule and α, τ set; a plan (with scores for a small forest);
 * then the changes a trainer makes between plans (feedback on a few nodes, a finished rollout,
 * new nodes, a stopped branch), each followed by a plan (the first with the same settings: the
 * incremental paths), the other budget mode, the two phases of a sharded global budget on one
 * shard, and settings the rule refuses; at the end the trees removed. Requests that depend on
 * an answer (the shares) are built from it, so the session runs one request at a time.
 */
export async function recordSession(name: string, cases: readonly Case[], seed: number): Promise<ServeSession> {
  const serve = new ServeProcess();
  const requests: string[] = [];
  const responses: string[] = [];
  let id = 0;
  const send = async (request: Record<string, unknown>): Promise<Record<string, any>> => {
    const line = JSON.stringify({ id: id++, ...request });
    const answer = await serve.request(line);
    requests.push(line);
    responses.push(answer);
    return JSON.parse(answer) as Record<string, any>;
  };
  const rng = new Rng(seed);
  for (const c of cases) {
    const ids = c.forest.trees.map((_, t) => `${c.name}.${t}`);
    const trees = c.forest.trees.map((t, i) => ({ ...t, id: ids[i], nodes: t.nodes.map((n) => ({ ...n })) }));
    const live = () => liveTrees({ trees });
    const scores = nodeCount(c.forest) <= SCORES_UP_TO_NODES;
    await send({ op: 'add-tree', trees });
    for (const rule of GOLDEN_RULES) {
      const s = c.settings[rule];
      await send({ op: 'set-params', rule, alpha: s.alpha ?? 1, tau: s.tau ?? 0.5 });
      const fields = planFields(s, live(), ids);
      await send({ op: 'plan', ...fields, scores });
      const anyNode = () => { const t = rng.int(0, trees.length - 1); return { t, tree: ids[t], node: rng.int(0, trees[t].nodes.length - 1) }; };
      // Feedback on one or two nodes: only their groups are re-scored.
      const updates = Array.from({ length: rng.int(1, 2) }, () => {
        const { tree, node } = anyNode();
        return { tree, node, reward: rng.int(0, 2) / 2, visits: rng.int(0, 4) };
      });
      await send({ op: 'update', updates });
      await send({ op: 'plan', ...fields });
      await send({ op: 'plan', ...fields, changed: true });
      const done = anyNode();
      await send({ op: 'finish-rollout', tree: done.tree, leaf: done.node, reward: rng.int(0, 1) });
      const grow = anyNode();
      const dim = c.forest.dim ?? 0;
      const newNode = { parent: grow.node, reward: rng.int(0, 1), visits: rng.int(0, 2), embedding: Array.from({ length: dim }, () => Math.round(rng.normal() * 100) / 100) };
      await send({ op: 'add-nodes', tree: grow.tree, nodes: [newNode] });
      trees[grow.t].nodes = [...trees[grow.t].nodes, newNode];
      await send({ op: 'plan', ...fields, changed: true });
      const stop = anyNode();
      await send({ op: 'update', tree: stop.tree, node: stop.node, terminal: true });
      trees[stop.t].nodes[stop.node] = { ...trees[stop.t].nodes[stop.node], terminal: true };
      const other: Settings = { ...s, budget: s.budget.kind === 'global' ? { kind: 'perTree', budget: 1 + rng.int(0, 40) } : { kind: 'global', spare: rng.int(0, 80), minPerTree: rng.int(0, 2) } };
      await send({ op: 'plan', ...planFields(other, live(), ids), minDepth: rng.int(0, 2), changed: true });
      const floor = rule === 'v1' ? {} : { treeFloor: s.treeFloor ?? 0.5 };
      const shares = await send({ op: 'global-shares', ...floor });
      if (shares.ok === true) {
        const global = planFields({ ...s, budget: { kind: 'global', spare: rng.int(0, 60), minPerTree: 1 } }, live(), ids);
        await send({ op: 'plan-shard', ...global, ...floor, shares: [shares.result], shard: 0 });
      }
      // Settings this rule refuses (or, v1's own q0, accepts), answered by option validation.
      if (rule === 'v1') { await send({ op: 'plan', treeFloor: 0.5 }); await send({ op: 'plan', treeFloor: 1e-3, forkKeep: 0.5 }); await send({ op: 'plan', treeFloor: 1e-3, changed: true }); }
      if (rule === 'v2') await send({ op: 'plan', forkKeep: 0.5 });
      await send({ op: 'plan', contestGain: -1 });
    }
    await send({ op: 'remove-tree', trees: ids });
  }
  await serve.close();
  return { name, requests, responses };
}
