// `pip install` outside this checkout: the platform wheel (`npm run build:wheel`) carries Node, the
// built CLI and its runtime node_modules, so a fresh virtualenv with no checkout and no `node` on
// PATH gets a working `trace_alloc.Service()`. A wheel without the runtime fails in the
// constructor, naming what to install.
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildWheel } from '../python/build-wheel.js';
import { PYTHON } from './python.js';

const REPO = fileURLToPath(new URL('..', import.meta.url));
let work: string;

beforeAll(() => {
  work = mkdtempSync(join(tmpdir(), 'trace-alloc-wheel-test-'));
});
afterAll(() => {
  if (work) rmSync(work, { recursive: true, force: true });
});

function run(cmd: string, args: string[], options: { cwd?: string; env?: NodeJS.ProcessEnv; timeout?: number } = {}) {
  const r = spawnSync(cmd, args, { encoding: 'utf8', maxBuffer: 1 << 26, timeout: options.timeout ?? 300_000, cwd: options.cwd ?? work, env: options.env ?? process.env });
  if (r.error) throw new Error(`${cmd} ${args.join(' ')}: ${r.error.message}`);
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** A fresh virtualenv outside the checkout with `wheel` pip-installed (numpy from pip's configured index). */
function venvWith(name: string, wheel: string): string {
  const venv = join(work, name);
  const made = run(PYTHON, ['-m', 'venv', venv]);
  expect(made.code, made.stderr).toBe(0);
  const python = join(venv, process.platform === 'win32' ? 'Scripts/python.exe' : 'bin/python');
  const pip = run(python, ['-m', 'pip', 'install', '--retries', '0', '--timeout', '1', '--no-cache-dir', wheel], { env: { ...process.env, PIP_CACHE_DIR: join(work, 'pip-cache') } });
  expect(pip.code, `${pip.stdout}\n${pip.stderr}`).toBe(0);
  return python;
}

/**
 * The user's environment: the venv's python by absolute path, a PATH holding only an empty
 * folder (no node, no npx, no trace-alloc), a working folder outside the checkout, no TRACE_ALLOC_BIN.
 */
function userEnv(): NodeJS.ProcessEnv {
  const bin = join(work, 'empty-bin');
  mkdirSync(bin, { recursive: true });
  const env: NodeJS.ProcessEnv = { PATH: bin, HOME: work, TMPDIR: work, PYTHONDONTWRITEBYTECODE: '1', XDG_RUNTIME_DIR: process.env.XDG_RUNTIME_DIR };
  return env;
}

const USE_SERVICE = `
import json, shutil, sys
import numpy as np
import trace_alloc
assert shutil.which("node") is None, shutil.which("node")
with trace_alloc.Service(backend=sys.argv[1]) as ta:
    ta.add_forest(np.array([0, 3]), np.array([-1, 0, 0]), np.array([0.5, 1.0, 0.0]), np.array([4, 2, 2]),
                  np.array([0.0, 0.2, 0.1]), np.zeros(3, dtype=bool),
                  np.array([[0.1, 0.2, 0.3], [0.1, 0.2, 0.31], [0.1, 0.21, 0.3]], dtype=np.float32), tree_id=["q17"])
    plan = ta.plan(total_budget=16)
print(json.dumps({"command": trace_alloc.find_command(), "file": trace_alloc.__file__,
                  "placed": sum(a.branches for t in plan.trees for a in t.allocations),
                  "trees": [t.id for t in plan.trees]}))
`;

describe('the platform wheel, installed into a fresh virtualenv with no checkout and no node on PATH', () => {
  let python: string;
  let wheel: string;

  it('builds with nothing but the standard library, tagged for this platform', () => {
    wheel = buildWheel(join(work, 'wheels'), PYTHON);
    expect(basename(wheel)).toMatch(/^trace_alloc-\d+\.\d+\.\d+-py3-none-(linux|macosx|win)_\w+\.whl$/);
    const listing = run(PYTHON, ['-c', 'import sys, zipfile; print("\\n".join(zipfile.ZipFile(sys.argv[1]).namelist()))', wheel]);
    const names = listing.stdout.split('\n');
    for (const path of ['trace_alloc/_client.py', 'trace_alloc/_runtime/node', 'trace_alloc/_runtime/app/dist/cli/main.js', 'trace_alloc/_runtime/app/shaders/common.wgsl', 'trace_alloc/_runtime/MANIFEST.json']) {
      expect(names, path).toContain(path);
    }
    expect(names.some((n) => /dawn\.node$/.test(n))).toBe(true);
    // Nothing a runtime never loads: no declarations or source maps, one platform's Dawn.
    expect(names.filter((n) => /\.(d\.ts|map)$/.test(n))).toEqual([]);
    expect(new Set(names.filter((n) => /\/webgpu\/dist\/[^/]+\//.test(n)).map((n) => n.replace(/\/[^/]+$/, ''))).size).toBe(1);
  }, 300_000);

  it('pip-installs and answers a plan through the bundled Node and CLI', () => {
    python = venvWith('venv-platform', wheel);
    const elsewhere = join(work, 'elsewhere');
    mkdirSync(elsewhere, { recursive: true });
    const script = join(work, 'use_service.py');
    writeFileSync(script, USE_SERVICE);
    const r = run(python, [script, 'cpu'], { cwd: elsewhere, env: userEnv() });
    expect(r.code, r.stderr).toBe(0);
    const out = JSON.parse(r.stdout) as { command: string[]; file: string; placed: number; trees: string[] };
    expect(out.file).toContain(join(work, 'venv-platform'));
    expect(out.command[0]).toMatch(/trace_alloc[\\/]_runtime[\\/]node(\.exe)?$/);
    expect(out.command[0].startsWith(join(work, 'venv-platform'))).toBe(true);
    expect(out.trees).toEqual(['q17']);
    expect(out.placed).toBe(16);
    expect(r.stderr).toBe(''); // quiet: the CPU backend creates no Dawn device
  }, 300_000);

  it('serves with the default backend too (auto: the GPU only when a real one exists)', () => {
    const r = run(python, [join(work, 'use_service.py'), 'auto'], { cwd: join(work, 'elsewhere'), env: userEnv() });
    expect(r.code, r.stderr).toBe(0);
    expect((JSON.parse(r.stdout) as { placed: number }).placed).toBe(16);
  }, 120_000);
  it('without the runtime (a pure wheel), fails in the Service constructor, at once, naming what to install', () => {
    // --no-checkout: a client-only wheel (built in a checkout, a pure wheel otherwise records it and uses its CLI).
    const pure = run(PYTHON, [join(REPO, 'python/build-backend/trace_alloc_build.py'), '--no-checkout', join(work, 'pure')], { cwd: join(REPO, 'python'), env: { ...process.env, PYTHONDONTWRITEBYTECODE: '1' } });
    expect(pure.code, pure.stderr).toBe(0);
    const wheel = pure.stdout.trim();
    expect(basename(wheel)).toMatch(/-py3-none-any\.whl$/);
    // Installed next to the platform wheel's venv and put first on the path: numpy comes from the venv.
    const target = join(work, 'pure-site');
    const pip = run(python, ['-m', 'pip', 'install', '--no-deps', '--no-index', '--target', target, wheel]);
    expect(pip.code, pip.stderr).toBe(0);
    const probe = [
      'import time, trace_alloc',
      'assert "pure-site" in trace_alloc.__file__, trace_alloc.__file__',
      'start = time.monotonic()',
      'try:',
      '    trace_alloc.Service()',
      'except trace_alloc.TraceAllocError as e:',
      '    print("%.2f|%s|%s" % (time.monotonic() - start, e.code, e.message))',
    ].join('\n');
    const r = run(python, ['-c', probe], { cwd: join(work, 'elsewhere'), env: { ...userEnv(), PYTHONPATH: target } });
    expect(r.code, r.stderr).toBe(0);
    const [seconds, code, message] = r.stdout.trim().split('|');
    expect(code).toBe('service_error');
    expect(Number(seconds)).toBeLessThan(5);
    expect(message).toMatch(/wheel built for this platform/);
    expect(message).toMatch(/Node\.js >= 20/);
    expect(message).not.toMatch(/404|npx|npm install -g/);
  }, 120_000);
});
