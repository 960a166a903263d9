/**
 * GPU kernels, old mapping ('classic': one lane per small group, a workgroup or pair tiles for
 * large ones) against the new one ('staged': small groups several per workgroup with
 * coalesced reads), kernel time from timestamp queries, alternating, in one run; plus the
 * memory traffic each workload needs, and the kernel time that traffic takes at a given HBM
 * bandwidth (default an H200's 4.8 TB/s).
 *   XDG_RUNTIME_DIR=/tmp/xdg npx tsx bench/gpu-mapping.ts [--reps 5] [--bandwidth 4.8e12]
 * On a CPU-emulated adapter (lavapipe) only the old/new ratio within one run means anything.
 */
import type { PackedForest } from '../src/forest/packed.js';
import { GpuContext } from '../src/gpu/context.js';
import { FEAT_BYTES, OUT_BYTES, WORK_BYTES } from '../src/gpu/layout.js';
import { GpuScorer } from '../src/gpu/scorer.js';
import { generateForest, generateRegularForest } from '../src/synth/generate.js';

const arg = (name: string, fallback: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? Number(process.argv[i + 1]) : fallback;
};
const reps = arg('reps', 5);
const bandwidth = arg('bandwidth', 4.8e12);
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

/** Bytes the kernels must move at least: each child's embedding row, feature record and output once, each group's work entry and intensity. */
export function kernelTraffic(f: PackedForest): number {
  const children = f.groupChild.length;
  return children * (f.dim * 4 + FEAT_BYTES + OUT_BYTES) + f.groupCount * (WORK_BYTES + 4);
}

const workloads: [string, PackedForest][] = [
  ['W1 shape (branching 4, depth 3, dim 128), 1024 trees', generateRegularForest({ trees: 1024, branching: 4, depth: 3, dim: 128, seed: 1 })],
  ['demo shape (forks of 2–8, dim 64), 1024 trees', generateForest({ trees: 1024, dim: 64, seed: 1 })],
  ['regular k 16, depth 2, dim 64, 150 trees', generateRegularForest({ trees: 150, branching: 16, depth: 2, dim: 64, seed: 1 })],
  ['regular k 32, depth 1, dim 32, 2000 trees', generateRegularForest({ trees: 2000, branching: 32, depth: 1, dim: 32, seed: 1 })],
];

const ctx = await GpuContext.create();
const scorers = { classic: await GpuScorer.create({ context: ctx, route: 'classic' }), staged: await GpuScorer.create({ context: ctx, route: 'staged' }) };
console.log(`adapter: ${ctx.adapterName}; kernel ms = median of ${reps} (${ctx.hasTimestamps ? 'timestamp queries' : 'wait for results'}), old and new alternating`);
console.log('workload | groups | kernel traffic MB | at ' + (bandwidth / 1e12).toFixed(1) + ' TB/s ms | old (classic) ms | new (staged) ms | new / old');
for (const [name, forest] of workloads) {
  const ms = { classic: [] as number[], staged: [] as number[] };
  for (const s of Object.values(scorers)) await s.score(forest); // warm-up: pipelines, pool
  for (let r = 0; r < reps; r++) {
    for (const route of ['classic', 'staged'] as const) {
      await scorers[route].score(forest);
      ms[route].push(scorers[route].lastTimings!.kernels);
    }
  }
  const bytes = kernelTraffic(forest);
  const old = median(ms.classic), now = median(ms.staged);
  console.log([name, forest.groupCount, (bytes / 1e6).toFixed(1), ((bytes / bandwidth) * 1e3).toFixed(3), old.toFixed(1), now.toFixed(1), (now / old).toFixed(2)].join(' | '));
}
for (const s of Object.values(scorers)) s.destroy();
ctx.destroy();
