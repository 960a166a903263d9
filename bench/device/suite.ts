/**
 * The one-shot GPU benchmark run on a borrowed GPU machine by `bench/device/run.sh` (compiled to
 * JS by `prepare.sh`, so it needs only the bundled Node): W1 and the tree sweep, each timed as
 * GPU end to end, GPU kernels alone (timestamp queries), the transfer floor, the CPU reference
 * on one thread and on all threads, and one memory pass over the embedding matrix on all
 * threads. Every path is checked against the float64 reference first. Writes one results JSON
 * (the `npm run bench` schema) and the report with its charts into the output folder.
 *
 *   node bench/device/suite.js --out DIR [--threads N] [--budget-s S]
 *
 * Sampling is by time, not benny: each case runs until it has 5 samples and 1 s of samples, at
 * most 25 samples or 3 when one call takes over 2 s, so the whole run fits a short lease.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { CpuScorer } from '../../src/score/cpu.js';
import { defaultThreads } from '../../src/score/threads.js';
import { DEFAULT_PARAMS } from '../../src/score/types.js';
import type { PackedForest } from '../../src/forest/packed.js';
import { checkAgainstReference } from '../check.js';
import { fixedCostTable } from '../gpu-fixed-cost.js';
import { breakdown, openGpuBench, type GpuTimings } from '../gpu.js';
import { adapterSlug, autoChoiceOf, cpuMark, finishMachineInfo, machineInfo } from '../machine.js';
import { MemoryPass } from '../memory-pass.js';
import { writeReport } from '../report.js';
import type { BenchResults, PathId, WorkloadResult } from '../results.js';
import { summarise, type Figure, type FigureSource } from '../stats.js';
import { buildForest, forestKey, packedBytes, planWorkloads } from '../workloads.js';

interface Options { out: string; threads: number; budgetS: number }

function parseArgs(argv: string[]): Options {
  const o: Options = { out: '', threads: defaultThreads(), budgetS: 240 };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i], v = argv[i + 1];
    if (a === '--out' && v) { o.out = v; i++; } else if (a === '--threads' && v) { o.threads = Number(v); i++; } else if (a === '--budget-s' && v) { o.budgetS = Number(v); i++; } else throw new Error(`unknown argument ${a} (usage: suite.js --out DIR [--threads N] [--budget-s S])`);
  }
  if (!o.out) throw new Error('--out DIR is required');
  return o;
}

async function sample(fn: () => Promise<unknown> | unknown, firstMs: number, source: FigureSource): Promise<Figure> {
  const maxSamples = firstMs > 2000 ? 3 : 25;
  const ms: number[] = [];
  let spent = 0;
  while (ms.length < maxSamples && (ms.length < (firstMs > 2000 ? 3 : 5) || spent < 1000)) {
    const t0 = performance.now();
    await fn();
    const dt = performance.now() - t0;
    ms.push(dt);
    spent += dt;
  }
  return summarise(ms, source);
}

async function main(): Promise<void> {
  const o = parseArgs(process.argv.slice(2));
  const started = new Date();
  const machine = machineInfo();
  const cpuStart = cpuMark();
  const notes: string[] = [];
  const opened = await openGpuBench();
  const gpu = opened.bench, adapter = opened.adapter;
  const auto = autoChoiceOf(adapter);
  console.log(`adapter: ${adapter.available ? `${adapter.name}${adapter.emulated ? ' (CPU-emulated)' : ''}` : adapter.reason}; auto picks ${auto.backend}; ${o.threads} CPU threads`);
  const one = new CpuScorer({ threads: 1 });
  const many = new CpuScorer({ threads: o.threads });
  const pass = await MemoryPass.create(o.threads);

  let workloads = planWorkloads({ quick: true }).workloads.filter((w) => w.sweeps.includes('w1') || w.sweeps.includes('trees') || w.sweeps.includes('precision'));
  if (adapter.emulated) {
    workloads = workloads.filter((w) => w.trees <= 4096);
    notes.push('CPU-emulated adapter: the 16384-tree point was left out to keep the run short');
  }
  const rank = (w: (typeof workloads)[number]) => w.trees + (w.precision === 'f16' ? 0.5 : 0);
  workloads.sort((a, b) => rank(a) - rank(b));

  const results: WorkloadResult[] = [];
  let cached: { key: string; forest: PackedForest } | undefined;
  try {
    for (const w of workloads) {
      const elapsed = (performance.now() - cpuStart.wallMs) / 1000;
      if (elapsed > o.budgetS) { notes.push(`${w.id} skipped: the run had used its ${o.budgetS} s budget`); continue; }
      const t0 = performance.now();
      const key = forestKey(w);
      if (cached?.key !== key) { const prev = cached; cached = undefined; cached = { key, forest: buildForest(w, prev) }; }
      const forest = cached.forest;
      const res: WorkloadResult = { ...w, nodes: forest.nodeCount, groups: forest.groupCount, packedBytes: packedBytes(forest), generateMs: performance.now() - t0, peakRssMiB: 0, figures: {}, checks: {}, skipped: {} };
      const f16 = w.precision === 'f16';
      const add = async (p: PathId, fn: () => Promise<unknown> | unknown, source: FigureSource) => {
        const t = performance.now();
        await fn();
        res.figures[p] = await sample(fn, performance.now() - t, source);
        console.log(`  ${w.id} ${p}: ${res.figures[p]!.meanMs.toFixed(3)} ms (${res.figures[p]!.samples} samples)`);
      };
      const t = performance.now();
      const ref = one.scoreSync(forest, DEFAULT_PARAMS);
      if (!f16) {
        res.figures.cpu = await sample(() => one.scoreSync(forest, DEFAULT_PARAMS), performance.now() - t, 'wall');
        console.log(`  ${w.id} cpu: ${res.figures.cpu.meanMs.toFixed(3)} ms`);
        res.checks['cpu-threads'] = checkAgainstReference(forest, ref, await many.score(forest, DEFAULT_PARAMS));
        if (res.checks['cpu-threads'].ok) await add('cpu-threads', () => many.score(forest, DEFAULT_PARAMS), 'wall');
        await add('mem-floor', () => pass.pass(forest.embedding), 'wall');
      }
      if (!gpu) res.skipped.gpu = `no WebGPU adapter (${adapter.reason})`;
      else if (f16 && !gpu.hasF16) res.skipped.gpu = 'the adapter has no shader-f16';
      else {
        try {
          const first = await gpu.score(forest, DEFAULT_PARAMS, f16);
          res.checks.gpu = checkAgainstReference(forest, ref, first.scores);
          if (res.checks.gpu.ok || f16) {
            const timings: GpuTimings[] = [];
            await add('gpu', async () => { timings.push((await gpu.score(forest, DEFAULT_PARAMS, f16)).timings); }, 'gpu-wall');
            const bd = breakdown(timings.slice(-(res.figures.gpu?.samples ?? 0)));
            if (bd) {
              res.gpuBreakdown = bd;
              if (bd.kernels) res.figures['gpu-kernels'] = bd.kernels;
              else res.skipped['gpu-kernels'] = 'the adapter has no timestamp queries';
            }
            await add('floor', () => gpu.transferFloor(forest, f16), 'gpu-wall');
          }
        } catch (err) {
          res.skipped.gpu = `GPU scoring failed: ${(err as Error).message}`;
        }
      }
      res.peakRssMiB = process.resourceUsage().maxRSS / 1024;
      results.push(res);
    }
    // The fixed cost of small calls (bind groups, buffers, submissions), which only a real
    // GPU's driver shows: a few seconds, into fixed-cost.md.
    if (gpu && (performance.now() - cpuStart.wallMs) / 1000 <= o.budgetS) {
      const table = await fixedCostTable(gpu.context, 40);
      mkdirSync(o.out, { recursive: true });
      writeFileSync(path.join(o.out, 'fixed-cost.md'), `# Fixed cost of GPU calls (bench/gpu-fixed-cost.ts, 40 calls)\n\n${table}\n`);
      console.log(table);
    } else {
      notes.push('fixed-cost table skipped: no GPU, or the run had used its budget');
    }
  } finally {
    gpu?.destroy();
    many.destroy();
    pass.destroy();
  }

  const finished = new Date();
  const out: BenchResults = {
    schema: 'trace-alloc-bench/1',
    mode: 'quick',
    command: `bash bench/device/run.sh (suite --threads ${o.threads} --budget-s ${o.budgetS})`,
    startedAt: started.toISOString(),
    finishedAt: finished.toISOString(),
    durationS: (finished.getTime() - started.getTime()) / 1000,
    machine: finishMachineInfo(machine, cpuStart),
    adapter,
    peers: { tfjs: 'not run on the device machine', numpy: 'not run on the device machine' },
    sampling: { minSamples: 5, maxTime: 1 },
    notes,
    threads: o.threads,
    auto,
    workloads: results,
  };
  mkdirSync(o.out, { recursive: true });
  const name = `${started.toISOString().slice(0, 10)}-${adapterSlug(adapter)}-device.json`;
  writeFileSync(path.join(o.out, name), JSON.stringify(out, null, 1) + '\n');
  for (const p of writeReport(out, name, o.out)) console.log(`wrote ${p}`);
  console.log(`wrote ${path.join(o.out, name)}`);
  const w1 = results.find((w) => w.id === 'W1');
  if (w1) {
    const f = (p: PathId) => (w1.figures[p] ? `${w1.figures[p]!.meanMs.toFixed(2)} ms` : '—');
    console.log(`W1: gpu ${f('gpu')}, kernels ${f('gpu-kernels')}, floor ${f('floor')}, cpu 1 thread ${f('cpu')}, cpu ${o.threads} threads ${f('cpu-threads')}, memory pass ${f('mem-floor')}`);
  }
}

main().catch((err) => {
  console.error(err instanceof Error ? (err.stack ?? err.message) : err);
  process.exit(1);
});
