import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { PYTHON } from './python.js';

const root = fileURLToPath(new URL('..', import.meta.url));
const cli = `${root}dist/cli/main.js`;
const torch = spawnSync(PYTHON, ['-c', 'import torch, numpy'], { encoding: 'utf8' }).status === 0;
const required = process.env.TRACE_ALLOC_REQUIRE_TORCH === '1';

/**
 * examples/python/sharded_plan.py: 4 ranks (torch.multiprocessing, gloo on CPU), one sidecar
 * each, a global budget over all of them; identical to one service, under both rules, with
 * twin trees (equal weights) on different ranks. Skips only where torch is missing and CI did
 * not require it (.ci/run installs torch and sets TRACE_ALLOC_REQUIRE_TORCH=1).
 */
describe('examples/python/sharded_plan.py', () => {
  it.skipIf(!torch && !required)('4 gloo ranks with their own sidecars plan exactly as one service', () => {
    if (!torch) throw new Error(`torch is required here (TRACE_ALLOC_REQUIRE_TORCH=1) but ${PYTHON} cannot import it`);
    if (!existsSync(cli)) throw new Error(`${cli} is missing: build first (npm run build)`);
    const run = spawnSync(PYTHON, [`${root}examples/python/sharded_plan.py`, '--cmd', `"${process.execPath}" "${cli}" serve --stdio --backend cpu`], {
      encoding: 'utf8', timeout: 240_000, cwd: `${root}examples/python`, env: { ...process.env, PYTHONDONTWRITEBYTECODE: '1' },
    });
    expect(run.status, run.stdout + run.stderr).toBe(0);
    const verdict = JSON.parse(run.stdout.trim().split('\n').pop()!) as { identical: boolean; ranks: number; rules: string[]; twin_trees_across_ranks: number };
    expect(verdict).toMatchObject({ identical: true, ranks: 4, rules: ['v3', 'v2', 'v1'] });
    expect(verdict.twin_trees_across_ranks).toBeGreaterThan(0);
  }, 250_000);
});
