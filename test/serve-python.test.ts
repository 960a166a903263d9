import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { PYTHON } from './python.js';

const root = fileURLToPath(new URL('..', import.meta.url));
const cli = `${root}dist/cli/main.js`;

function requireBuiltCli(): void {
  if (!existsSync(cli)) {
    throw new Error(`${cli} is missing: build first (npm test runs "tsc -p tsconfig.json" before vitest; locally: npm run build)`);
  }
}

function serve(input: string, backend = 'cpu') {
  requireBuiltCli();
  return spawnSync(process.execPath, [cli, 'serve', '--stdio', '--backend', backend], { input, encoding: 'utf8', timeout: 60_000 });
}

describe('trace-alloc serve --stdio (the built CLI)', () => {
  it('answers every line, in order, survives garbage, and exits 0 at end of input', () => {
    const lines = [
      JSON.stringify({ id: 1, op: 'add-tree', tree: { id: 'a', nodes: [{ embedding: [1, 0] }, { parent: 0, embedding: [1, 0.1], visits: 1, reward: 1 }, { parent: 0, embedding: [0, 1] }] } }),
      'this is not json',
      '\u0000\u0001{{{',
      JSON.stringify({ id: 2, op: 'update', tree: 'a', node: 7, reward: 1 }),
      '',
      JSON.stringify({ id: 3, op: 'plan', budget: 6 }),
      JSON.stringify({ id: 4, op: 'stats' }),
    ];
    const run = serve(`${lines.join('\n')}\n`);
    expect(run.status, run.stderr).toBe(0);
    const replies = run.stdout.trim().split('\n').map((l) => JSON.parse(l) as { id: unknown; ok: boolean; error?: { code: string }; result?: any });
    expect(replies.map((r) => [r.id, r.ok, r.error?.code])).toEqual([
      [1, true, undefined], [null, false, 'parse_error'], [null, false, 'parse_error'], [2, false, 'unknown_node'], [3, true, undefined], [4, true, undefined],
    ]);
    expect(replies[4].result.trees[0].allocations.reduce((s: number, a: { branches: number }) => s + a.branches, 0)).toBe(6);
    expect(replies[5].result).toMatchObject({ trees: 1, nodes: 3 });
  });

  it('rejects a missing --stdio with a usage error (exit 2)', () => {
    requireBuiltCli();
    const run = spawnSync(process.execPath, [cli, 'serve'], { input: '', encoding: 'utf8', timeout: 60_000 });
    expect(run.status).toBe(2);
    expect(run.stderr).toContain('--stdio');
  });

  it('drives a whole simulated training step from Python with the trace_alloc package (examples/python/simulated_step.py)', () => {
    requireBuiltCli();
    const python = spawnSync(PYTHON, ['--version'], { encoding: 'utf8' });
    if (python.error || python.status !== 0) throw new Error(`${PYTHON} cannot be started: the Python client test needs it`);
    for (const backend of ['cpu', 'auto']) {
      const run = spawnSync(PYTHON, [`${root}examples/python/simulated_step.py`, '--cmd', `"${process.execPath}" "${cli}" serve --stdio --backend ${backend}`], {
        encoding: 'utf8', timeout: 120_000, cwd: `${root}examples/python`, env: { ...process.env, PYTHONDONTWRITEBYTECODE: '1' },
      });
      expect(run.status, `${backend}: ${run.stderr}`).toBe(0);
      const summary = JSON.parse(run.stdout.trim().split('\n').pop()!) as Record<string, number | string>;
      expect(summary.prompts).toBe(8);
      expect(summary.rollouts_started).toBeGreaterThan(0);
      expect(Number(summary.rollouts_finished) + Number(summary.stopped_early)).toBe(summary.rollouts_started);
      // v3 never prunes a branch nothing finished through, so the half-way re-plan prunes forks
      // (the early stop the example documents) without necessarily stopping a rollout in flight.
      expect(summary.pruned_after_replan, 'the default run must show the early stop it documents').toBeGreaterThan(0);
      expect(summary.trees).toBe(8 - Number(summary.removed));
    }
  });
});
