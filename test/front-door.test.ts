// The README's front door, run as written: its first screen holds the start and the test command
// (the one CI runs), its CLI section's commands work on the sample forest it names, and its
// Python start gives a client that finds the service with no extra setting.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { CLI } from './cli-helpers.js';
import { PYTHON } from './python.js';

const REPO = fileURLToPath(new URL('..', import.meta.url));
const README = readFileSync(join(REPO, 'README.md'), 'utf8');
const work = mkdtempSync(join(tmpdir(), 'trace-alloc-front-door-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

/** The README from its title to its table of contents: what a reader sees before scrolling. */
const FIRST_SCREEN = README.slice(0, README.indexOf('\n## Contents'));

/** The body of the README section headed `## title`, up to the next `## `. */
function section(title: string): string {
  const start = README.indexOf(`\n## ${title}\n`);
  if (start < 0) throw new Error(`README has no section "${title}"`);
  const end = README.indexOf('\n## ', start + 1);
  return README.slice(start, end < 0 ? undefined : end);
}

/** The `trace-alloc …` lines of a section's ```sh blocks, comments dropped, as argument lists. */
function cliCommands(text: string): string[][] {
  const blocks = [...text.matchAll(/^```sh\n([\s\S]*?)^```$/gm)].map((m) => m[1]);
  return blocks.flatMap((b) => b.split('\n'))
    .map((line) => line.replace(/\s+#.*$/, '').trim())
    .filter((line) => line.startsWith('trace-alloc '))
    .map((line) => {
      expect(line, 'a README command the test can split without a shell').not.toMatch(/["'$`|;&<>]/);
      return line.split(/\s+/).slice(1);
    });
}

describe("the README's first screen", () => {
  it('holds the Node start, the Python start and the test command', () => {
    expect(FIRST_SCREEN.length).toBeGreaterThan(1000); // the contents heading is where it is expected
    expect(FIRST_SCREEN).toContain('\nnpm ci && npx trace-alloc demo ');
    expect(FIRST_SCREEN).toContain('\nnpm ci && python3 -m pip install ./python && python3 examples/python/simulated_step.py\n');
    expect(FIRST_SCREEN).toMatch(/```sh\nnpm ci && npm run test:all\n```/);
    expect(FIRST_SCREEN).toContain('TRACE_ALLOC_PYTHON');
    expect(FIRST_SCREEN).toContain('.ci/python-requirements.txt');
  });

  it('names the test command CI runs: npm run test:all is .ci/test-all, which .ci/run calls', () => {
    const scripts = (JSON.parse(readFileSync(join(REPO, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts;
    expect(scripts['test:all']).toBe('bash .ci/test-all');
    const ci = readFileSync(join(REPO, '.ci/run'), 'utf8');
    expect(ci).toMatch(/^timed "[^"]*" bash \.ci\/test-all$/m);
    for (const required of ['GPU', 'BROWSER', 'PYARROW', 'TORCH', 'LLM', 'TRL']) expect(ci).toContain(`export TRACE_ALLOC_REQUIRE_${required}=1`);
    const all = readFileSync(join(REPO, '.ci/test-all'), 'utf8');
    // A new virtualenv from CI's requirements, its python handed to the tests, then what CI checks.
    expect(all).toContain('-m pip install --quiet --retries 0 --timeout 1 -r .ci/python-requirements.txt');
    expect(all).toContain('export TRACE_ALLOC_PYTHON="$venv/bin/python"');
    expect(all).toMatch(/npm run typecheck[\s\S]*npm test$/m);
    // No root: the system packages are .ci/run's business.
    expect(all.split('\n').filter((l) => !l.trimStart().startsWith('#')).join('\n')).not.toMatch(/\b(sudo|apt-get|apt|dpkg)\b/);
    const syntax = spawnSync('bash', ['-n', join(REPO, '.ci/test-all')], { encoding: 'utf8' });
    expect(syntax.status, syntax.stderr).toBe(0);
  });
});

describe("the README's command-line section, on examples/forest.json", () => {
  // The README's commands, run from a folder where examples/ is the repository's (a checkout's root).
  const cwd = join(work, 'cli');
  mkdirSync(cwd, { recursive: true });
  symlinkSync(join(REPO, 'examples'), join(cwd, 'examples'), 'dir');
  const run = (args: string[]) => spawnSync(process.execPath, [CLI, ...args], { cwd, encoding: 'utf8', maxBuffer: 1 << 26, env: { ...process.env, XDG_RUNTIME_DIR: process.env.XDG_RUNTIME_DIR ?? '/tmp' } });

  it('runs every trace-alloc command of "Command line" and "See the plan" as written', () => {
    const commands = [...cliCommands(section('Command line')), ...cliCommands(section('See the plan'))];
    expect(commands.map((c) => c[0])).toEqual(['score', 'convert', 'score', 'viz', 'viz']);
    for (const args of commands) {
      const r = run(args);
      expect(r.status, `trace-alloc ${args.join(' ')}: ${r.stderr}`).toBe(0);
    }
    expect(readFileSync(join(cwd, 'view.html'), 'utf8')).toContain('contested');
    expect(readFileSync(join(cwd, 'contested.svg'), 'utf8')).toMatch(/^<svg[\s\S]*<\/svg>\s*$/);
    expect(existsSync(join(cwd, 'forest.npz'))).toBe(true);
  });

  interface Plan { trees: Array<{ id: string; budget: number; allocations: Array<{ node: number; branches: number }>; groups?: Array<{ parent: number; intensity: number }> }> }

  it('gives the plan the README describes (contested 14: 10 at the prompt, 3 at the step that succeeded; far-apart 10; agreeing 8, all at the prompt)', () => {
    const plan = JSON.parse(readFileSync(join(cwd, 'plan.json'), 'utf8')) as Plan;
    const byId = new Map(plan.trees.map((t) => [t.id, t]));
    expect([...byId.keys()]).toEqual(['contested', 'agreeing', 'far-apart']);
    expect(byId.get('contested')!.budget).toBe(14);
    const at = (id: string) => Object.fromEntries(byId.get(id)!.allocations.map((a) => [a.node, a.branches]));
    expect(at('contested')[0]).toBe(10);
    expect(at('contested')[1]).toBe(3);
    expect(at('contested')[2]).toBeUndefined();
    expect(byId.get('far-apart')!.budget).toBe(10);
    expect(byId.get('agreeing')!.budget).toBe(8);
    expect(at('agreeing')).toEqual({ 0: 8 });
    // The converted file is the same forest: the same plan.
    const again = run(['score', 'forest.npz', '--total-budget', '32']);
    expect(again.status, again.stderr).toBe(0);
    expect(JSON.parse(again.stdout)).toEqual(plan);
  });

  it('holds what the README says it holds: a contested fork, an agreeing one, unlike siblings, terminal nodes', () => {
    const forest = JSON.parse(readFileSync(join(REPO, 'examples/forest.json'), 'utf8')) as { trees: Array<{ id: string; nodes: Array<{ terminal?: boolean }> }> };
    expect(forest.trees.every((t) => t.nodes.some((n) => n.terminal === true) || t.id === 'far-apart')).toBe(true);
    const r = run(['score', 'examples/forest.json', '--scores', '--backend', 'cpu']);
    expect(r.status, r.stderr).toBe(0);
    const root = (id: string) => (JSON.parse(r.stdout) as Plan).trees.find((t) => t.id === id)!.groups!.find((g) => g.parent === 0)!.intensity;
    expect(root('contested')).toBeGreaterThan(0.5);
    expect(root('agreeing')).toBe(0);
    expect(root('far-apart')).toBeGreaterThan(0);
    expect(root('far-apart')).toBeLessThan(root('contested') / 2); // unlike siblings: the same gap counts for less
  });

  it('ships in the npm package, which the README travels in', () => {
    const files = (JSON.parse(readFileSync(join(REPO, 'package.json'), 'utf8')) as { files: string[] }).files;
    expect(files).toContain('examples/forest.json');
  });
});

describe("the README's Python start, as written", () => {
  it('python3 -m pip install ./python && python3 examples/python/simulated_step.py, in a fresh virtualenv, needs no TRACE_ALLOC_BIN', () => {
    const venv = join(work, 'venv');
    const made = spawnSync(PYTHON, ['-m', 'venv', venv], { encoding: 'utf8', timeout: 120_000 });
    expect(made.status, made.stderr).toBe(0);
    // The reader's shell: the virtualenv active (its python3 first on PATH), node on PATH, in the checkout.
    const nodeBin = join(work, 'node-bin');
    mkdirSync(nodeBin, { recursive: true });
    symlinkSync(process.execPath, join(nodeBin, 'node'));
    // HOME and the rest stay: pip reads its index settings from the user's configuration.
    const env: NodeJS.ProcessEnv = {
      ...process.env, PATH: `${join(venv, 'bin')}:${nodeBin}:/usr/bin:/bin`, TMPDIR: work, PYTHONDONTWRITEBYTECODE: '1',
      PIP_CACHE_DIR: join(work, 'pip-cache'), XDG_RUNTIME_DIR: process.env.XDG_RUNTIME_DIR ?? '/tmp',
    };
    delete env.TRACE_ALLOC_BIN;
    delete env.VIRTUAL_ENV;
    delete env.PYTHONPATH;
    const line = /^npm ci && (python3 -m pip install \.\/python && python3 examples\/python\/simulated_step\.py)$/m.exec(FIRST_SCREEN);
    expect(line).not.toBeNull();
    // `npm ci` is left out: this checkout is installed already, and the test must not reinstall it.
    const r = spawnSync('bash', ['-c', line![1].replace('-m pip install', '-m pip install --quiet --retries 0 --timeout 1')], { cwd: REPO, env, encoding: 'utf8', timeout: 300_000 });
    expect(r.status, `${r.stdout}\n${r.stderr}`).toBe(0);
    const summary = JSON.parse(r.stdout.trim().split('\n').pop()!) as { rollouts_finished: number; trees: number };
    expect(summary.rollouts_finished).toBeGreaterThan(0);
    // It ran the installed package, which found this checkout's CLI by the record pip install wrote.
    const which = spawnSync('python3', ['-c', 'import trace_alloc; print(trace_alloc.__file__); print(trace_alloc.find_command()[1])'], { cwd: work, env, encoding: 'utf8' });
    expect(which.status, which.stderr).toBe(0);
    const [file, main] = which.stdout.trim().split('\n');
    expect(file.startsWith(venv)).toBe(true);
    expect(main).toBe(join(REPO, 'dist/cli/main.js'));
    // pip built in the checkout: it left nothing there.
    const left = spawnSync('git', ['status', '--porcelain', '--ignored', '--', 'python'], { cwd: REPO, encoding: 'utf8' });
    expect(left.stdout.split('\n').filter((l) => /^!!/.test(l) && !/__pycache__/.test(l))).toEqual([]);
  }, 320_000);
});
