/**
 * Latency of a live forest (issue 6): W1 resident (4096 trees, branching 4, depth 3, dim 128),
 * and per update 1 %, 10 % or 100 % of the sibling groups get new feedback; one update is
 * change + rescore + plan (per-tree budget 16), timed end to end. CPU (float64 reference) and
 * GPU (WebGPU; lavapipe on a machine without a GPU) side by side, in one process.
 *
 *   npm run bench:live            # writes bench/results/live-latest.{json,md} and live-latency.svg
 *   npm run bench:live -- --quick # 512 trees, fewer samples, writes nothing (smoke test)
 *   npm run bench:live -- --report # re-render the .md and .svg from live-latest.json
 *   node --expose-gc --import tsx bench/live.ts --gc --cpu   # GC check, writes nothing:
 *     a minor GC before every update, outside the timed span, so no scavenge lands in it
 *     (compare its p99 with a plain run's to see whether GC is in the tail); --cpu: no GPU cases
 *
 * benny drives the cases (warm-up, sampling, time budget); every call is also timed on its
 * own so p50/p99 are of single updates, not of benny's cycle means.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import b from 'benny';
import type { CaseResult } from 'benny/lib/internal/common-types.js';
import { barChart, formatNumber, markdownTable } from '../report/svg.js';
import { GpuContext } from '../src/gpu/context.js';
import { GpuUnavailableError } from '../src/gpu/errors.js';
import { createLiveForest } from '../src/live/create.js';
import type { LiveForest } from '../src/live/forest.js';
import type { GpuLiveBackend } from '../src/live/gpu.js';
import type { NodeUpdate } from '../src/live/store.js';
import { generateRegularForest } from '../src/synth/generate.js';
import { Rng } from '../src/util/random.js';
import { finishMachineInfo, machineInfo } from './machine.js';

process.env.XDG_RUNTIME_DIR ??= '/tmp';

const quick = process.argv.includes('--quick');
const cpuOnly = process.argv.includes('--cpu');
/** `--gc`: collect the young generation before each update (needs node --expose-gc). */
const gcEach = process.argv.includes('--gc') ? (globalThis as { gc?: (o?: { type: 'minor' | 'major' }) => void }).gc : undefined;
if (process.argv.includes('--gc') && gcEach === undefined) throw new Error('--gc needs node --expose-gc');
const writeResults = !quick && gcEach === undefined && !cpuOnly;
const SHAPE = { trees: quick ? 512 : 4096, branching: 4, depth: 3, dim: 128, seed: 20261129 };
/** Share of groups dirty per update, and the budget mode of the plan. */
const CASES = [
  { fraction: 0.01, mode: 'per-tree' },
  { fraction: 0.1, mode: 'per-tree' },
  { fraction: 1, mode: 'per-tree' },
  // Global budget: every tree's share depends on all trees' intensities, so more trees re-plan.
  { fraction: 0.01, mode: 'global' },
] as const;
type Mode = (typeof CASES)[number]['mode'];
const label = (c: { fraction: number; mode: Mode }) => `${c.fraction * 100}%${c.mode === 'global' ? ' global' : ''}`;
const WARMUP = 5;
const BUDGET = 16;
const TARGET_MS = 5;

interface Stat { p50: number; p99: number; mean: number; min: number; max: number; n: number }
interface CaseOut {
  backend: 'cpu' | 'gpu';
  fraction: number;
  /** per-tree: budget 16 for every tree; global: totalBudget 16 × trees, minPerTree 1. */
  mode: Mode;
  dirtyGroups: number;
  /** change + rescore + plan of one update, ms. */
  total: Stat;
  parts: { change: Stat; rescore: Stat; plan: Stat };
  /** Mean trees re-planned per update. */
  replannedTrees: number;
  /** GPU only: bytes sent to / read back from the device per update (mean). */
  uploadBytes?: number;
  readBackBytes?: number;
  benny: { meanMs: number; samples: number; marginPct: number };
}

