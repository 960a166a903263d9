import { spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
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

  // The README's Python start, `pip install ./python`, from this very checkout: the wheel pip builds
  // records the checkout, so the client finds its built CLI from any folder, with no TRACE_ALLOC_BIN.
  it('pip install ./python: the client finds this checkout\'s service from outside it', () => {
    const target = join(work, 'from-checkout');
    const install = spawnSync(PYTHON, ['-m', 'pip', 'install', '--no-deps', '--no-index', '--target', target, join(root, 'python')], {
      encoding: 'utf8', timeout: 120_000, env: { ...process.env, PYTHONDONTWRITEBYTECODE: '1' },
    });
    expect(install.status, install.stdout + install.stderr).toBe(0);
    // The user's shell elsewhere: node on PATH and nothing else of ours (no trace-alloc, no TRACE_ALLOC_BIN).
    const bin = join(work, 'node-only-bin');
    mkdirSync(bin, { recursive: true });
    symlinkSync(process.execPath, join(bin, 'node'));
    const elsewhere = join(work, 'elsewhere');
    mkdirSync(elsewhere, { recursive: true });
    const env: NodeJS.ProcessEnv = { PATH: bin, HOME: work, TMPDIR: work, PYTHONPATH: target, PYTHONDONTWRITEBYTECODE: '1', XDG_RUNTIME_DIR: process.env.XDG_RUNTIME_DIR };
    const probe = [
      'import json, trace_alloc',
      'with trace_alloc.Service(backend="cpu") as ta:',
      '    ta.add_tree("q17", [{"embedding": [1, 0]}, {"parent": 0, "reward": 1, "visits": 2, "embedding": [1, 0.01]}, {"parent": 0, "visits": 2, "embedding": [0, 1]}])',
      '    plan = ta.plan(budget=8)',
      'print(json.dumps({"command": trace_alloc.find_command(), "file": trace_alloc.__file__,',
      '                  "placed": sum(a.branches for t in plan.trees for a in t.allocations)}))',
    ].join('\n');
    const r = spawnSync(PYTHON, ['-c', probe], { encoding: 'utf8', timeout: 60_000, cwd: elsewhere, env });
    expect(r.status, r.stderr).toBe(0);
    const out = JSON.parse(r.stdout) as { command: string[]; file: string; placed: number };
    expect(out.file).toContain(target);
    expect(out.command).toEqual([join(bin, 'node'), join(root, 'dist/cli/main.js')]);
    expect(out.placed).toBe(8);
    // Without node, the constructor says so at once, naming what to install.
    const noNode = spawnSync(PYTHON, ['-c', 'import trace_alloc\ntry:\n    trace_alloc.Service()\nexcept trace_alloc.TraceAllocError as e:\n    print(e.message)'], {
      encoding: 'utf8', timeout: 60_000, cwd: elsewhere, env: { ...env, PATH: join(work, 'nothing') },
    });
    expect(noNode.stdout).toMatch(/no `node` on PATH.*Node\.js >= 20/);
    expect(noNode.stdout).not.toMatch(/npm install -g/);
  }, 200_000);

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
