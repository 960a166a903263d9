/**
 * Measurements behind the kernel mapping and the demo ratio quoted in docs/GPU.md.
 *   XDG_RUNTIME_DIR=/tmp/xdg npx tsx bench/gpu-measure.ts mapping   # kernels × workgroup sizes × group sizes
 *   XDG_RUNTIME_DIR=/tmp/xdg npx tsx bench/gpu-measure.ts demo      # demo workload, gpu vs cpu in one run
 *   XDG_RUNTIME_DIR=/tmp/xdg npx tsx bench/gpu-measure.ts w1        # W1, the same (upload share of the GPU call)
 * On a CPU-emulated adapter (lavapipe) only ratios within one run mean anything.
 */
import type { PackedForest } from '../src/forest/packed.js';
import { scoreCpu } from '../src/score/cpu.js';
import { generateForest, generateRegularForest } from '../src/synth/generate.js';
import { GpuContext } from '../src/gpu/context.js';
import { GpuScorer } from '../src/gpu/scorer.js';

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const fmt = (x: number) => x.toFixed(1);

async function kernelMs(scorer: GpuScorer, forest: PackedForest, reps: number): Promise<number> {
  await scorer.score(forest);
  const ms: number[] = [];
  for (let r = 0; r < reps; r++) {
    await scorer.score(forest);
    ms.push(scorer.lastTimings!.kernels);
  }
  return median(ms);
}

async function mapping(): Promise<void> {
  const workloads: [string, PackedForest][] = [
    ['random k 2–8 (demo shape, 512 trees)', generateForest({ trees: 512, dim: 64, seed: 1 })],
    ['regular k 16 (depth 2, 150 trees)', generateRegularForest({ trees: 150, branching: 16, depth: 2, dim: 64, seed: 1 })],
    ['regular k 64 (depth 1, 150 trees)', generateRegularForest({ trees: 150, branching: 64, depth: 1, dim: 64, seed: 1 })],
    ['regular k 256 (depth 1, 10 trees)', generateRegularForest({ trees: 10, branching: 256, depth: 1, dim: 64, seed: 1 })],
    ['regular k 1024 (depth 1, 1 tree)', generateRegularForest({ trees: 1, branching: 1024, depth: 1, dim: 64, seed: 1 })],
  ];
  const sizes = [16, 64, 256];
  const cells = new Map<string, number>();
  let adapter = '';
  // One device at a time: one run with three devices alive at once aborted inside lavapipe
  // (std::system_error); small forests on three devices did not reproduce it.
  for (const wg of sizes) {
    const ctx = await GpuContext.create({ workgroupSizes: { score_thread: wg, score_workgroup: wg } });
    adapter = ctx.adapterName;
    for (const [name, forest] of workloads) {
      for (const route of ['thread', 'workgroup'] as const) {
        const scorer = await GpuScorer.create({ context: ctx, route });
        cells.set(`${name}|${route}|${wg}`, await kernelMs(scorer, forest, 3));
        scorer.destroy();
      }
    }
    ctx.destroy();
  }
  console.log(`adapter: ${adapter}; median kernel ms (timestamp queries when available) of 3 runs, dim 64`);
  console.log(['workload', ...sizes.map((wg) => `thread/WG${wg}`), ...sizes.map((wg) => `workgroup/WG${wg}`), 'cpu (float64)'].join(' | '));
  for (const [name, forest] of workloads) {
    const row: string[] = [name];
    for (const route of ['thread', 'workgroup']) for (const wg of sizes) row.push(fmt(cells.get(`${name}|${route}|${wg}`)!));
    const cpu: number[] = [];
    for (let r = 0; r < 3; r++) { const t = performance.now(); scoreCpu(forest); cpu.push(performance.now() - t); }
    row.push(fmt(median(cpu)));
    console.log(row.join(' | '));
  }
}

async function ratioToCpu(name: string, forest: PackedForest): Promise<void> {
  const scorer = await GpuScorer.create({});
  console.log(`adapter: ${scorer.context.adapterName}; ${name} workload: ${forest.treeCount} trees, ${forest.nodeCount} nodes, ${forest.groupCount} groups, dim ${forest.dim}`);
  await scorer.score(forest); // compile and warm the pool
  scoreCpu(forest);
  const gpu: number[] = [], cpu: number[] = [], kernels: number[] = [], upload: number[] = [], floor: number[] = [];
  for (let r = 0; r < 5; r++) {
    let t = performance.now();
    await scorer.score(forest);
    gpu.push(performance.now() - t);
    kernels.push(scorer.lastTimings!.kernels);
    upload.push(scorer.lastTimings!.upload);
    t = performance.now();
    scoreCpu(forest);
    cpu.push(performance.now() - t);
    floor.push((await scorer.measureTransferFloor(forest)).total);
  }
  const g = median(gpu), c = median(cpu);
  console.log(`gpu score() median ${fmt(g)} ms (kernels ${fmt(median(kernels))}, upload ${fmt(median(upload))} = ${((100 * median(upload)) / g).toFixed(0)} %, transfer floor ${fmt(median(floor))}); cpu scoreCpu median ${fmt(c)} ms; load average ${(await import('node:os')).loadavg()[0].toFixed(2)}`);
  console.log(`ratio gpu/cpu = ${(g / c).toFixed(2)} (runs gpu: ${gpu.map(fmt).join(', ')}; cpu: ${cpu.map(fmt).join(', ')})`);
  scorer.destroy();
}

const what = process.argv[2] ?? 'demo';
if (what === 'mapping') await mapping();
else if (what === 'demo') await ratioToCpu('demo', generateForest({ trees: 4096, dim: 64, seed: 1 }));
else if (what === 'w1') await ratioToCpu('W1', generateRegularForest({ trees: 4096, branching: 4, depth: 3, dim: 128, seed: 1 }));
else throw new Error(`unknown measurement ${what}: use mapping, demo or w1`);
