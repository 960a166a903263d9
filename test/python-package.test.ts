import { spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { CLI } from './cli-helpers.js';
import { PYTHON } from './python.js';

const root = fileURLToPath(new URL('..', import.meta.url));
const work = mkdtempSync(join(tmpdir(), 'trace-alloc-python-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

/**
 * The Python package's own tests (python/tests, pytest), run against the package as `pip install`
 * installs it: built from a copy of python/ (so the checkout gets no build folders) into a private
 * target folder, and talking to this checkout's built CLI. The build is pip's default, isolated
 * one with no index at all (`--no-index`): the package's own backend needs nothing installed
 * (no setuptools, no `wheel`), so it works offline on a fresh machine.
 */
describe('the Python package (python/, pytest)', () => {
  it('installs with pip and passes its tests', () => {
    const python = spawnSync(PYTHON, ['-c', 'import numpy, pytest'], { encoding: 'utf8' });
    if (python.status !== 0) throw new Error(`${PYTHON} with numpy and pytest is needed (pip install numpy pytest): ${python.stderr}`);
    const source = join(work, 'src');
    cpSync(join(root, 'python'), source, { recursive: true, filter: (p) => !/__pycache__|\.egg-info|[\\/](build|dist)$/.test(p) });
    const target = join(work, 'site');
    const install = spawnSync(PYTHON, ['-m', 'pip', 'install', '--no-deps', '--no-index', '--target', target, source], { encoding: 'utf8', timeout: 120_000 });
    expect(install.status, install.stdout + install.stderr).toBe(0);
    // TORCHINDUCTOR_CACHE_DIR: importing trl makes torch create its compile cache folder in TMPDIR; keep it in ours.
    const env = { ...process.env, PYTHONPATH: target, PYTHONDONTWRITEBYTECODE: '1', TRACE_ALLOC_BIN: CLI, TORCHINDUCTOR_CACHE_DIR: join(work, 'torchinductor') };
    // The installed package, not the source tree: run from the temp folder with only `target` on the path.
    // --basetemp: pytest's tmp_path folders stay inside this test's own temp folder.
    const run = spawnSync(PYTHON, ['-m', 'pytest', '-q', '-p', 'no:cacheprovider', '--rootdir', work, '--basetemp', join(work, 'pytest-tmp'), join(source, 'tests')], {
      encoding: 'utf8', timeout: 900_000, cwd: work, env,
    });
    const summary = run.stdout.trim().split('\n').pop() ?? '';
    expect(run.status, `${run.stdout}\n${run.stderr}`).toBe(0);
    expect(summary).toMatch(/\b[1-9]\d* passed/); // pytest exits 5 when it collects nothing; this also guards that
    const which = spawnSync(PYTHON, ['-c', 'import trace_alloc, sys; print(trace_alloc.__file__)'], { encoding: 'utf8', cwd: work, env });
    expect(which.stdout).toContain(target);
  }, 920_000);

  it('ships in the npm tarball with the examples that use it', () => {
    const pack = spawnSync('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], { cwd: root, encoding: 'utf8', timeout: 120_000 });
    expect(pack.status, pack.stderr).toBe(0);
    const files = (JSON.parse(pack.stdout) as { files: { path: string }[] }[])[0].files.map((f) => f.path);
    for (const path of ['python/pyproject.toml', 'python/build-backend/trace_alloc_build.py', 'python/README.md', 'python/trace_alloc/__init__.py', 'python/trace_alloc/py.typed', 'examples/python/simulated_step.py']) {
      expect(files, path).toContain(path);
    }
    expect(files.filter((f) => /__pycache__|\.egg-info|\.pyc$/.test(f))).toEqual([]);
  }, 130_000);
});
