/**
 * Where worker threads start to pay for the CPU reference: the crossover behind
 * `PARALLEL_MIN_COST` (src/score/threads.ts), quoted in docs/BENCHMARKS.md.
 *   npx tsx bench/threads-crossover.ts [threads]       # default: available parallelism
 * For forests of growing estimated cost (W1-shaped trees, dim 128), the median of
 * interleaved single-thread and threaded calls (the pool warm). Prints a table and the
 * machine's load; on a shared machine read it with that load in mind.
 */
import os from 'node:os';
import { CpuScorer } from '../src/score/cpu.js';
import { scoringCost } from '../src/score/threads.js';
import { generateRegularForest } from '../src/synth/generate.js';

const threads = Number(process.argv[2] ?? os.availableParallelism());
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;

async function main(): Promise<void> {
  const one = new CpuScorer({ threads: 1 });
  const many = new CpuScorer({ threads, minParallelCost: 0 });
  const loadStart = os.loadavg()[0];
  const rows: string[] = [];
  try {
    for (const trees of [1, 2, 4, 8, 16, 32, 64, 128, 256]) {
      const forest = generateRegularForest({ trees, branching: 4, depth: 3, dim: 128, seed: 1 });
      await many.score(forest); // warm: workers started, code compiled
      one.scoreSync(forest);
      const reps = Math.max(15, Math.round(4000 / trees));
      const a: number[] = [], b: number[] = [];
      for (let r = 0; r < reps; r++) {
        let t = performance.now();
        await one.score(forest);
        a.push(performance.now() - t);
        t = performance.now();
        await many.score(forest);
        b.push(performance.now() - t);
      }
      const ma = median(a), mb = median(b);
      rows.push(`| ${trees} | ${scoringCost(forest).toExponential(2)} | ${ma.toFixed(3)} | ${mb.toFixed(3)} | ${(ma / mb).toFixed(2)} |`);
      console.log(rows.at(-1));
    }
  } finally {
    many.destroy();
  }
  console.log(`\n${os.cpus()[0]?.model.trim()}, ${os.cpus().length} cores; ${threads} threads; load average ${loadStart.toFixed(2)} at start, ${os.loadavg()[0].toFixed(2)} at end`);
  console.log(`| trees | scoringCost | 1 thread ms | ${threads} threads ms | speed-up |\n|---|---|---|---|---|\n${rows.join('\n')}`);
}

main().catch((err) => { console.error(err); process.exit(1); });
