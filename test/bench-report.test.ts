import { describe, expect, it } from 'vitest';
import { adapterSlug, isEmulated } from '../bench/machine.js';
import { renderReport, CHARTS } from '../bench/report.js';
import type { BenchResults, WorkloadResult } from '../bench/results.js';
import { ratio, summarise } from '../bench/stats.js';
import { groupsPerTree, nodesPerTree, planWorkloads } from '../bench/workloads.js';

describe('workload plan', () => {
  it('W1 is 4096 trees of 85 nodes, about 87k groups, dim 128', () => {
    const { workloads } = planWorkloads({ quick: false });
    const w1 = workloads.find((w) => w.id === 'W1')!;
    expect(nodesPerTree(w1.branching, w1.depth)).toBe(85);
    expect(w1.trees * groupsPerTree(w1.branching, w1.depth)).toBe(86016);
    expect(w1.dim).toBe(128);
    expect(w1.sweeps).toEqual(['w1', 'trees']);
  });
  it('covers the sweeps the issue asks for, quick and full', () => {
    for (const quick of [true, false]) {
      const { workloads } = planWorkloads({ quick, maxBindingBytes: 128 * 2 ** 20 });
      const of = (s: string) => workloads.filter((w) => w.sweeps.includes(s as never));
      expect(of('trees').map((w) => w.trees).sort((a, b) => a - b)).toEqual([64, 256, 1024, 4096, 16384]);
      expect(of('group').map((w) => w.branching)).toEqual([2, 8, 32, 256]);
      expect(of('dim').map((w) => w.dim).sort((a, b) => a - b)).toEqual([0, 16, 128, 1024]);
      expect(of('precision').map((w) => w.precision)).toEqual(['f16']);
      // group sweep: same number of children rows for every group size
      expect(new Set(of('group').map((w) => w.trees * w.branching)).size).toBe(1);
      const ids = workloads.map((w) => w.id);
      expect(new Set(ids).size).toBe(ids.length);
    }
  });
  it('sizes the chunked batch past the storage binding, or skips it with a note', () => {
    const binding = 128 * 2 ** 20;
    const chunked = planWorkloads({ quick: true, maxBindingBytes: binding }).workloads.find((w) => w.id === 'chunked')!;
    expect(chunked.trees * nodesPerTree(chunked.branching, chunked.depth) * chunked.dim * 4).toBeGreaterThan(binding);
    expect(planWorkloads({ quick: true }).notes.join()).toMatch(/chunked workload skipped: no WebGPU adapter/);
    expect(planWorkloads({ quick: true, maxBindingBytes: 2 ** 40 }).notes.join()).toMatch(/over the .* host cap/);
  });
});

describe('stats', () => {
  it('summarises samples with a t-based margin of error', () => {
    const f = summarise([10, 12, 11, 13, 9], 'benny');
    expect(f.meanMs).toBe(11);
    expect(f.medianMs).toBe(11);
    expect(f.sdMs).toBeCloseTo(Math.sqrt(2.5), 12);
    expect(f.rmePct).toBeCloseTo(((2.776 * Math.sqrt(2.5)) / Math.sqrt(5) / 11) * 100, 6);
    expect(() => summarise([], 'benny')).toThrow(/no samples/);
    const q = ratio(summarise([20, 20], 'benny'), f);
    expect(q.value).toBeCloseTo(20 / 11, 12);
    expect(q.lo).toBeLessThan(q.value);
    expect(q.hi).toBeGreaterThan(q.value);
  });
});

describe('adapter naming', () => {
  it('recognises software adapters and names result files', () => {
    expect(isEmulated({ vendor: 'mesa', architecture: 'software', device: 'llvmpipe' })).toBe(true);
    expect(isEmulated({ vendor: 'nvidia', architecture: 'hopper', device: 'NVIDIA H200', description: '' })).toBe(false);
    expect(adapterSlug({ available: true, device: 'llvmpipe-llvm-15-0-6-256-bits-' })).toBe('llvmpipe');
    expect(adapterSlug({ available: true, vendor: 'nvidia', device: 'NVIDIA H200' })).toBe('nvidia-h200');
    expect(adapterSlug({ available: false, reason: 'none' })).toBe('cpu-only');
  });
});

function workload(id: string, trees: number, sweeps: WorkloadResult['sweeps'], ms: Partial<Record<'cpu' | 'gpu' | 'floor' | 'naive', number>>): WorkloadResult {
  const figures = Object.fromEntries(Object.entries(ms).map(([p, v]) => [p, summarise([v * 0.9, v, v * 1.1], 'benny')]));
  return {
    id, label: `${id} label`, sweeps, trees, branching: 4, depth: 3, dim: 128, precision: 'f32', seed: 1, peers: true, allocate: false,
    nodes: trees * 85, groups: trees * 21, packedBytes: trees * 85 * 600, generateMs: 1, peakRssMiB: 100, figures,
    checks: { naive: { ok: true, maxAbs: 1e-12, maxGradRel: 0, worst: 'none' } }, skipped: { numpy: 'python3 has no numpy' },
  };
}

