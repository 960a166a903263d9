import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { PlanJson } from '../src/allocate/plan.js';
import { runCli } from './cli-helpers.js';

const dir = mkdtempSync(join(tmpdir(), 'trace-alloc-cli-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const forest = {
  dim: 2,
  trees: [
    {
      id: 'q17',
      nodes: [
        { parent: -1, reward: 0.5, visits: 4, uncertainty: 0.2, embedding: [1, 0] },
        { parent: 0, reward: 1, visits: 2, uncertainty: 0.1, embedding: [1, 0.01] },
        { parent: 0, reward: 0, visits: 2, uncertainty: 0.1, embedding: [1, 0.02] },
        { parent: 0, reward: 0.5, visits: 2, uncertainty: 0.1, embedding: [0, 1] },
        { parent: 1, terminal: true, reward: 1, visits: 1, embedding: [1, 1] },
      ],
    },
    { id: 'done', nodes: [{ parent: -1, terminal: true, embedding: [0, 0] }] },
  ],
};
const file = join(dir, 'forest.json');
writeFileSync(file, JSON.stringify(forest));

function plan(stdout: string): PlanJson {
  return JSON.parse(stdout) as PlanJson;
}

describe('trace-alloc score', () => {
  it('writes the SPEC §5 plan to stdout', () => {
    const r = runCli(['score', file, '--backend', 'cpu']);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const p = plan(r.stdout);
    expect(p.params).toEqual({ alpha: 1, tau: 0.5, rule: 'v5' });
    expect(p.trees.map((t) => t.id)).toEqual(['q17', 'done']);
    const [q, done] = p.trees;
    expect(Object.keys(q)).toEqual(['id', 'budget', 'unallocated', 'allocations', 'pruned']);
    expect(q.budget).toBe(16);
    expect(q.allocations.reduce((s, a) => s + a.branches, 0)).toBe(16);
    expect(q.allocations.map((a) => a.node)).toEqual([...q.allocations.map((a) => a.node)].sort((a, b) => a - b));
    expect(done).toEqual({ id: 'done', budget: 16, unallocated: 16, allocations: [], pruned: [] });
  });

  it('adds scores and groups with --scores, and honours the scoring flags', () => {
    const r = runCli(['score', file, '--scores', '--alpha', '2', '--tau=0.25', '--budget', '7', '--backend', 'cpu']);
    expect(r.code).toBe(0);
    const q = plan(r.stdout).trees[0];
    expect(plan(r.stdout).params).toEqual({ alpha: 2, tau: 0.25, rule: 'v5' });
    expect(q.scores?.map((s) => s.node)).toEqual([1, 2, 3, 4]);
    expect(Object.keys(q.scores![0])).toEqual(['node', 'contrast', 'weight', 'gradAlpha', 'gradTau']);
    expect(q.groups).toEqual([
      { parent: 0, intensity: expect.any(Number) },
      { parent: 1, intensity: 0 },
    ]);
    expect(q.allocations.reduce((s, a) => s + a.branches, 0)).toBe(7);
  });

  it('reads standard input and JSON Lines', () => {
    const stdin = runCli(['score', '-', '--backend', 'cpu'], JSON.stringify(forest));
    expect(stdin.code).toBe(0);
    const jsonl = join(dir, 'forest.jsonl');
    writeFileSync(jsonl, forest.trees.map((t) => JSON.stringify(t)).join('\n') + '\n');
    const lines = runCli(['score', jsonl, '--backend', 'cpu']);
    expect(lines.code).toBe(0);
    expect(plan(lines.stdout)).toEqual(plan(stdin.stdout));
  });

  it('splits a global budget across live trees', () => {
    const r = runCli(['score', file, '--total-budget', '10', '--min-per-tree', '2', '--backend', 'cpu']);
    expect(r.code).toBe(0);
    const p = plan(r.stdout);
    expect(p.trees.map((t) => t.budget)).toEqual([10, 0]);
    expect(p.trees[0].allocations.reduce((s, a) => s + a.branches, 0)).toBe(10);
  });

  it('writes --out atomically and leaves no file behind on an error', () => {
    const out = join(dir, 'plan.json');
    expect(runCli(['score', file, '--out', out, '--backend', 'cpu']).code).toBe(0);
    expect(plan(readFileSync(out, 'utf8')).trees).toHaveLength(2);
    const bad = join(dir, 'bad.json');
    writeFileSync(bad, JSON.stringify({ dim: 2, trees: [{ nodes: [{ parent: -1, embedding: [1] }] }] }));
    const missing = join(dir, 'never.json');
    const r = runCli(['score', bad, '--out', missing, '--backend', 'cpu']);
    expect(r.code).toBe(2);
    expect(existsSync(missing)).toBe(false);
  });

  const bad: Array<[string, string[], RegExp]> = [
    ['an unknown flag', ['--budgte', '3'], /unknown flag --budgte/],
    ['a negative budget', ['--budget', '-1'], /--budget must be an integer >= 0/],
    ['a fractional budget', ['--budget', '1.5'], /--budget must be an integer/],
    ['both budget modes', ['--budget', '3', '--total-budget', '9'], /exclude each other/],
    ['--min-per-tree alone', ['--min-per-tree', '2'], /needs --total-budget/],
    ['a prune ratio of 1', ['--prune-ratio', '1'], /--prune-ratio must be in \[0, 1\)/],
    ['a zero tau', ['--tau', '0'], /--tau must be a number > 0/],
    ['a bad backend', ['--backend', 'tpu'], /--backend must be one of auto, gpu, cpu/],
    ['a flag without its value', ['--alpha'], /--alpha needs a value/],
    ['a total budget below the per-tree floor', ['--total-budget', '1', '--min-per-tree', '2'], /below minPerTree/],
  ];
  for (const [name, flags, message] of bad) {
    it(`exits 2 with one line on ${name}`, () => {
      const r = runCli(['score', file, ...(flags.includes('--backend') ? [] : ['--backend', 'cpu']), ...flags]);
      expect(r.code).toBe(2);
      expect(r.stdout).toBe('');
      expect(r.stderr).toMatch(message);
      expect(r.stderr.trimEnd().split('\n')).toHaveLength(1);
    });
  }

  it('exits 2 naming the tree, node and field of bad input', () => {
    const bad = join(dir, 'nan.json');
    writeFileSync(bad, '{"dim":0,"trees":[{"id":"x","nodes":[{"parent":-1},{"parent":0,"visits":-2}]}]}');
    const r = runCli(['score', bad, '--backend', 'cpu']);
    expect(r.code).toBe(2);
    expect(r.stderr).toBe('trace-alloc: tree "x" (#0), node 1, field "visits": must be an integer >= 0, got -2\n');
    expect(runCli(['score', join(dir, 'absent.json')]).code).toBe(2);
    writeFileSync(join(dir, 'empty.json'), '');
    expect(runCli(['score', join(dir, 'empty.json')]).stderr).toMatch(/empty/);
  });

  it('prints help and rejects unknown commands', () => {
    expect(runCli(['score', '--help']).stdout).toMatch(/--total-budget N/);
    expect(runCli(['frobnicate']).code).toBe(2);
  });
});

describe('trace-alloc demo', () => {
  it('prints a summary with the time per phase', () => {
    const view = join(dir, 'demo-view.html');
    const r = runCli(['demo', '--trees', '64', '--seed', '3', '--backend', 'cpu', '--view', view, '--compare-seeds', '0']);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(`view      ${view}`);
    expect(readFileSync(view, 'utf8')).toMatch(/^<!doctype html>/i);
    expect(r.stdout).toMatch(/rule v5 on 64 synthetic rollout trees \(seed 3, dim 64\), scored on cpu/);
    for (const phase of ['generate + pack', 'score (cpu)', 'allocate', 'total']) expect(r.stdout).toContain(phase);
    expect(r.stdout).toMatch(/budget +1,024 rollouts for the whole forest \(--total-budget; 16\.0 per tree on average\): 1,024 placed/);
    expect(r.stdout).toMatch(/forks below the root that received the most rollouts/);
    expect(r.stdout).not.toMatch(/simulated check/);
  });

  it('keeps a budget per tree when asked for one', () => {
    const r = runCli(['demo', '--trees', '16', '--seed', '3', '--backend', 'cpu', '--budget', '8', '--view', join(dir, 'demo-b.html'), '--compare-seeds', '0']);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/budget +128 rollouts \(--budget, the same for every tree\): 128 placed/);
  });

  it('writes its view to $TMPDIR/trace-alloc-demo.html without --view', () => {
    const own = mkdtempSync(join(dir, 'tmp-'));
    const r = runCli(['demo', '--trees', '8', '--backend', 'cpu', '--compare-seeds', '0'], undefined, { TMPDIR: own });
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(`view      ${join(own, 'trace-alloc-demo.html')}`);
    expect(existsSync(join(own, 'trace-alloc-demo.html'))).toBe(true);
  });
});

