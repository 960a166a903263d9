import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import b from 'benny';
import type { CaseResult, Summary } from 'benny/lib/internal/common-types.js';
import { allocate } from '../src/allocate/allocate.js';
import type { PackedForest } from '../src/forest/packed.js';
import { CpuScorer } from '../src/score/cpu.js';
import { chooseAutoBackend } from '../src/backend/select.js';
import { defaultThreads } from '../src/score/threads.js';
import { DEFAULT_PARAMS } from '../src/score/types.js';
import { formatNumber, markdownTable } from '../report/svg.js';
import { MemoryPass } from './memory-pass.js';
import { checkAgainstReference } from './check.js';
import { breakdown, openGpuBench, type GpuBench, type GpuTimings } from './gpu.js';
import { adapterSlug, autoChoiceOf, cpuMark, finishMachineInfo, machineInfo } from './machine.js';
import { naiveToArrays, scoreNaive, toNested } from './peers/naive.js';
import { probeNumpy, runNumpy } from './peers/numpy.js';
import { initTfjs, scoreTfjs } from './peers/tfjs.js';
import { writeReport } from './report.js';
import { PATH_LABEL, QUICK_FEW_SAMPLES, type BenchResults, type GpuBreakdown, type PathId, type WorkloadResult } from './results.js';
import { summarise, type Figure } from './stats.js';
import { buildForest, forestKey, packedBytes, planWorkloads, type Workload } from './workloads.js';

/**
 * `npm run bench` / `npm run bench:quick`: every path on every workload, side by side in one
 * process, then a results JSON and the report regenerated from it.
 *
 * Flags: --quick, --only W1,dim-0 (workload ids), --no-gpu, --no-peers, --note "text",
 * --out-dir DIR (default bench/results), --threads N (the threaded CPU path and the
 * memory-pass floor, timed on W1 and the tree sweep; default: available parallelism).
 */
interface Flags {
  quick: boolean;
  only?: string[];
  gpu: boolean;
  peers: boolean;
  notes: string[];
  outDir: string;
  threads: number;
}

const here = path.dirname(fileURLToPath(import.meta.url));

function parseFlags(argv: string[]): Flags {
  const f: Flags = { quick: false, gpu: true, peers: true, notes: [], outDir: path.join(here, 'results'), threads: defaultThreads() };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const value = () => {
      const v = argv[++i];
      if (v === undefined) throw new Error(`${a} needs a value`);
      return v;
    };
    if (a === '--quick') f.quick = true;
    else if (a === '--only') f.only = value().split(',');
    else if (a === '--no-gpu') f.gpu = false;
    else if (a === '--no-peers') f.peers = false;
    else if (a === '--note') f.notes.push(value());
    else if (a === '--out-dir') f.outDir = value();
    else if (a === '--threads') f.threads = Number(value());
    else throw new Error(`unknown flag ${a} (flags: --quick, --only IDS, --no-gpu, --no-peers, --note TEXT, --out-dir DIR, --threads N)`);
  }
  return f;
}

const PARAMS = DEFAULT_PARAMS;

interface Case {
  path: PathId;
  fn: () => unknown;
  /** Wall time of the path's first (untimed) call, to pick the sample count. */
  firstMs: number;
}

function timed<T>(f: () => T): [T, number] {
  const t0 = performance.now();
  const r = f();
  return [r, performance.now() - t0];
}

async function timedAsync<T>(f: () => Promise<T>): Promise<[T, number]> {
  const t0 = performance.now();
  const r = await f();
  return [r, performance.now() - t0];
}

function figureFromBenny(r: CaseResult): Figure {
  // Benchmark.js samples are seconds per call (each sample the mean of its cycle's calls).
  return summarise(r.details.sampleResults.map((s) => s * 1000), 'benny');
}

/**
 * Quick mode samples a case `QUICK_FEW_SAMPLES.samples` times instead of `minSamples` when one
 * call takes over `QUICK_FEW_SAMPLES.aboveMs` (the biggest batches and the slow paths on them),
 * judged from the untimed first call each path makes for its check. Benchmark.js may add
 * samples beyond the minimum while the case's time budget lasts; the report gives each
 * figure's count.
 */
function samplesFor(firstCallMs: number, s: { minSamples: number; quick: boolean }): number {
  return s.quick && firstCallMs > QUICK_FEW_SAMPLES.aboveMs ? QUICK_FEW_SAMPLES.samples : s.minSamples;
}

let cachedForest: { key: string; forest: PackedForest } | undefined;