function results(emulated: boolean): BenchResults {
  return {
    schema: 'trace-alloc-bench/1', mode: 'quick', command: 'npm run bench:quick', startedAt: '2026-11-29T12:05:00.000Z', finishedAt: '2026-11-29T12:07:00.000Z', durationS: 120,
    machine: { cpuModel: 'Test CPU', cores: 2, memoryGiB: 8, platform: 'Linux', arch: 'x64', node: 'v20', v8: '11', loadStart: 3, loadEnd: 3, shared: true },
    adapter: { available: true, name: emulated ? 'llvmpipe' : 'NVIDIA H200', emulated },
    peers: { tfjs: 'tfjs test', numpy: 'numpy test' }, sampling: { minSamples: 5, maxTime: 0.3 }, notes: ['a note'],
    workloads: [
      workload('trees-64', 64, ['trees'], { cpu: 2, gpu: 4, floor: 1, naive: 5 }),
      workload('W1', 4096, ['w1', 'trees'], { cpu: 100, gpu: 50, floor: 10, naive: 300 }),
      workload('dim-0', 1024, ['dim'], { cpu: 10, naive: 20 }),
    ],
  };
}

describe('report rendering', () => {
  it('writes the charts and a Markdown report computed from the JSON', () => {
    const { files } = renderReport(results(true), 'x.json');
    expect(Object.keys(files).sort()).toEqual([CHARTS.perGroup, CHARTS.speedup, CHARTS.timeVsTrees, 'latest.md'].sort());
    for (const name of Object.values(CHARTS)) expect(files[name]).toMatch(/^<svg [^]*<\/svg>\n$/);
    const md = files['latest.md']!;
    // W1: GPU 50 ms vs CPU 100 ms -> 0.5 of the CPU time; GPU/naive = 50/300.
    expect(md).toMatch(/\| GPU end to end \(CPU-emulated\) \| ratio only \| 0\.5 \| 1 \|/);
    expect(md).toMatch(/\| peer: JS over nested objects \| 300 ± [\d.]+ % \| 3 \| 0\.167 \| ok/);
    expect(md).toContain('CPU-emulated');
    expect(md).toContain('On W1 the GPU path (lavapipe, CPU-emulated) takes 0.5× the CPU reference, 0.167× nested-object JS, 5× its own transfer floor');
    expect(md).toContain('machine was shared');
    expect(md).toContain('load average 3 at the start');
    expect(md).toContain('numpy: python3 has no numpy (trees-64, W1, dim-0)');
    // per-group scaling: W1 cpu 100 ms / 86016 groups = 1163 ns
    expect(md).toMatch(/\| 4096 \| 86016 \| 1163 \|/);
    // dim-0 has no GPU figure: its GPU cell is a placeholder, and the speed-up chart draws no bar there
    expect(md).toMatch(/\| dim-0 label \| 21504 \| 10 \| — \|/);
    // bars: gpu on trees-64 and W1, naive on all three; the floor computes nothing and gets no bar
    expect(files[CHARTS.speedup]!.match(/class="bar"/g)!.length).toBe(2 + 3);
    expect(files[CHARTS.timeVsTrees]).toContain('GPU end to end (CPU-emulated)');
  });
  it('quotes GPU milliseconds on a real GPU', () => {
    const md = renderReport(results(false), 'x.json').files['latest.md']!;
    expect(md).toMatch(/\| GPU end to end \| 50 ± [\d.]+ % \|/);
    expect(md).not.toContain('CPU-emulated');
  });
});

describe('tiled batches', () => {
  it('repeat the trees (renamed) so scores repeat too', async () => {
    const { tileForest } = await import('../bench/workloads.js');
    const { generateRegularForest } = await import('../src/synth/generate.js');
    const { scoreCpu } = await import('../src/score/cpu.js');
    const f = generateRegularForest({ trees: 3, branching: 3, depth: 2, dim: 4, seed: 2 });
    const t = tileForest(f, 2);
    expect(t.treeCount).toBe(6);
    expect(t.groupCount).toBe(2 * f.groupCount);
    expect(t.treeIds.slice(0, 4)).toEqual(['t0#0', 't1#0', 't2#0', 't0#1']);
    const a = scoreCpu(f);
    const b = scoreCpu(t);
    expect(Array.from(b.weight)).toEqual([...a.weight, ...a.weight]);
    expect(Array.from(b.intensity)).toEqual([...a.intensity, ...a.intensity]);
  });
});

