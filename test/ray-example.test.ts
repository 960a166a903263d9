import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { PYTHON } from './python.js';

const root = fileURLToPath(new URL('..', import.meta.url));
const cli = `${root}dist/cli/main.js`;
const ray = spawnSync(PYTHON, ['-c', 'import ray, numpy'], { encoding: 'utf8' }).status === 0;
const required = process.env.TRACE_ALLOC_REQUIRE_RAY === '1';

/**
 * examples/python/ray_plan.py: a local Ray cluster it starts itself, 4 sidecar actors, one global
 * budget over them (trace_alloc.ray); byte-identical to one service under every rule, with twin
 * trees (equal weights) on different actors. Skips only where ray is missing and CI did not
 * require it (.ci/run installs ray and sets TRACE_ALLOC_REQUIRE_RAY=1).
 */
describe('examples/python/ray_plan.py', () => {
  it.skipIf(!ray && !required)('4 Ray actors with their own sidecars plan exactly as one service', () => {
    if (!ray) throw new Error(`ray is required here (TRACE_ALLOC_REQUIRE_RAY=1) but ${PYTHON} cannot import it`);
    if (!existsSync(cli)) throw new Error(`${cli} is missing: build first (npm run build)`);
    const run = spawnSync(PYTHON, [`${root}examples/python/ray_plan.py`, '--cmd', `"${process.execPath}" "${cli}" serve --stdio --backend cpu`], {
      encoding: 'utf8', timeout: 240_000, cwd: `${root}examples/python`, env: { ...process.env, PYTHONDONTWRITEBYTECODE: '1' },
    });
    expect(run.status, run.stdout + run.stderr).toBe(0);
    const verdict = JSON.parse(run.stdout.trim().split('\n').pop()!) as { identical: boolean; actors: number; rules: string[]; twin_trees_across_actors: number };
    expect(verdict).toMatchObject({ identical: true, actors: 4, rules: ['v3', 'v2', 'v1'] });
    expect(verdict.twin_trees_across_actors).toBeGreaterThan(0);
  }, 250_000);
});
