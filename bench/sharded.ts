/**
 * A global budget over sharded live forests: W1 (4096 trees, branching 4, depth 3, dim 128)
 * split into 4 shards of 1024 trees, against one live forest holding all of W1, CPU backend.
 * Per step 1 % of the sibling groups get feedback (the same updates on both sides), then:
 *   one process: update + plan({ totalBudget: 16 × 4096 })
 *   sharded:     per shard update + globalShares (phase 1, re-scores), the gather (each
 *                shard's phase-1 JSON encoded and the list decoded, what crosses the wire),
 *                per shard planShard (phase 2).
 * The shards run one after another in this process; the "critical path" adds the slowest
 * shard of each phase and the gather, which is the step's latency when ranks run concurrently
 * on their own machines (network time of the collective not included). Every step checks that
 * the shards' plans equal the whole one.
 *
 *   npx tsx bench/sharded.ts [--steps N]   # prints a JSON summary; writes bench/results/sharded-latest.json
 */
import { writeFileSync } from 'node:fs';
import os from 'node:os';
import type { ShardShares } from '../src/allocate/shards.js';
import { packColumns, type PackedForest } from '../src/forest/packed.js';
import { createLiveForest } from '../src/live/create.js';
import type { LiveForest } from '../src/live/forest.js';
import type { NodeUpdate } from '../src/live/store.js';
import { generateRegularForest } from '../src/synth/generate.js';
import { Rng } from '../src/util/random.js';

const steps = Number(process.argv[process.argv.indexOf('--steps') + 1]) || 60;
const SHAPE = { trees: 4096, branching: 4, depth: 3, dim: 128, seed: 20261201 };
const SHARDS = 4, BUDGET = 16, WARMUP = 5, FRACTION = 0.01;

/** Trees [lo, hi) of a packed forest as a forest of their own. */
function slice(f: PackedForest, lo: number, hi: number): PackedForest {
  const a = f.treeOffset[lo], b = f.treeOffset[hi];
  const treeOffset = f.treeOffset.slice(lo, hi + 1).map((x) => x - a);
  const parent = new Int32Array(b - a);
  for (let i = a; i < b; i++) parent[i - a] = f.parentRow[i] < 0 ? -1 : f.parentRow[i] - f.treeOffset[f.nodeTree[i]];
  return packColumns({
    dim: f.dim, treeIds: f.treeIds.slice(lo, hi), treeOffset, parent, reward: f.reward.slice(a, b), visits: f.visits.slice(a, b),
    uncertainty: f.uncertainty.slice(a, b), terminal: f.terminal.slice(a, b), embedding: f.embedding.slice(a * f.dim, b * f.dim),
  });
}

const stat = (xs: number[]) => {
  const s = [...xs].sort((x, y) => x - y);
  const q = (p: number) => s[Math.min(s.length - 1, Math.max(0, Math.ceil(p * s.length) - 1))];
  return { p50: q(0.5), p99: q(0.99), n: s.length };
};

const forest = generateRegularForest(SHAPE);
const whole = await createLiveForest({ dim: SHAPE.dim, backend: 'cpu' });
whole.addForest(forest);
const per = SHAPE.trees / SHARDS;
const shards: LiveForest[] = [];
for (let k = 0; k < SHARDS; k++) {
  const live = await createLiveForest({ dim: SHAPE.dim, backend: 'cpu' });
  live.addForest(slice(forest, k * per, (k + 1) * per));
  shards.push(live);
}
const settings = { totalBudget: BUDGET * SHAPE.trees, minPerTree: 1 };

// Feedback targets: one child per group, by (shard, tree id, node).
const targets: { shard: number; update: (r: Rng) => NodeUpdate }[] = [];
for (let t = 0; t < forest.treeCount; t++) {
  for (let g = forest.treeGroupOffset[t]; g < forest.treeGroupOffset[t + 1]; g++) {
    const node = forest.groupChild[forest.groupOffset[g]] - forest.treeOffset[t], tree = forest.treeIds[t];
    targets.push({ shard: Math.floor(t / per), update: (r) => ({ tree, node, reward: r.next(), visits: 1 + r.int(0, 8) }) });
  }
}
const rng = new Rng(SHAPE.seed);
const slowest1: number[] = [], slowest2: number[] = [];
const oneProcess: number[] = [], critical: number[] = [], sequential: number[] = [], gatherMs: number[] = [];
let bytesPerRank = 0;
for (let step = 0; step < steps + WARMUP; step++) {
  const perShard: NodeUpdate[][] = shards.map(() => []);
  const all: NodeUpdate[] = [];
  for (let i = 0; i < Math.round(FRACTION * targets.length); i++) {
    const t = targets[Math.floor(rng.next() * targets.length)];
    const u = t.update(rng);
    all.push(u); perShard[t.shard].push(u);
  }
  let a = performance.now();
  whole.update(all);
  await whole.plan(settings);
  const single = performance.now() - a;

  const phase1: number[] = [], phase2: number[] = [];
  const wire: string[] = [];
  for (let k = 0; k < SHARDS; k++) {
    a = performance.now();
    shards[k].update(perShard[k]);
    wire.push(JSON.stringify(await shards[k].globalShares()));
    phase1.push(performance.now() - a);
  }
  a = performance.now();
  const gathered = JSON.parse(`[${wire.join(',')}]`) as ShardShares[];
  const gather = performance.now() - a;
  for (let k = 0; k < SHARDS; k++) {
    a = performance.now();
    await shards[k].planShard(gathered, k, settings);
    phase2.push(performance.now() - a);
  }
  const plans = shards.flatMap((s) => s.planJson().trees);
  if (JSON.stringify(plans) !== JSON.stringify(whole.planJson().trees)) throw new Error(`step ${step}: the shards' plans differ from the whole forest's`);
  if (step < WARMUP) continue;
  bytesPerRank = Math.max(...wire.map((w) => Buffer.byteLength(w)));
  oneProcess.push(single);
  gatherMs.push(gather);
  slowest1.push(Math.max(...phase1)); slowest2.push(Math.max(...phase2));
  critical.push(Math.max(...phase1) + gather + Math.max(...phase2));
  sequential.push(phase1.reduce((x, y) => x + y) + gather + phase2.reduce((x, y) => x + y));
}
const nodesPerShard = forest.nodeCount / SHARDS;
const out = {
  workload: { ...SHAPE, shards: SHARDS, treesPerShard: per, feedbackFraction: FRACTION, totalBudget: settings.totalBudget },
  ms: { oneProcess: stat(oneProcess), shardedCriticalPath: stat(critical), shardedSequential: stat(sequential), gather: stat(gatherMs), slowestPhase1: stat(slowest1), slowestPhase2: stat(slowest2) },
  bytesPerRankPerStep: { shares: bytesPerRank, embeddingsFloat32: nodesPerShard * SHAPE.dim * 4 },
  machine: { cpus: os.cpus().length, model: os.cpus()[0]?.model, loadavg1: os.loadavg()[0], node: process.version },
  command: 'npx tsx bench/sharded.ts --steps ' + steps,
};
writeFileSync(new URL('results/sharded-latest.json', import.meta.url), `${JSON.stringify(out, null, 2)}\n`);
console.log(JSON.stringify(out));
for (const s of [whole, ...shards]) s.destroy();