async function runWorkload(w: Workload, ctx: { threads: { cpu: CpuScorer; pass: MemoryPass } | undefined; peers: boolean; gpu: GpuBench | undefined; gpuNote: string; tfjs: boolean; tfjsNote: string; numpy: boolean; numpyNote: string; sampling: { minSamples: number; maxTime: number; quick: boolean } }): Promise<WorkloadResult> {
  const t0 = performance.now();
  const key = forestKey(w);
  if (cachedForest?.key !== key) {
    const previous = cachedForest;
    cachedForest = undefined; // let the previous batch go before generating the next one
    cachedForest = { key, forest: buildForest(w, previous) };
  }
  const forest: PackedForest = cachedForest.forest;
  const generateMs = performance.now() - t0;
  const cpu = new CpuScorer();
  const [ref, cpuFirstMs] = timed(() => cpu.scoreSync(forest, PARAMS));
  const res: WorkloadResult = { ...w, nodes: forest.nodeCount, groups: forest.groupCount, packedBytes: packedBytes(forest), generateMs, peakRssMiB: 0, figures: {}, checks: {}, skipped: {} };
  const cases: Case[] = [{ path: 'cpu', fn: () => cpu.scoreSync(forest, PARAMS), firstMs: cpuFirstMs }];
  if (w.allocate) cases.push({ path: 'cpu+allocate', fn: () => allocate(forest, cpu.scoreSync(forest, PARAMS)), firstMs: cpuFirstMs });
  // All cores: the threaded CPU path and the memory-pass floor on as many threads (W1 and the tree sweep).
  const threads = ctx.threads;
  if (threads && (w.sweeps.includes('w1') || w.sweeps.includes('trees'))) {
    const [got, threadsMs] = await timedAsync(() => threads.cpu.score(forest, PARAMS));
    res.checks['cpu-threads'] = checkAgainstReference(forest, ref, got);
    if (res.checks['cpu-threads'].ok) cases.push({ path: 'cpu-threads', fn: async () => { await threads.cpu.score(forest, PARAMS); }, firstMs: threadsMs });
    const [, passMs] = await timedAsync(() => threads.pass.pass(forest.embedding));
    cases.push({ path: 'mem-floor', fn: async () => { await threads.pass.pass(forest.embedding); }, firstMs: passMs });
  }

  // GPU paths: checked once (that call also compiles the pipelines), then timed.
  const gpuTimings: GpuTimings[] = [];
  const gpu = ctx.gpu;
  const f16 = w.precision === 'f16';
  if (!gpu) {
    res.skipped.gpu = ctx.gpuNote;
  } else if (f16 && !gpu.hasF16) {
    res.skipped.gpu = 'the adapter has no shader-f16';
  } else {
    try {
      const [first, gpuMs] = await timedAsync(() => gpu.score(forest, PARAMS, f16));
      res.checks.gpu = checkAgainstReference(forest, ref, first.scores);
      if (res.checks.gpu.ok || f16) {
        // f16 embeddings round the inputs, so they are held to the check but timed regardless; the check's figure is reported.
        cases.push({ path: 'gpu', fn: async () => { gpuTimings.push((await gpu.score(forest, PARAMS, f16)).timings); }, firstMs: gpuMs });
        if (w.allocate) cases.push({ path: 'gpu+allocate', fn: async () => { allocate(forest, (await gpu.score(forest, PARAMS, f16)).scores); }, firstMs: gpuMs });
        cases.push({ path: 'floor', fn: async () => { await gpu.transferFloor(forest, f16); }, firstMs: gpuMs });
      }
    } catch (err) {
      res.skipped.gpu = `GPU scoring failed: ${(err as Error).message}`;
    }
  }

  const peers = w.peers && ctx.peers;
  // The peers implement rule v1's scoring (v2 only re-shares each pair's response, the same
  // work), so they are checked against the v1 reference.
  const refV1 = peers ? cpu.scoreSync(forest, { ...PARAMS, rule: 'v1' }) : ref;
  if (peers) {
    const { roots, byRow } = toNested(forest);
    const [, naiveMs] = timed(() => scoreNaive(roots, PARAMS.alpha, PARAMS.tau));
    res.checks.naive = checkAgainstReference(forest, refV1, naiveToArrays(forest, byRow));
    if (res.checks.naive.ok) cases.push({ path: 'naive', fn: () => scoreNaive(roots, PARAMS.alpha, PARAMS.tau), firstMs: naiveMs });
    if (ctx.tfjs) {
      const [tf, tfMs] = timed(() => scoreTfjs(forest, PARAMS.alpha, PARAMS.tau));
      res.checks.tfjs = checkAgainstReference(forest, refV1, tf);
      if (res.checks.tfjs.ok) cases.push({ path: 'tfjs', fn: () => scoreTfjs(forest, PARAMS.alpha, PARAMS.tau), firstMs: tfMs });
    } else res.skipped.tfjs = ctx.tfjsNote;
  }

  // A path that throws mid-suite (a lost device, say) must not cost the run its other figures.
  let summary: Summary | undefined;
  try {
    summary = await b.suite(
      `${w.id} (${w.label})`,
      b.configure({ cases: { minSamples: ctx.sampling.minSamples, maxTime: ctx.sampling.maxTime } }),
      // A sync case is handed over as a factory so benny's type probe does not run it an extra time.
      ...cases.map((c) => b.add(PATH_LABEL[c.path], c.fn.constructor.name === 'AsyncFunction' ? c.fn : () => c.fn, { minSamples: samplesFor(c.firstMs, ctx.sampling) })),
      b.cycle((r: CaseResult) => `  ${r.name}: ${formatNumber(r.details.mean * 1000)} ms ± ${r.margin} % (${r.samples} samples)`),
    );
  } catch (err) {
    const why = `the benchmark suite failed: ${err instanceof Error ? err.message : String(err)}`;
    console.error(`  ${w.id}: ${why}`);
    for (const c of cases) res.skipped[c.path] = why;
  }
  cases.forEach((c, i) => {
    const r = summary?.results[i];
    if (r && r.completed) res.figures[c.path] = figureFromBenny(r);
    else res.skipped[c.path] ??= 'benchmark did not complete';
  });
  // The breakdown comes from the calls Benchmark.js kept as samples (its last ones), not from its probe and calibration calls.
  const bd = breakdown(gpuTimings.slice(-(res.figures.gpu?.samples ?? 0) || gpuTimings.length));
  if (bd) {
    res.gpuBreakdown = bd;
    if (bd.kernels) res.figures['gpu-kernels'] = bd.kernels;
    else res.skipped['gpu-kernels'] = 'the adapter has no timestamp queries';
  }

  // numpy runs in its own process after the benny suite, timed by Python with the same sampling.
  if (peers) {
    if (ctx.numpy) {
      try {
        const run = runNumpy(forest, { ...PARAMS, minSamples: ctx.sampling.minSamples, maxTime: ctx.sampling.maxTime, fewSamplesAboveMs: ctx.sampling.quick ? QUICK_FEW_SAMPLES.aboveMs : undefined });
        res.checks.numpy = checkAgainstReference(forest, refV1, run.outputs);
        if (res.checks.numpy.ok) res.figures.numpy = summarise(run.samplesMs, 'python');
        console.log(`  ${PATH_LABEL.numpy}: ${formatNumber(res.figures.numpy?.meanMs ?? Number.NaN)} ms (${run.samplesMs.length} samples, timed in Python)`);
      } catch (err) {
        res.skipped.numpy = (err as Error).message;
      }
    } else res.skipped.numpy = ctx.numpyNote;
  }
  res.peakRssMiB = process.resourceUsage().maxRSS / 1024;
  return res;
}

