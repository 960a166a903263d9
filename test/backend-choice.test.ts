import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { adapterIdentity, cpuEmulationReason, requestGpuAdapter, type AdapterIdentity } from '../src/gpu/adapter.js';
import { createLiveForest } from '../src/live/create.js';
import { scoreCpu } from '../src/score/cpu.js';
import { createScorer } from '../src/backend/select.js';
import { generateForest } from '../src/synth/generate.js';
import { runCli } from './cli-helpers.js';
import { gpuDescribe } from './gpu-support.js';

// adapter.info as real drivers report it through Dawn (Vulkan, Metal, D3D12) and as software ones do.
const HARDWARE: AdapterIdentity[] = [
  { vendor: 'nvidia', architecture: 'hopper', device: '', description: 'NVIDIA H200', isFallbackAdapter: false },
  { vendor: 'nvidia', architecture: 'ampere', device: '', description: 'NVIDIA GeForce RTX 3090' },
  { vendor: 'amd', architecture: 'rdna-3', device: '', description: 'AMD Radeon RX 7900 XTX (RADV NAVI31)' },
  { vendor: 'intel', architecture: 'gen-12lp', device: '', description: 'Intel(R) UHD Graphics 770 (ADL-S GT1)' },
  { vendor: 'apple', architecture: 'metal-3', device: '', description: 'Apple M2 Pro' },
  { vendor: 'qualcomm', architecture: 'adreno-7xx', device: '', description: 'Adreno (TM) 740' },
];
const EMULATED: AdapterIdentity[] = [
  { vendor: 'mesa', architecture: 'software', device: 'llvmpipe-llvm-15-0-6-256-bits-', description: 'llvmpipe: Mesa 25.0.7-2~bpo12+1 (LLVM 15.0.6) 0.0.1', isFallbackAdapter: true },
  { vendor: 'mesa', architecture: '', device: '', description: 'lavapipe' },
  { vendor: 'google', architecture: '', device: 'swiftshader', description: 'SwiftShader Device (Subzero)' },
  { vendor: 'microsoft', architecture: '', device: '', description: 'Microsoft Basic Render Driver' },
  { vendor: 'microsoft', architecture: 'warp', device: '', description: '' },
  { vendor: 'unknown', architecture: '', device: '', description: 'some adapter', isFallbackAdapter: true },
];

describe('CPU-emulated adapters', () => {
  it('are told apart from real GPUs by adapter.info', () => {
    for (const info of HARDWARE) expect(cpuEmulationReason(info), info.description).toBeUndefined();
    for (const info of EMULATED) expect(cpuEmulationReason(info), info.description).toBeTypeOf('string');
    expect(cpuEmulationReason(EMULATED[0])).toMatch(/llvmpipe/);
  });

  it('reads isFallbackAdapter from the adapter too (older spec revisions)', () => {
    const legacy = { info: { vendor: 'x', architecture: '', device: '', description: 'y' }, isFallbackAdapter: true } as unknown as GPUAdapter;
    expect(cpuEmulationReason(adapterIdentity(legacy))).toMatch(/fallback/);
  });

  it('auto scores on the CPU, with one notice, when the only adapter is emulated', async () => {
    const emulated = { requestAdapter: async () => ({ info: EMULATED[2], features: new Set(), limits: {} }) } as unknown as GPU;
    const notices: string[] = [];
    const scorer = await createScorer({ backend: 'auto', gpu: emulated, onNotice: (m) => notices.push(m) });
    expect(scorer.backend).toBe('cpu');
    expect(notices).toHaveLength(1);
    expect(notices[0]).toMatch(/SwiftShader.*CPU-emulated.*scoring on the cpu backend/);
    const forest = generateForest({ trees: 4, dim: 3, seed: 2 });
    expect(Array.from((await scorer.score(forest)).weight)).toEqual(Array.from(scoreCpu(forest).weight));
    scorer.destroy();
  });
});