describe('GPU time table', () => {
  it('gives GPU ÷ CPU and the floor share per workload with a GPU figure', () => {
    const md = renderReport(results(true), 'x.json').files['latest.md']!;
    // W1: GPU 50 ms, CPU 100 ms, floor 10 ms; no breakdown in the fixture
    expect(md).toMatch(/\| W1 \| 0\.5 \| 0\.2 \| — \| — \|/);
    expect(md).not.toMatch(/\| dim-0 \| [\d.]+ \| /);
  });
});

describe('shared-machine detection', () => {
  it('counts only other processes\' CPU time, not this process\'s threads', async () => {
    const { cpuMark, finishMachineInfo, machineInfo } = await import('../bench/machine.js');
    const start = cpuMark();
    const t0 = performance.now();
    let x = 0;
    while (performance.now() - t0 < 200) x += Math.sqrt(x + 1); // our own busy time
    expect(x).toBeGreaterThan(0);
    const m = finishMachineInfo(machineInfo(), start);
    expect(m.otherCpuShare).toBeGreaterThanOrEqual(0);
    expect(m.otherCpuShare).toBeLessThanOrEqual(1);
    expect(m.shared).toBe(m.otherCpuShare! > 0.1);
  });
});

describe('README injection', () => {
  it('replaces only the text between the bench markers with the run line and the W1 section', async () => {
    const { injectIntoReadme, README_START, README_END } = await import('../bench/report.js');
    const latest = '<!-- header -->\n\n**Run:** quick\n\n#### W1: 4096 trees\n\n| a |\n\n#### Speed-up over the CPU reference\n\n| b |\n';
    const readme = `# Title\n\nbefore\n\n${README_START}\nold figures\n${README_END}\n\nafter\n`;
    const out = injectIntoReadme(readme, latest, 'x.json');
    expect(out.startsWith('# Title\n\nbefore\n\n')).toBe(true);
    expect(out.endsWith(`${README_END}\n\nafter\n`)).toBe(true);
    expect(out).toContain('**Run:** quick');
    expect(out).toContain('##### W1: 4096 trees');
    expect(out).not.toContain('old figures');
    expect(out).not.toContain('Speed-up');
    expect(out).toContain('bench/results/x.json');
    expect(injectIntoReadme('# no markers\n', latest, 'x.json')).toBe('# no markers\n');
  });
});

describe('sample counts', () => {
  it('states the count behind every figure instead of a minimum the sampler may not have reached', () => {
    const r = results(true);
    r.workloads[1].figures.naive = summarise([290, 300, 310], 'benny'); // 3 samples, fewer than minSamples 5
    r.workloads[1].figures.cpu = summarise([99, 100, 101, 100, 100, 100], 'benny');
    const md = renderReport(r, 'x.json').files['latest.md']!;
    expect(md).not.toMatch(/≥ ?5 samples/);
    expect(md).toContain("the tables give each figure's sample count (3 to 6 in this run)");
    expect(md).toContain('at least 3 for a case whose first call took over 0.4 s');
    // W1 table: the last column is the figure's sample count
    expect(md).toMatch(/\| CPU reference \(float64\) \| 100 ± [\d.]+ % \| 1 \| 0\.5 \| reference \| 6 \|/);
    expect(md).toMatch(/\| peer: JS over nested objects \| 300 ± [\d.]+ % \| 3 \| 0\.167 \| ok \([^)]*\) \| 3 \|/);
    // speed-up table: counts in column order (CPU ref, then each path column; — where not timed)
    expect(md).toMatch(/\| W1 label \| 86016 \| 100 \| 2 \| 0\.333 \| 6 · 3 · 3 \|/);
    expect(md).toMatch(/\| dim-0 label \| 21504 \| 10 \| — \| 0\.5 \| 3 · — · 3 \|/);
  });

  it('the committed report and the W1 section of docs/BENCHMARKS.md are what bench/report.ts renders from the committed JSON', async () => {
    const { readFileSync } = await import('node:fs');
    const { injectIntoReadme } = await import('../bench/report.js');
    const at = (p: string) => new URL(`../${p}`, import.meta.url);
    const committed = readFileSync(at('bench/results/latest.md'), 'utf8');
    const json = /from bench\/results\/([^\s.]+\.json)/.exec(committed)![1];
    const rendered = renderReport(JSON.parse(readFileSync(at(`bench/results/${json}`), 'utf8')) as BenchResults, json).files;
    expect(committed).toBe(rendered['latest.md']);
    for (const chart of Object.values(CHARTS)) expect(readFileSync(at(`bench/results/${chart}`), 'utf8'), chart).toBe(rendered[chart]);
    const readme = readFileSync(at('docs/BENCHMARKS.md'), 'utf8');
    expect(readme).toContain('<!-- bench:w1:start -->');
    expect(injectIntoReadme(readme, rendered['latest.md']!, json)).toBe(readme);
  });
});
