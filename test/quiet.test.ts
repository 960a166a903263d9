// Quiet by default: scoring on the CPU prints nothing on stderr and never loads Dawn (whose
// adapter probe prints `Warning: maxDynamic…BuffersPerPipelineLayout artificially reduced …` on
// lavapipe). `auto` on a Linux machine with no GPU device file settles on the CPU without asking
// WebGPU at all.
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { chooseAutoBackend } from '../src/backend/select.js';
import { gpuDeviceFiles } from '../src/gpu/devices.js';
import { runCli } from './cli-helpers.js';

const REPO = fileURLToPath(new URL('..', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'trace-alloc-quiet-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const forestFile = join(dir, 'forest.json');
writeFileSync(forestFile, JSON.stringify({ dim: 2, trees: [{ id: 'q1', nodes: [{ embedding: [1, 0] }, { parent: 0, reward: 1, visits: 2, uncertainty: 0.2, embedding: [1, 0.01] }, { parent: 0, visits: 2, embedding: [0, 1] }] }] }));

/**
 * Runs an ES module against dist/ in a fresh Node; it prints whether Dawn was loaded (loading it
 * installs WebGPU's globals, `GPUBufferUsage` among them).
 */
function runModule(code: string): { code: number | null; stdout: string; stderr: string } {
  const file = join(dir, `probe-${Math.random().toString(36).slice(2)}.mjs`);
  writeFileSync(file, `import * as ta from ${JSON.stringify(join(REPO, 'dist/index.js'))};\n${code}\nconsole.log('dawn loaded:', typeof globalThis.GPUBufferUsage !== 'undefined');\n`);
  const r = spawnSync(process.execPath, [file], { encoding: 'utf8', timeout: 60_000, env: { ...process.env, XDG_RUNTIME_DIR: process.env.XDG_RUNTIME_DIR ?? '/tmp' } });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

describe('the CPU backend is quiet and loads no Dawn', () => {
  it('score --backend cpu prints the plan and nothing on stderr', () => {
    const r = runCli(['score', forestFile, '--backend', 'cpu']);
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout).trees[0].id).toBe('q1');
    expect(r.stderr).toBe('');
  });

  it('the library\'s CPU scorer (createScorer and createLiveForest) prints nothing and loads no Dawn', () => {
    const r = runModule(`
const forest = ta.packForest({ dim: 2, trees: [{ id: 'q', nodes: [{ embedding: [1, 0] }, { parent: 0, reward: 1, embedding: [1, 0.1] }, { parent: 0, embedding: [0, 1] }] }] });
const scorer = await ta.createScorer({ backend: 'cpu' });
const scores = await scorer.score(forest);
scorer.destroy();
ta.allocate(forest, scores, { budget: 4 });
const live = await ta.createLiveForest({ dim: 2, backend: 'cpu' });
live.addTree({ id: 'q', nodes: [{ embedding: [1, 0] }, { parent: 0, reward: 1, embedding: [1, 0.1] }] });
await live.plan({ budget: 4 });
live.destroy();`);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('dawn loaded: false');
  });

  it('serve --stdio --backend cpu answers and prints nothing on stderr', () => {
    const requests = [
      { id: 1, op: 'add-tree', tree: { id: 'q1', nodes: [{ embedding: [1, 0] }, { parent: 0, reward: 1, visits: 2, embedding: [1, 0.01] }, { parent: 0, embedding: [0, 1] }] } },
      { id: 2, op: 'plan', budget: 8 },
      { id: 3, op: 'stats' },
    ];
    const r = runCli(['serve', '--stdio', '--backend', 'cpu'], requests.map((q) => JSON.stringify(q)).join('\n') + '\n');
    expect(r.code).toBe(0);
    expect(r.stdout.trim().split('\n').map((l) => JSON.parse(l).ok)).toEqual([true, true, true]);
    expect(r.stderr).toBe('');
  });
});

describe('auto without a GPU device file', () => {
  it('finds the GPU device files of a /dev (DRM nodes, NVIDIA, WSL2, Mali, Adreno)', () => {
    const dev = join(dir, 'dev');
    mkdirSync(join(dev, 'dri'), { recursive: true });
    for (const name of ['null', 'tty0', 'nvidiactl', 'nvidia-uvm']) writeFileSync(join(dev, name), '');
    expect(gpuDeviceFiles(dev)).toEqual([]);
    writeFileSync(join(dev, 'dri', 'by-path'), '');
    expect(gpuDeviceFiles(dev)).toEqual([]);
    for (const name of ['nvidia0', 'dxg', 'mali0', 'kgsl-3d0']) writeFileSync(join(dev, name), '');
    writeFileSync(join(dev, 'dri', 'renderD128'), '');
    writeFileSync(join(dev, 'dri', 'card0'), '');
    expect(gpuDeviceFiles(dev)).toEqual(['card0', 'renderD128'].map((n) => join(dev, 'dri', n)).concat(['dxg', 'kgsl-3d0', 'mali0', 'nvidia0'].map((n) => join(dev, n))).sort());
    expect(gpuDeviceFiles(join(dir, 'no-such-dev'))).toBeUndefined();
  });

  it.runIf(process.platform === 'linux')('settles on the CPU without asking WebGPU, and says why', async () => {
    const dev = join(dir, 'empty-dev');
    mkdirSync(dev, { recursive: true });
    const asked: string[] = [];
    const choice = await chooseAutoBackend(undefined, dev);
    expect(choice).toMatchObject({ backend: 'cpu', why: expect.stringMatching(/no GPU device.*CPU-emulated/) });
    // A navigator.gpu given by the caller is always asked, whatever /dev holds.
    const gpu = { requestAdapter: async () => { asked.push('asked'); return null; } } as unknown as GPU;
    expect(await chooseAutoBackend(gpu, dev)).toMatchObject({ backend: 'cpu', why: 'no WebGPU adapter found' });
    expect(asked).toEqual(['asked']);
  });

  it.runIf(process.platform === 'linux' && gpuDeviceFiles()?.length === 0)('here (no GPU device file): score, the library and serve under auto load no Dawn and print no driver warning', () => {
    const score = runCli(['score', forestFile]);
    expect(score.code).toBe(0);
    expect(score.stderr).not.toMatch(/Warning|artificially/);
    expect(score.stderr).toMatch(/backend auto: no GPU device/);
    const lib = runModule(`const s = await ta.createScorer({ backend: 'auto' }); console.log('backend:', s.backend); s.destroy();`);
    expect(lib.stderr).toBe('');
    expect(lib.stdout).toContain('backend: cpu');
    expect(lib.stdout).toContain('dawn loaded: false');
    const serve = runCli(['serve', '--stdio'], `${JSON.stringify({ id: 1, op: 'add-tree', tree: { id: 'q', nodes: [{ embedding: [1, 0] }] } })}\n`);
    expect(serve.code).toBe(0);
    expect(serve.stderr).not.toMatch(/Warning|artificially/);
  });
});