gpuDescribe('auto on this machine\'s adapter', () => {
  let adapter: GPUAdapter;
  let emulated: string | undefined;
  beforeAll(async () => {
    adapter = await requestGpuAdapter();
    emulated = cpuEmulationReason(adapterIdentity(adapter));
  });

  // Where the machine has no GPU device file, auto settles on the CPU before asking WebGPU and
  // says "no GPU device" (the adapter this suite got is then CPU-emulated); --verbose says why.
  it('scorer: the CPU when the adapter is CPU-emulated, the GPU otherwise, and it says which once', async () => {
    const notices: string[] = [];
    const scorer = await createScorer({ backend: 'auto', onNotice: (m) => notices.push(m) });
    try {
      expect(scorer.backend).toBe(emulated ? 'cpu' : 'gpu');
      expect(notices).toHaveLength(1);
      expect(notices[0]).toMatch(emulated ? /(CPU-emulated|no GPU device).*scoring on the cpu backend/ : /scoring on the gpu backend/);
    } finally {
      scorer.destroy();
    }
  });

  it('picks the GPU when the adapter reports a discrete GPU (the same device, disguised)', async () => {
    const disguise = { vendor: 'nvidia', architecture: 'hopper', device: '', description: 'NVIDIA H200', isFallbackAdapter: false };
    const disguised = new Proxy(adapter, {
      get: (target, key) => {
        if (key === 'info') return disguise;
        if (key === 'isFallbackAdapter') return false;
        const v = Reflect.get(target, key, target) as unknown;
        return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
      },
    });
    const gpu = { requestAdapter: async () => disguised } as unknown as GPU;
    const notices: string[] = [];
    const scorer = await createScorer({ backend: 'auto', gpu, onNotice: (m) => notices.push(m) });
    try {
      expect(scorer.backend).toBe('gpu');
      expect(notices).toEqual([expect.stringMatching(/scoring on the gpu backend \(NVIDIA H200/)]);
      const forest = generateForest({ trees: 6, dim: 8, seed: 3 });
      expect((await scorer.score(forest)).backend).toBe('gpu');
    } finally {
      scorer.destroy();
    }
  });

  it('live forest: the same choice, said once', async () => {
    const notices: string[] = [];
    const live = await createLiveForest({ dim: 4, backend: 'auto', onNotice: (m) => notices.push(m) });
    try {
      expect(live.backendKind).toBe(emulated ? 'cpu' : 'gpu');
      expect(notices).toHaveLength(1);
      expect(notices[0]).toMatch(emulated ? /(CPU-emulated|no GPU device).*re-scoring on the cpu/ : /re-scoring on the gpu/);
    } finally {
      live.destroy();
    }
  });

  it('CLI: score --backend auto says on stderr, once, which backend and why; --backend gpu still uses the adapter', () => {
    const dir = mkdtempSync(join(tmpdir(), 'trace-alloc-auto-'));
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
    const file = join(dir, 'f.json');
    writeFileSync(file, JSON.stringify({ dim: 2, trees: [{ id: 'a', nodes: [{ embedding: [1, 0] }, { parent: 0, reward: 1, visits: 1, embedding: [0, 1] }, { parent: 0, embedding: [1, 1] }] }] }));
    const auto = runCli(['score', file]);
    expect(auto.code).toBe(0);
    const lines = auto.stderr.split('\n').filter((l) => l.includes('backend auto'));
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(emulated ? /(CPU-emulated|no GPU device).*scoring on the cpu backend/ : /scoring on the gpu backend/);
    const gpu = runCli(['score', file, '--backend', 'gpu']);
    expect(gpu.code).toBe(0);
    expect(JSON.parse(gpu.stdout).trees[0].id).toBe('a');
    expect(gpu.stderr).not.toMatch(/backend auto/);
  });

  it('serve --stdio: the live forest\'s choice, once on stderr', () => {
    const requests = [
      { id: 1, op: 'add-tree', tree: { id: 'q1', nodes: [{ embedding: [1, 0] }, { parent: 0, embedding: [1, 0.01] }, { parent: 0, embedding: [0, 1] }] } },
      { id: 2, op: 'plan', budget: 8 },
      { id: 3, op: 'plan', budget: 4 },
    ];
    const r = runCli(['serve', '--stdio'], requests.map((q) => JSON.stringify(q)).join('\n') + '\n');
    expect(r.code).toBe(0);
    expect(r.stdout.trim().split('\n').map((l) => JSON.parse(l).ok)).toEqual([true, true, true]);
    const lines = r.stderr.split('\n').filter((l) => l.startsWith('trace-alloc serve: live forest'));
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(emulated ? /(CPU-emulated|no GPU device).*re-scoring on the cpu/ : /re-scoring on the gpu/);
  });
});