function stat(xs: number[]): Stat {
  const s = [...xs].sort((a, b) => a - b);
  const q = (p: number) => s[Math.min(s.length - 1, Math.max(0, Math.ceil(p * s.length) - 1))];
  return { p50: q(0.5), p99: q(0.99), mean: s.reduce((a, b) => a + b, 0) / s.length, min: s[0], max: s[s.length - 1], n: s.length };
}

/** For each group, one child to give feedback to: (tree id, node index). */
function groupTargets(live: LiveForest): { tree: string[]; node: Int32Array } {
  const s = live.store;
  const tree: string[] = [];
  const nodes: number[] = [];
  for (const slot of s.treeOrder) {
    const lo = s.slotStart[slot];
    for (let p = lo; p < lo + s.slotSize[slot]; p++) {
      if (s.childCount[p] === 0) continue;
      tree.push(s.slotId[slot]);
      nodes.push(s.child[s.childStart[p]] - lo);
    }
  }
  return { tree, node: Int32Array.from(nodes) };
}

async function runBackend(backend: 'cpu' | 'gpu', context: GpuContext | undefined, loads: number[]): Promise<CaseOut[]> {
  const t0 = performance.now();
  const forest = generateRegularForest(SHAPE);
  const live = await createLiveForest({ dim: SHAPE.dim, backend, ...(context ? { gpu: { context } } : {}) });
  live.addForest(forest);
  await live.plan({ budget: BUDGET });
  console.log(`${backend}: ${live.treeCount} trees, ${live.nodeCount} nodes, ${live.stats().groups} groups resident in ${formatNumber((performance.now() - t0) / 1000)} s`);
  const targets = groupTargets(live);
  const G = targets.node.length;
  const order = new Int32Array(G).map((_, i) => i);
  const rng = new Rng(SHAPE.seed + (backend === 'gpu' ? 1 : 0));
  const gpu = backend === 'gpu' ? (live.backend as GpuLiveBackend) : undefined;

  const outs: CaseOut[] = [];
  const recorders = CASES.map(({ fraction, mode }) => {
    const k = Math.max(1, Math.round(fraction * G));
    const planOptions = mode === 'global' ? { totalBudget: BUDGET * live.treeCount, minPerTree: 1 } : { budget: BUDGET };
    const rec = { fraction, mode, k, change: [] as number[], rescore: [] as number[], plan: [] as number[], total: [] as number[], replanned: [] as number[], up: [] as number[], down: [] as number[], calls: 0 };
    const fn = async () => {
      // The caller's side: which groups got feedback this time (a partial shuffle).
      for (let i = 0; i < k; i++) { const j = i + Math.floor(rng.next() * (G - i)); const t = order[i]; order[i] = order[j]; order[j] = t; }
      const updates: NodeUpdate[] = new Array(k);
      for (let i = 0; i < k; i++) {
        const g = order[i];
        updates[i] = { tree: targets.tree[g], node: targets.node[g], reward: rng.next(), visits: 1 + rng.int(0, 8) };
      }
      const up0 = gpu?.stats.uploadedBytes ?? 0, down0 = gpu?.stats.readBackBytes ?? 0;
      gcEach?.({ type: 'minor' });
      const a = performance.now();
      live.update(updates);
      const bT = performance.now();
      await live.rescore();
      const c = performance.now();
      const summary = await live.plan(planOptions);
      const d = performance.now();
      if (rec.calls++ < WARMUP) return;
      rec.change.push(bT - a); rec.rescore.push(c - bT); rec.plan.push(d - c); rec.total.push(d - a);
      rec.replanned.push(summary.replanned.length);
      if (gpu) { rec.up.push(gpu.stats.uploadedBytes - up0); rec.down.push(gpu.stats.readBackBytes - down0); }
    };
    return { rec, fn };
  });

  const maxTime = quick ? 2 : 12;
  const summary = await b.suite(
    `live W1, ${backend}`,
    b.configure({ cases: { minSamples: quick ? 5 : 20, maxTime } }),
    ...recorders.map(({ rec, fn }) => b.add(`${backend} ${label(rec)} dirty`, fn)),
    b.cycle((r: CaseResult) => {
      loads.push(os.loadavg()[0] ?? 0);
      return `  ${r.name}: ${formatNumber(r.details.mean * 1000)} ms ± ${r.margin} % (${r.samples} benny samples)`;
    }),
  );
  recorders.forEach(({ rec }, i) => {
    const r = summary.results[i];
    const mean = (xs: number[]) => xs.reduce((a, x) => a + x, 0) / Math.max(1, xs.length);
    const out: CaseOut = {
      backend, fraction: rec.fraction, mode: rec.mode, dirtyGroups: rec.k,
      total: stat(rec.total), parts: { change: stat(rec.change), rescore: stat(rec.rescore), plan: stat(rec.plan) },
      replannedTrees: mean(rec.replanned),
      benny: { meanMs: (r?.details.mean ?? NaN) * 1000, samples: r?.samples ?? 0, marginPct: r?.margin ?? NaN },
    };
    if (gpu) { out.uploadBytes = mean(rec.up); out.readBackBytes = mean(rec.down); }
    outs.push(out);
  });
  live.destroy();
  return outs;
}

