import { parentPort } from 'node:worker_threads';
import type { PackedForest } from '../forest/packed.js';
import { CpuScratch, scoreGroupsCpu } from './cpu.js';
import type { ScoreJob, WorkerReply } from './threads.js';
import type { Scores } from './types.js';

/**
 * A CPU scoring worker (see `CpuWorkerPool`): takes chunks of groups from the job's shared
 * queue and scores each with the float64 reference `scoreGroupsCpu` itself, writing into the
 * shared output arrays, until the queue is empty; then replies with how many chunks it did.
 */
const scratch = new CpuScratch();
const port = parentPort;
if (!port) throw new Error('cpu-worker.ts is a worker_threads entry point');

port.on('message', (job: ScoreJob) => {
  let reply: WorkerReply;
  try {
    const forest = job.forest as unknown as PackedForest;
    const out = { ...job.out, params: job.params, backend: 'cpu' } as unknown as Scores;
    const { bounds, next } = job;
    const chunks = bounds.length - 1;
    let done = 0;
    for (let c = Atomics.add(next, 0, 1); c < chunks; c = Atomics.add(next, 0, 1)) {
      scoreGroupsCpu(forest, job.params, out, bounds[c], bounds[c + 1], scratch, job.pairs);
      done++;
    }
    reply = { id: job.id, ok: true, chunks: done };
  } catch (err) {
    reply = { id: job.id, ok: false, message: err instanceof Error ? (err.stack ?? err.message) : String(err) };
  }
  port.postMessage(reply);
});
