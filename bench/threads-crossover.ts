/**
 * Where worker threads start to pay for the CPU reference: the crossover behind
 * `PARALLEL_MIN_COST` (src/score/threads.ts), quoted in docs/BENCHMARKS.md.
 *   npx tsx bench/threads-crossover.ts [threads] [--trees 1,2,4,…]  # default: available parallelism
 * For forests of growing estimated cost (W1-shaped trees, dim 128), the median of
 * interleaved single-thread and threaded calls (the pool warm). Prints a table and the
 * machine's load; on a shared machine read it with that load in mind. `--trees 1024,4096`
 * gives the same interleaved comparison at W1 (4096 trees) and beyond: calls of the two
 * paths alternate, so drift in the machine (other jobs, clock, heap growth) hits both alike,
 * which the benny suites of `npm run bench` (one path's samples, then the next) cannot do.
 */
import os from 'node:os';
import { CpuScorer } from '../src/score/cpu.js';
import { scoringCost } from '../src/score/threads.js';
import { generateRegularForest } from '../src/synth/generate.js';

const args = process.argv.slice(2);
const treesAt = args.indexOf('--trees');
const treeCounts = treesAt >= 0 ? (args.splice(treesAt, 2)[1] ?? '').split(',').map(Number) : [1, 2, 4, 8, 16, 32, 64, 128, 256];
if (treeCounts.some((t) => !Number.isSafeInteger(t) || t < 1)) throw new Error('--trees takes a comma-separated list of tree counts >= 1');
const threads = Number(args[0] ?? os.availableParallelism());
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;

async function main(): Promise<void> {
  const one = new CpuScorer({ threads: 1 });
  const many = new CpuScorer({ threads, minParallelCost: 0 });
  const loadStart = os.loadavg()[0];
  const rows: string[] = [];
  try {
    for (const trees of treeCounts) {
      const forest = generateRegularForest({ trees, branching: 4, depth: 3, dim: 128, seed: 1 });
      await many.score(forest); // warm: workers started, code compiled
      one.scoreSync(forest);
      const reps = Math.max(15, Math.round(4000 / trees));
      const a: number[] = [], b: number[] = [];
      let cpuA = 0, cpuB = 0;
      for (let r = 0; r < reps; r++) {
        let c = process.cpuUsage();
        let t = performance.now();
        await one.score(forest);
        a.push(performance.now() - t);
        c = process.cpuUsage(c);
        cpuA += (c.user + c.system) / 1000;
        c = process.cpuUsage();
        t = performance.now();
        await many.score(forest);
        b.push(performance.now() - t);
        c = process.cpuUsage(c);
        cpuB += (c.user + c.system) / 1000;
      }
      const ma = median(a), mb = median(b);
      // CPU time of all threads per call: how much work the split adds, which load on the machine barely changes.
      rows.push(`| ${trees} | ${scoringCost(forest).toExponential(2)} | ${ma.toFixed(3)} | ${mb.toFixed(3)} | ${(ma / mb).toFixed(2)} | ${(cpuB / cpuA).toFixed(2)} |`);
      console.log(rows.at(-1));
    }
  } finally {
    many.destroy();
  }
  console.log(`\n${os.cpus()[0]?.model.trim()}, ${os.cpus().length} cores; ${threads} threads; load average ${loadStart.toFixed(2)} at start, ${os.loadavg()[0].toFixed(2)} at end`);
  console.log(`| trees | scoringCost | 1 thread ms | ${threads} threads ms | speed-up | CPU time ${threads} threads ÷ 1 |\n|---|---|---|---|---|---|\n${rows.join('\n')}`);
}

main().catch((err) => { console.error(err); process.exit(1); });
