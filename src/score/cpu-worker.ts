import { parentPort } from 'node:worker_threads';
import type { PackedForest } from '../forest/packed.js';
import { CpuScratch, scoreGroupsCpu } from './cpu.js';
import type { RangeTask } from './task.js';
import type { ScoreJob, TaskJob, WorkerReply } from './threads.js';
import type { Scores } from './types.js';

/**
 * A CPU scoring worker (see `CpuWorkerPool`): takes chunks of groups from the job's shared
 * queue and scores each with the float64 reference `scoreGroupsCpu` itself, writing into the
 * shared output arrays, until the queue is empty; then replies with how many chunks it did.
 * A `TaskJob` runs another layer's range function (`RangeTask`) the same way.
 */
const scratch = new CpuScratch();
const port = parentPort;
if (!port) throw new Error('cpu-worker.ts is a worker_threads entry point');

type RangeFn = (data: Record<string, unknown>, start: number, end: number) => void;
const tasks = new Map<string, RangeFn>();

/** A `RangeTask`'s function: compiled modules by `import()`, TypeScript sources (the worker runs under tsx's CommonJS hook) by `require`. */
async function taskFunction(task: RangeTask): Promise<RangeFn> {
  const key = `${task.module}#${task.name}`;
  let fn = tasks.get(key);
  if (!fn) {
    const mod = (task.module.endsWith('.ts') ? require(task.module) : await import(task.module)) as Record<string, unknown>;
    if (typeof mod[task.name] !== 'function') throw new Error(`${task.module} exports no function ${task.name}`);
    fn = mod[task.name] as RangeFn;
    tasks.set(key, fn);
  }
  return fn;
}

port.on('message', async (job: ScoreJob | TaskJob) => {
  let reply: WorkerReply;
  try {
    const { bounds, next } = job;
    const chunks = bounds.length - 1;
    let done = 0;
    if ('task' in job) {
      const fn = await taskFunction(job.task);
      for (let c = Atomics.add(next, 0, 1); c < chunks; c = Atomics.add(next, 0, 1)) {
        fn(job.data, bounds[c], bounds[c + 1]);
        done++;
      }
    } else {
      const forest = job.forest as unknown as PackedForest;
      const out = { ...job.out, params: job.params, backend: 'cpu' } as unknown as Scores;
      for (let c = Atomics.add(next, 0, 1); c < chunks; c = Atomics.add(next, 0, 1)) {
        scoreGroupsCpu(forest, job.params, out, bounds[c], bounds[c + 1], scratch, job.pairs);
        done++;
      }
    }
    reply = { id: job.id, ok: true, chunks: done };
  } catch (err) {
    reply = { id: job.id, ok: false, message: err instanceof Error ? (err.stack ?? err.message) : String(err) };
  }
  port.postMessage(reply);
});