async function main(): Promise<void> {
  const flags = parseFlags(process.argv.slice(2));
  const started = new Date();
  const machine = machineInfo();
  const cpuStart = cpuMark();
  const notes = [...flags.notes];
  process.env.XDG_RUNTIME_DIR ??= '/tmp/xdg';

  const threads = flags.threads > 0 ? { cpu: new CpuScorer({ threads: flags.threads }), pass: await MemoryPass.create(flags.threads) } : undefined;
  const opened = flags.gpu ? await openGpuBench() : { bench: undefined, adapter: { available: false, reason: 'disabled with --no-gpu' } };
  const gpu = opened.bench;
  const adapter = opened.adapter;
  const gpuNote = adapter.available ? '' : `no WebGPU adapter (${adapter.reason})`;
  // With --no-gpu no adapter was requested: ask auto's own rule (one adapter request, as with the GPU paths).
  const auto = flags.gpu ? autoChoiceOf(adapter) : await chooseAuto();
  console.log(`backend auto on this machine: ${auto.backend} (${auto.why})`);
  let tfjsNote = 'disabled with --no-peers';
  let tfjs = false;
  if (flags.peers) {
    try {
      const info = await initTfjs();
      tfjs = true;
      tfjsNote = `TensorFlow.js ${info.version} on ${info.backend} (SIMD ${info.simd ? 'on' : 'off'}, threads ${info.threads ? 'on' : 'off'})`;
    } catch (err) {
      tfjsNote = `TensorFlow.js peer skipped: ${(err as Error).message}`;
    }
  }
  const np = flags.peers ? probeNumpy() : { available: false, note: 'disabled with --no-peers' };
  if (!np.available) notes.push(np.note);
  const numpyNote = np.available ? `${np.note}, single-threaded BLAS like the other CPU paths` : np.note;

  const sampling = flags.quick ? { minSamples: 5, maxTime: 0.3, quick: true } : { minSamples: 10, maxTime: 3, quick: false };
  const plan = planWorkloads({ quick: flags.quick, maxBindingBytes: gpu?.maxBinding });
  notes.push(...plan.notes);
  let workloads = plan.workloads;
  if (flags.only) {
    const unknown = flags.only.filter((id) => !workloads.some((w) => w.id === id));
    if (unknown.length) throw new Error(`unknown workload ids ${unknown.join(', ')}; known: ${workloads.map((w) => w.id).join(', ')}`);
    workloads = workloads.filter((w) => flags.only!.includes(w.id));
  }
  // Tree sweep smallest first, so the RSS high-water mark after each point is meaningful; the
  // f16 twin of W1 right after W1 so it reuses the forest; everything else after.
  const rank = (w: Workload) => (w.sweeps.includes('trees') || w.sweeps.includes('precision') ? w.trees : 1e12);
  workloads.sort((a, c) => rank(a) - rank(c));

  console.log(`trace-alloc bench (${flags.quick ? 'quick' : 'full'}): ${workloads.length} workloads; adapter: ${adapter.available ? adapter.name : gpuNote}; ${tfjsNote}; ${numpyNote}`);
  const results: WorkloadResult[] = [];
  try {
    for (const w of workloads) {
      results.push(await runWorkload(w, { threads, peers: flags.peers, gpu, gpuNote, tfjs, tfjsNote, numpy: np.available, numpyNote, sampling }));
    }
  } finally {
    gpu?.destroy();
    threads?.cpu.destroy();
    threads?.pass.destroy();
  }

  const finished = new Date();
  const out: BenchResults = {
    schema: 'trace-alloc-bench/1',
    mode: flags.quick ? 'quick' : 'full',
    command: `npm run ${flags.quick ? 'bench:quick' : 'bench'}${process.argv.length > 2 + Number(flags.quick) ? ` -- ${process.argv.slice(2).filter((a) => a !== '--quick').join(' ')}` : ''}`,
    startedAt: started.toISOString(),
    finishedAt: finished.toISOString(),
    durationS: (finished.getTime() - started.getTime()) / 1000,
    machine: finishMachineInfo(machine, cpuStart),
    adapter,
    peers: { tfjs: tfjsNote, numpy: numpyNote },
    sampling: { minSamples: sampling.minSamples, maxTime: sampling.maxTime },
    notes,
    threads: flags.threads,
    auto,
    workloads: results,
  };
  mkdirSync(flags.outDir, { recursive: true });
  const name = `${started.toISOString().slice(0, 10)}-${adapterSlug(adapter)}${flags.quick ? '-quick' : ''}.json`;
  const file = path.join(flags.outDir, name);
  writeFileSync(file, JSON.stringify(out, null, 1) + '\n');
  // Only a run that writes to the committed results folder refreshes the README's W1 section.
  const defaultDir = path.resolve(flags.outDir) === path.resolve(here, 'results');
  const written = writeReport(out, name, flags.outDir, defaultDir ? path.join(here, '..', 'README.md') : undefined);

  console.log('');
  console.log(markdownTable(['workload', ...PATHS_PRINTED.map((p) => PATH_LABEL[p])], results.map((r) => [r.id, ...PATHS_PRINTED.map((p) => r.figures[p]?.meanMs ?? '—')])));
  console.log(`(ms per call, mean; ${adapter.emulated ? 'GPU rows are CPU-emulated (lavapipe): read them as ratios to the CPU reference' : ''})`);
  const headline = readFileSync(path.join(flags.outDir, 'latest.md'), 'utf8').split('\n').find((l) => l.startsWith('On W1'));
  if (headline) console.log(`\n${headline}`);
  console.log(`wrote ${file}`);
  for (const p of written) console.log(`wrote ${p}`);
}

async function chooseAuto(): Promise<{ backend: 'cpu' | 'gpu'; why: string }> {
  const c = await chooseAutoBackend();
  return c.backend === 'gpu' ? { backend: 'gpu', why: `a hardware adapter, ${c.name}` } : { backend: 'cpu', why: c.why };
}

const PATHS_PRINTED: PathId[] = ['cpu', 'cpu-threads', 'mem-floor', 'gpu', 'gpu-kernels', 'floor', 'naive', 'tfjs', 'numpy'];

main().catch((err) => {
  console.error(err instanceof Error ? (err.stack ?? err.message) : err);
  process.exit(1);
});
