/**
 * How much of a CPU score + allocate call on W1 `allocate` takes, next to scoring on one and on
 * all threads: whether running allocation on the worker threads too would pay.
 *   npx tsx bench/allocate-share.ts [--reps 20]
 * Medians of interleaved calls (warm), both rules; the plan is the same whatever the threads.
 */
import os from 'node:os';
import { allocate } from '../src/allocate/allocate.js';
import { CpuScorer } from '../src/score/cpu.js';
import { defaultThreads } from '../src/score/threads.js';
import { generateRegularForest } from '../src/synth/generate.js';
import { W1 } from './workloads.js';

const at = process.argv.indexOf('--reps');
const reps = at >= 0 ? Number(process.argv[at + 1]) : 20;
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;

const forest = generateRegularForest({ ...W1, seed: 1 });
const one = new CpuScorer({ threads: 1 });
const many = new CpuScorer({ threads: defaultThreads() });
const load = os.loadavg()[0];
try {
  for (const rule of ['v2', 'v1'] as const) {
    const params = { rule };
    const scores = one.scoreSync(forest, params);
    for (let i = 0; i < 3; i++) { allocate(forest, scores); await many.score(forest, params); }
    const a: number[] = [], s1: number[] = [], sN: number[] = [];
    for (let r = 0; r < reps; r++) {
      let t = performance.now();
      allocate(forest, scores);
      a.push(performance.now() - t);
      t = performance.now();
      one.scoreSync(forest, params);
      s1.push(performance.now() - t);
      t = performance.now();
      await many.score(forest, params);
      sN.push(performance.now() - t);
    }
    const [ma, m1, mN] = [median(a), median(s1), median(sN)];
    console.log(`${rule}: allocate ${ma.toFixed(1)} ms, score 1 thread ${m1.toFixed(1)} ms, score ${defaultThreads()} threads ${mN.toFixed(1)} ms; allocate is ${((100 * ma) / (ma + mN)).toFixed(0)} % of threaded score + allocate`);
  }
} finally {
  many.destroy();
}
console.log(`W1 (${forest.nodeCount} nodes), medians of ${reps}; ${os.cpus().length} cores, load average ${load.toFixed(2)} at start, ${os.loadavg()[0].toFixed(2)} at end`);
