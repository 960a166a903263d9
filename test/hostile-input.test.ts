// Inputs without end, over the size cap, or that are not regular files: refused with exit 2 and
// one line naming the cap (--max-input-bytes), or read by their content, never an endless read,
// a crash or a misleading "empty" / "truncated".
import { spawn, spawnSync } from 'node:child_process';
import { closeSync, existsSync, mkdtempSync, openSync, rmSync, truncateSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { encodeArrow } from '../src/forest/arrow-write.js';
import { ndArraysOfForest } from '../src/forest/columnar.js';
import { encodeNpz } from '../src/forest/npz.js';
import { generateForest } from '../src/synth/generate.js';
import { CLI, runCli } from './cli-helpers.js';

let dir: string;
beforeAll(() => { dir = mkdtempSync(join(tmpdir(), 'trace-alloc-input-')); });
afterAll(() => { rmSync(dir, { recursive: true, force: true }); });

/** The CLI with standard input opened from `stdinPath` (a device such as /dev/zero); killed after `seconds`. */
function runWithStdin(args: string[], stdinPath: string, seconds = 60): { code: number | null; stderr: string; signal: NodeJS.Signals | null } {
  const fd = openSync(stdinPath, 'r');
  try {
    const r = spawnSync(process.execPath, [CLI, ...args], { stdio: [fd, 'pipe', 'pipe'], encoding: 'utf8', timeout: seconds * 1000 });
    return { code: r.status, stderr: r.stderr, signal: r.signal };
  } finally {
    closeSync(fd);
  }
}

/** Runs the CLI with `args` ('@' for the pipe) on a named pipe called `name` that a child process fills with `bytes`. */
async function runOnFifo(name: string, bytes: Uint8Array, args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const fifo = join(dir, name);
  rmSync(fifo, { force: true });
  expect(spawnSync('mkfifo', [fifo]).status).toBe(0);
  const source = join(dir, `${name}.bytes`);
  writeFileSync(source, bytes);
  const writer = spawn('sh', ['-c', 'cat "$0" > "$1"', source, fifo], { stdio: 'ignore' });
  const reader = spawn(process.execPath, [CLI, ...args.map((a) => (a === '@' ? fifo : a))], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '', stderr = '';
  reader.stdout.on('data', (c) => { stdout += c; });
  reader.stderr.on('data', (c) => { stderr += c; });
  const code = await new Promise<number | null>((resolve) => reader.on('exit', (c) => resolve(c)));
  await new Promise((resolve) => (writer.exitCode !== null ? resolve(undefined) : writer.on('exit', resolve)));
  return { code, stdout, stderr };
}

describe('inputs read under a size cap (--max-input-bytes)', () => {
  it('score /dev/zero stops at the cap with exit 2 instead of reading forever', () => {
    const r = runWithStdin(['score', '/dev/zero', '--max-input-bytes', '1048576', '--backend', 'cpu'], '/dev/null');
    expect(r.signal).toBeNull();
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/\/dev\/zero holds more than 1048576 bytes, the most --max-input-bytes \(maxInputBytes\) allows/);
  });

  it('score - with /dev/zero as standard input stops at the cap too', () => {
    const r = runWithStdin(['score', '-', '--max-input-bytes', '4096', '--backend', 'cpu'], '/dev/zero');
    expect(r.signal).toBeNull();
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/standard input holds more than 4096 bytes/);
  });

  it('convert /dev/zero z.npz is refused with exit 2 and writes nothing (it used to crash)', () => {
    const out = join(dir, 'z.npz');
    const r = runWithStdin(['convert', '/dev/zero', out, '--max-input-bytes', '1048576'], '/dev/null');
    expect(r.signal).toBeNull();
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/holds more than 1048576 bytes/);
    expect(existsSync(out)).toBe(false);
  });

  it('a regular file over the cap is refused from its size, before it is read: a 3 GB file of NUL bytes is not "empty"', () => {
    const big = join(dir, 'nul.jsonl');
    writeFileSync(big, '');
    truncateSync(big, 3_000_000_000); // sparse: no disk, and nothing is read
    const r = runCli(['score', big, '--backend', 'cpu']);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/nul\.jsonl is 3000000000 bytes, more than the 2147483648 that --max-input-bytes \(maxInputBytes\) allows/);
    const small = join(dir, 'small.json');
    writeFileSync(small, JSON.stringify({ trees: [{ id: 'a', nodes: [{}] }] }));
    expect(runCli(['score', small, '--backend', 'cpu', '--max-input-bytes', '16']).stderr).toMatch(/small\.json is \d+ bytes, more than the 16 that --max-input-bytes/);
    expect(runCli(['score', small, '--backend', 'cpu', '--max-input-bytes', '0']).stderr).toMatch(/--max-input-bytes must be an integer >= 1/);
    expect(runCli(['score', small, '--backend', 'cpu', '--max-input-bytes', '4096']).code).toBe(0);
  });

  it('a JSON Lines line past V8\'s string limit is refused with exit 2 naming the line, not a crash', () => {
    const file = join(dir, 'long-line.jsonl');
    writeFileSync(file, '');
    truncateSync(file, 0x1fffffe8 + 16); // one line of NUL bytes, 16 bytes past the limit
    const r = runCli(['score', file, '--backend', 'cpu']);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/line 1: the line is 536870904 bytes, longer than the longest line JSON Lines can hold here \(536870888 bytes/);
  });
});

describe('inputs that are not regular files are read by their content', () => {
  const forest = generateForest({ trees: 3, dim: 4, seed: 5, minNodes: 3, maxNodes: 8 });
  const expected = () => {
    const file = join(dir, 'regular.npz');
    writeFileSync(file, encodeNpz(ndArraysOfForest(forest)));
    const r = runCli(['score', file, '--backend', 'cpu']);
    expect(r.code).toBe(0);
    return r.stdout;
  };

  for (const [name, bytes] of [
    ['pipe.npz', () => encodeNpz(ndArraysOfForest(forest))],
    ['pipe.arrow', () => encodeArrow(forest, 'file')],
    ['pipe.arrows', () => encodeArrow(forest, 'stream')],
    ['pipe', () => encodeNpz(ndArraysOfForest(forest))],
    ['pipe.json', () => encodeArrow(forest, 'stream')],
  ] as const) {
    it(`a named pipe called ${name} holding a valid forest scores as the file does`, async () => {
      const r = await runOnFifo(name, bytes(), ['score', '@', '--backend', 'cpu']);
      expect(r.stderr).toBe('');
      expect(r.code).toBe(0);
      expect(r.stdout).toBe(expected());
    });
  }

  it('a named pipe of JSON Lines text is read as text, and one over the cap is refused', async () => {
    const text = `${JSON.stringify({ id: 'a', nodes: [{ embedding: [1] }, { parent: 0, embedding: [0.5], reward: 1, visits: 1 }] })}\n`;
    const ok = await runOnFifo('text.jsonl', Buffer.from(text), ['score', '@', '--backend', 'cpu']);
    expect(ok.code).toBe(0);
    expect(JSON.parse(ok.stdout).trees[0].id).toBe('a');
    const over = await runOnFifo('big.npz', new Uint8Array(1 << 20), ['score', '@', '--backend', 'cpu', '--max-input-bytes', '1024']);
    expect(over.code).toBe(2);
    expect(over.stderr).toMatch(/big\.npz holds more than 1024 bytes/);
  });
});
