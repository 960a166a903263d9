/**
 * How much of a CPU score + allocate call on W1 `allocate` takes, on one thread and on the
 * scorer's threads (`allocateOnThreads`), next to scoring on all threads.
 *   npx tsx bench/allocate-share.ts [--reps 20] [--threads N]
 * Medians of interleaved warm calls, every rule, a budget per tree and a global total; every
 * threaded plan is checked to be the one-thread plan bit for bit.
 */
import os from 'node:os';
import { allocate, type Allocation } from '../src/allocate/allocate.js';
import type { AllocateOptions } from '../src/allocate/options.js';
import { allocateOnThreads } from '../src/allocate/threaded.js';
import { CpuScorer } from '../src/score/cpu.js';
import { defaultThreads } from '../src/score/threads.js';
import { generateRegularForest } from '../src/synth/generate.js';
import { W1 } from './workloads.js';

const flag = (name: string, fallback: number) => {
  const at = process.argv.indexOf(name);
  return at >= 0 ? Number(process.argv[at + 1]) : fallback;
};
const reps = flag('--reps', 20);
const threads = flag('--threads', defaultThreads());
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;
const same = (a: Allocation, b: Allocation) => (['mass', 'branches', 'depth', 'treeBudget'] as const).every((k) => Buffer.from(a[k].buffer, a[k].byteOffset, a[k].byteLength).equals(Buffer.from(b[k].buffer, b[k].byteOffset, b[k].byteLength)));

const forest = generateRegularForest({ ...W1, seed: 1 });
const many = new CpuScorer({ threads });
const load = os.loadavg()[0];
try {
  for (const rule of ['v3', 'v2', 'v1'] as const) {
    for (const [mode, options] of [['budget 16', { budget: 16 }], ['total 16·T', { totalBudget: 16 * forest.treeCount }]] as [string, AllocateOptions][]) {
      const params = { rule };
      const scores = await many.score(forest, params);
      for (let i = 0; i < 3; i++) { allocate(forest, scores, options); await allocateOnThreads(forest, scores, options, many); await many.score(forest, params); }
      const a1: number[] = [], aN: number[] = [], sN: number[] = [];
      let identical = true;
      for (let r = 0; r < reps; r++) {
        let t = performance.now();
        const one = allocate(forest, scores, options);
        a1.push(performance.now() - t);
        t = performance.now();
        const split = await allocateOnThreads(forest, scores, options, many);
        aN.push(performance.now() - t);
        identical &&= same(one, split);
        t = performance.now();
        await many.score(forest, params);
        sN.push(performance.now() - t);
      }
      const [m1, mN, ms] = [median(a1), median(aN), median(sN)];
      console.log(`${rule}, ${mode}: allocate 1 thread ${m1.toFixed(1)} ms, ${threads} threads ${mN.toFixed(1)} ms (${(m1 / mN).toFixed(2)}×, plans ${identical ? 'identical' : 'DIFFERENT'}); score ${threads} threads ${ms.toFixed(1)} ms; allocate's share of threaded score + allocate: ${((100 * m1) / (m1 + ms)).toFixed(0)} % → ${((100 * mN) / (mN + ms)).toFixed(0)} %`);
      if (!identical) process.exitCode = 1;
    }
  }
} finally {
  many.destroy();
}
console.log(`W1 (${forest.nodeCount} nodes), medians of ${reps}; ${os.cpus().length} cores, load average ${load.toFixed(2)} at start, ${os.loadavg()[0].toFixed(2)} at end`);