async function main(): Promise<void> {
  const machine = machineInfo();
  const loads: number[] = [];
  let context: GpuContext | undefined;
  let adapter = 'none';
  try {
    if (!cpuOnly) {
      context = await GpuContext.create();
      adapter = context.adapterName;
    }
  } catch (err) {
    if (!(err instanceof GpuUnavailableError)) throw err;
    console.warn(`no WebGPU adapter: GPU cases skipped (${err.message})`);
  }
  const cases = [...(await runBackend('cpu', undefined, loads))];
  if (context) cases.push(...(await runBackend('gpu', context, loads)));
  context?.destroy();
  const finished = finishMachineInfo(machine, loads);

  const ratios = CASES.map((k) => {
    const cpu = cases.find((c) => c.backend === 'cpu' && c.fraction === k.fraction && c.mode === k.mode);
    const gpu = cases.find((c) => c.backend === 'gpu' && c.fraction === k.fraction && c.mode === k.mode);
    return cpu && gpu ? { case: label(k), p50: gpu.total.p50 / cpu.total.p50, p99: gpu.total.p99 / cpu.total.p99, rescoreP50: gpu.parts.rescore.p50 / cpu.parts.rescore.p50 } : undefined;
  }).filter((r) => r !== undefined);
  const onePct = cases.find((c) => c.backend === 'cpu' && c.fraction === 0.01 && c.mode === 'per-tree')!;
  const result: LiveResults = {
    benchmark: 'live',
    date: new Date().toISOString(),
    command: 'npm run bench:live',
    workload: { ...SHAPE, budget: BUDGET, update: 'per dirty group: one child gets a new reward and visit count; then rescore() and plan({ budget: 16 }) (global: plan({ totalBudget: 16 × trees, minPerTree: 1 }))' },
    machine: finished,
    adapter,
    gpuIsEmulated: /llvmpipe|lavapipe|swiftshader/i.test(adapter),
    sharedMachine: finished.shared === true,
    target: { fraction: 0.01, p99Ms: TARGET_MS, cpuP99Ms: onePct.total.p99, met: onePct.total.p99 <= TARGET_MS },
    cases,
    gpuOverCpu: ratios,
  };
  console.log(`\n${table(result)}`);
  if (!writeResults) { console.log(`${quick ? '--quick' : gcEach ? '--gc' : '--cpu'}: results not written`); return; }
  writeFileSync(new URL('live-latest.json', RESULTS), `${JSON.stringify(result, null, 2)}\n`);
  render(result);
}

interface LiveResults {
  benchmark: 'live';
  date: string;
  command: string;
  workload: typeof SHAPE & { budget: number; update: string };
  machine: ReturnType<typeof finishMachineInfo>;
  adapter: string;
  gpuIsEmulated: boolean;
  sharedMachine: boolean;
  target: { fraction: number; p99Ms: number; cpuP99Ms: number; met: boolean };
  cases: CaseOut[];
  gpuOverCpu: { case: string; p50: number; p99: number; rescoreP50: number }[];
}