describe('trace-alloc edge cases found in review', () => {
  it('checks --out before any work and names it', () => {
    const intoFile = runCli(['score', file, '--backend', 'cpu', '--out', join(file, 'plan.json')]);
    expect(intoFile.code).toBe(2);
    expect(intoFile.stderr).toMatch(/^trace-alloc: --out .*: cannot write there \(ENOTDIR\)\n$/);
    const folder = runCli(['score', file, '--backend', 'cpu', '--out', dir]);
    expect(folder.code).toBe(2);
    expect(folder.stderr).toMatch(/is a folder/);
  });

  it('creates missing folders for --out only when the run succeeds', () => {
    const nested = join(dir, 'new', 'deeper', 'plan.json');
    expect(runCli(['score', join(dir, 'absent.json'), '--out', nested]).code).toBe(2);
    expect(existsSync(join(dir, 'new'))).toBe(false);
    expect(runCli(['score', file, '--backend', 'cpu', '--out', nested]).code).toBe(0);
    expect(existsSync(nested)).toBe(true);
  });

  it('rejects budgets and depths beyond the Int32 plan arrays as bad flags', () => {
    expect(runCli(['score', file, '--backend', 'cpu', '--budget', '3000000000']).stderr).toMatch(/budget must be an integer in \[0, 2147483647\]/);
    const deep = runCli(['score', file, '--backend', 'cpu', '--base-depth', '3000000000']);
    expect(deep.code).toBe(2);
  });

  it('exits 2 with one line on stderr when no command is given', () => {
    const r = runCli([]);
    expect(r.code).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr.trimEnd().split('\n')).toHaveLength(1);
  });

  it('reads a file that starts with a UTF-8 byte-order mark', () => {
    const bom = join(dir, 'bom.json');
    writeFileSync(bom, Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(JSON.stringify(forest))]));
    expect(runCli(['score', bom, '--backend', 'cpu']).code).toBe(0);
  });

  it('names dim when the embedding matrix cannot exist', () => {
    const huge = join(dir, 'huge-dim.json');
    writeFileSync(huge, '{"dim":10000000000,"trees":[{"nodes":[{}]}]}');
    const r = runCli(['score', huge, '--backend', 'cpu']);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/field "dim"/);
  });
});
