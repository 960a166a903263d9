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
import { availableParallelism } from 'node:os';
import { chooseAutoBackend, createScorer } from '../src/backend/select.js';
import { createLiveForest } from '../src/live/create.js';
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
    expect(choice).toMatchObject({ backend: 'cpu', why: 'no GPU device', detail: expect.stringMatching(/no GPU device file.*CPU-emulated/) });
    // A navigator.gpu given by the caller is always asked, whatever /dev holds.
    const gpu = { requestAdapter: async () => { asked.push('asked'); return null; } } as unknown as GPU;
    expect(await chooseAutoBackend(gpu, dev)).toMatchObject({ backend: 'cpu', why: 'no WebGPU adapter found' });
    expect(asked).toEqual(['asked']);
  });

  it.runIf(process.platform === 'linux' && gpuDeviceFiles()?.length === 0)('here (no GPU device file): score, the library and serve under auto load no Dawn and print no driver warning', () => {
    const score = runCli(['score', forestFile]);
    expect(score.code).toBe(0);
    expect(score.stderr).not.toMatch(/Warning|artificially/);
    expect(score.stderr).toBe('trace-alloc: backend auto: no GPU device; scoring on the cpu backend (2 threads)\n'.replace('2 threads', `${availableParallelism()} thread${availableParallelism() === 1 ? '' : 's'}`));
    const lib = runModule(`const s = await ta.createScorer({ backend: 'auto' }); console.log('backend:', s.backend); s.destroy();`);
    expect(lib.stderr).toBe('');
    expect(lib.stdout).toContain('backend: cpu');
    expect(lib.stdout).toContain('dawn loaded: false');
    const serve = runCli(['serve', '--stdio'], `${JSON.stringify({ id: 1, op: 'add-tree', tree: { id: 'q', nodes: [{ embedding: [1, 0] }] } })}\n`);
    expect(serve.code).toBe(0);
    expect(serve.stderr).not.toMatch(/Warning|artificially/);
    expect(serve.stderr).toBe('trace-alloc serve: live forest: no GPU device; re-scoring on the cpu\n');
  });

  it.runIf(process.platform === 'linux' && gpuDeviceFiles()?.length === 0)('here: --verbose adds why, on one more line (score, viz, demo, serve)', () => {
    const why = /^trace-alloc( serve)?: \/dev has no GPU device file \(dri\/renderD\*, nvidia\*, dxg, mali\*\), so WebGPU could offer only a CPU-emulated adapter, slower than the cpu backend; --backend gpu uses one anyway$/;
    const score = runCli(['score', forestFile, '--verbose']);
    expect(score.code).toBe(0);
    const lines = score.stderr.trimEnd().split('\n');
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatch(/^trace-alloc: backend auto: no GPU device; scoring on the cpu backend/);
    expect(lines[1]).toMatch(why);
    const viz = runCli(['viz', forestFile, '--out', join(dir, 'view.html'), '--verbose']);
    expect(viz.code).toBe(0);
    expect(viz.stderr.trimEnd().split('\n')[1]).toMatch(why);
    const demo = runCli(['demo', '--trees', '8', '--compare-seeds', '0', '--view', join(dir, 'demo.html'), '--verbose']);
    expect(demo.code).toBe(0);
    expect(demo.stdout).toMatch(/\n {2}note: backend auto: no GPU device; scoring on the cpu backend \(\d+ threads?\)\n {2}note: \/dev has no GPU device file/);
    const serve = runCli(['serve', '--stdio', '--verbose'], `${JSON.stringify({ id: 1, op: 'add-tree', tree: { id: 'q', nodes: [{ embedding: [1, 0] }] } })}\n`);
    expect(serve.code).toBe(0);
    expect(serve.stderr.trimEnd().split('\n')).toEqual(['trace-alloc serve: live forest: no GPU device; re-scoring on the cpu', expect.stringMatching(why)]);
  });
});

describe('the backend notice is one short line', () => {
  it('auto on a CPU-emulated adapter: one line naming it, the explanation as its detail', async () => {
    const emulated = { requestAdapter: async () => ({ info: { vendor: 'mesa', architecture: '', device: '', description: 'lavapipe' }, features: new Set(), limits: {} }) } as unknown as GPU;
    const notices: Array<[string, string | undefined]> = [];
    const scorer = await createScorer({ backend: 'auto', gpu: emulated, threads: 1, onNotice: (m, d) => notices.push([m, d]) });
    scorer.destroy();
    expect(notices).toEqual([['backend auto: adapter "lavapipe" is CPU-emulated; scoring on the cpu backend (1 thread)',
      'lavapipe runs on the CPU, so it is slower than the cpu backend on the same cores; --backend gpu uses it anyway']]);
    const live = await createLiveForest({ dim: 2, backend: 'auto', onNotice: (m, d) => notices.push([m, d]) });
    live.destroy();
    expect(notices).toHaveLength(2);
    expect(notices[1][0]).toMatch(/^live forest: .*; re-scoring on the (cpu|gpu)/);
    // As the CLI prints them (prefix included): one terminal line each, give or take the adapter's name.
    expect(`trace-alloc: ${notices[0][0]}`.length - 'lavapipe'.length).toBeLessThanOrEqual(100);
    expect(`trace-alloc serve: ${notices[1][0]}`.length).toBeLessThanOrEqual(100);
  });

  it('--backend gpu without an adapter still fails with how to get one (no Vulkan driver: the loader is pointed at none)', () => {
    const noDriver = { VK_ICD_FILENAMES: join(dir, 'no-driver.json'), VK_DRIVER_FILES: join(dir, 'no-driver.json') };
    const gpu = runCli(['score', forestFile, '--backend', 'gpu'], undefined, noDriver);
    expect(gpu.code).toBe(1);
    expect(gpu.stdout).toBe('');
    expect(gpu.stderr).toMatch(/trace-alloc: no WebGPU adapter found\. .*lavapipe.*--backend cpu/);
    const auto = runCli(['score', forestFile, '--verbose'], undefined, noDriver);
    expect(auto.code).toBe(0);
    expect(auto.stderr).toMatch(/^trace-alloc: backend auto: no (GPU device|WebGPU adapter found); scoring on the cpu backend/m);
  });

  it('--verbose is a flag of every command that scores, and its help says what it adds', () => {
    for (const command of ['score', 'viz', 'demo', 'serve']) {
      const help = runCli([command, '--help']);
      expect(help.code, command).toBe(0);
      expect(help.stdout, command).toMatch(/--verbose\s+explain the backend notice: why auto did not use a GPU/);
    }
  });
});