const RESULTS = new URL('./results/', import.meta.url);

function table(r: LiveResults): string {
  const header = ['backend', 'dirty', 'groups', 'p50 ms', 'p99 ms', 'change p50', 'rescore p50', 'plan p50', 'trees re-planned', 'updates'];
  return markdownTable(header, r.cases.map((c) => [
    c.backend, label(c), c.dirtyGroups, c.total.p50, c.total.p99,
    c.parts.change.p50, c.parts.rescore.p50, c.parts.plan.p50, Math.round(c.replannedTrees), c.total.n,
  ]));
}

/** Results JSON → live-latest.md and live-latency.svg (also `--report`, without measuring). */
function render(r: LiveResults): void {
  mkdirSync(RESULTS, { recursive: true });
  const m = r.machine;
  const backends = [...new Set(r.cases.map((c) => c.backend))];
  const svg = barChart({
    title: `Live forest W1: ms per update (change + rescore + plan)`,
    yLabel: 'ms per update (log)',
    logY: true,
    categories: CASES.map((k) => `${label(k)} dirty`),
    groups: backends.flatMap((be) => (['p50', 'p99'] as const).map((q) => ({
      name: `${be === 'gpu' ? `gpu (${r.gpuIsEmulated ? 'lavapipe' : r.adapter})` : 'cpu'} ${q}`,
      values: CASES.map((k) => r.cases.find((c) => c.backend === be && c.fraction === k.fraction && c.mode === k.mode)?.total[q] ?? NaN),
    }))),
  });
  writeFileSync(new URL('live-latency.svg', RESULTS), svg);
  const md = [
    '# Live forest latency (`npm run bench:live`)',
    '',
    `${r.date}, ${m.cpuModel}, ${m.cores} cores, ${m.memoryGiB} GiB, Node ${m.node}; GPU adapter: ${r.adapter}` +
      `${r.gpuIsEmulated ? ' (lavapipe: Vulkan emulated on the same CPU cores, so GPU figures are only meaningful as ratios to the CPU path)' : ''}.`,
    `Load average ${m.loadStart} at start, ${m.loadEnd} at end${r.sharedMachine ? ': **the machine was shared with other jobs during the run**, so figures include their interference' : ''}.`,
    '',
    `Workload: W1 resident (${r.workload.trees} trees, branching ${r.workload.branching}, depth ${r.workload.depth}, dim ${r.workload.dim}); per update, the given share of sibling groups gets new feedback on one child, then \`rescore()\` and \`plan({ budget: ${r.workload.budget} })\` ("global": \`plan({ totalBudget: ${r.workload.budget} × trees })\`). Times are per update (after ${WARMUP} warm-up updates), in ms; "change" is \`update()\` of the dirty groups' nodes.`,
    '',
    table(r),
    `Target p99 ≤ ${r.target.p99Ms} ms at 1 % dirty (CPU): measured ${formatNumber(r.target.cpuP99Ms)} ms — ${r.target.met ? 'met' : 'not met'}.`,
    '',
    r.gpuOverCpu.length > 0 ? `GPU / CPU time ratio (p50, same run): ${r.gpuOverCpu.map((x) => `${x.case}: ${formatNumber(x.p50)}`).join(', ')}.` : 'No GPU adapter: GPU cases not run.',
    '',
    '![latency](live-latency.svg)',
    '',
  ].join('\n');
  writeFileSync(new URL('live-latest.md', RESULTS), md);
  console.log('wrote bench/results/live-latest.md, live-latency.svg');
}

if (process.argv.includes('--report')) {
  render(JSON.parse(readFileSync(new URL('live-latest.json', RESULTS), 'utf8')) as LiveResults);
} else {
  main().catch((err) => { console.error(err); process.exitCode = 1; });
}
