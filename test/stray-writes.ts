// Vitest global setup: tests write only inside their own temp folders. The whole run gets a
// private TMPDIR (inherited by every test process and every CLI, Python or browser it starts),
// so a file a test forgets to clean up — or a default path such as the demo's view — lands
// there instead of the shared system temp folder; at the end anything left in it, and any
// change to the git working tree, fails the run with the paths listed.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const REPO = fileURLToPath(new URL('..', import.meta.url));

/** Caches tools keep in TMPDIR on their own (tsx's compile cache, for tests that run `tsx`); removed with the folder. */
const TOOL_CACHES = [/^tsx-\d+$/];

/** `git status` of the working tree, or undefined outside a git checkout (e.g. an unpacked tarball). */
function treeStatus(): Set<string> | undefined {
  const r = spawnSync('git', ['status', '--porcelain=v1', '--untracked-files=all'], { cwd: REPO, encoding: 'utf8' });
  if (r.error || r.status !== 0) return undefined;
  return new Set(r.stdout.split('\n').filter((line) => line !== ''));
}

export default function setup(): () => void {
  const before = treeStatus();
  const runTmp = mkdtempSync(join(tmpdir(), 'trace-alloc-test-run-'));
  const saved = { TMPDIR: process.env.TMPDIR, PYTHONDONTWRITEBYTECODE: process.env.PYTHONDONTWRITEBYTECODE };
  process.env.TMPDIR = runTmp;
  process.env.PYTHONDONTWRITEBYTECODE = '1'; // Python tests must not leave __pycache__ in the tree

  return () => {
    const problems: string[] = [];
    const left = readdirSync(runTmp).filter((name) => !TOOL_CACHES.some((pattern) => pattern.test(name)));
    if (left.length > 0) problems.push(`left in ${runTmp} (write inside your own mkdtemp folder and remove it): ${left.join(', ')}`);
    const after = treeStatus();
    if (before && after) {
      const changed = [...after].filter((line) => !before.has(line));
      if (changed.length > 0) problems.push(`changed the working tree: ${changed.join('; ')}`);
    }
    // Kept when something was left, so a failing test's saved reproduction can still be read.
    if (left.length === 0) rmSync(runTmp, { recursive: true, force: true });
    for (const [key, value] of Object.entries(saved)) {
      if (value === undefined) delete process.env[key];
      else process.env[key] = value;
    }
    if (problems.length > 0) {
      process.stderr.write(`\ntests wrote where they should not:\n${problems.map((p) => `  - ${p}`).join('\n')}\n`);
      process.exitCode = 1;
    }
  };
}
