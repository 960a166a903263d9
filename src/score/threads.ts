import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { availableParallelism } from 'node:os';
import { fileURLToPath } from 'node:url';
import type { Worker } from 'node:worker_threads';
import type { PackedForest } from '../forest/packed.js';
import { OptionError } from '../util/errors.js';
import { toShared } from '../util/shared.js';
import type { RangeTask } from './task.js';
import type { ScoreParams, Scores } from './types.js';

/** `threads` itself when it is an integer >= 1 (a thread count option), else an `OptionError`. */
export function checkThreads(threads: number): number {
  if (!Number.isInteger(threads) || threads < 1) throw new OptionError(`threads must be an integer >= 1, got ${threads}`);
  return threads;
}

/** Threads the CPU scorer uses by default: every core the process may run on. */
export function defaultThreads(): number {
  return Math.max(1, availableParallelism());
}

/**
 * Below this much estimated work (`scoringCost`) a forest is scored on the calling thread
 * alone: handing groups to the workers and waiting for their replies costs more than it saves.
 * Measured with `npx tsx bench/threads-crossover.ts` on the project's 2-core machine (table in
 * docs/BENCHMARKS.md): the CPU time two threads spend per call, over one thread's, falls from
 * 1.7–2.7× below 1.2e5 units to 1.06× at 9.5e5 and 1.03–1.08× above; from about 1e6 units
 * (≈ 3 ms of single-thread scoring) the split adds only a few percent of work, so it pays
 * wherever a second core is free.
 */
export const PARALLEL_MIN_COST = 1_000_000;

/** Chunks per thread: enough for threads that start late or get fewer cycles to even out. */
export const CHUNKS_PER_THREAD = 8;

/** Work of scoring groups [g0, g1) in units of about one multiply-add over an embedding value. */
function groupCost(forest: PackedForest, g: number): number {
  const k = forest.groupOffset[g + 1] - forest.groupOffset[g];
  const pairs = (k * (k - 1)) / 2;
  return k * (forest.dim + 8) + pairs * (forest.dim + 16);
}

/** Estimated work of scoring the whole forest (see `PARALLEL_MIN_COST`). */
export function scoringCost(forest: PackedForest): number {
  let total = 0;
  for (let g = 0; g < forest.groupCount; g++) total += groupCost(forest, g);
  return total;
}

/** Chunk boundaries over the groups, `chunks + 1` of them, cut at equal estimated work. */
export function splitGroups(forest: PackedForest, chunks: number, total = scoringCost(forest)): Int32Array {
  const n = Math.max(1, Math.min(chunks, forest.groupCount));
  const bounds = new Int32Array(n + 1);
  let c = 1, acc = 0;
  for (let g = 0; g < forest.groupCount && c < n; g++) {
    acc += groupCost(forest, g);
    while (c < n && acc >= (total * c) / n) bounds[c++] = g + 1;
  }
  for (; c <= n; c++) bounds[c] = forest.groupCount;
  return bounds;
}

/** What a worker receives per call: the forest's and the outputs' arrays (all shared memory) and the chunk queue. */
export interface ScoreJob {
  id: number;
  /** Every number and typed-array field of the forest (typed arrays over SharedArrayBuffer). */
  forest: Record<string, unknown>;
  params: ScoreParams;
  /** Every typed-array field of the output `Scores` (over SharedArrayBuffer). */
  out: Record<string, unknown>;
  /** Chunk c is groups [bounds[c], bounds[c+1]). */
  bounds: Int32Array;
  /** Shared counter: the next chunk to take (`Atomics.add`). */
  next: Int32Array;
  /** A pair-distance cache to read and fill (`PairDistances`, arrays in shared memory): live forests. */
  pairs?: { values: Float64Array; offset: Int32Array; known: Uint8Array };
}

/** What a worker receives for a `RangeTask`: its data (typed arrays over SharedArrayBuffer, numbers, plain objects) and the chunk queue. */
export interface TaskJob {
  id: number;
  task: RangeTask;
  data: Record<string, unknown>;
  bounds: Int32Array;
  next: Int32Array;
}

export type WorkerReply = { id: number; ok: true; chunks: number } | { id: number; ok: false; message: string };

/** The forest's fields a worker needs, arrays in shared memory (copied once per forest when they are not). */
const sharedFields = new WeakMap<PackedForest, Record<string, unknown>>();

export function shareForest(forest: PackedForest): Record<string, unknown> {
  let fields = sharedFields.get(forest);
  if (!fields) {
    fields = {};
    for (const [key, value] of Object.entries(forest)) {
      if (typeof value === 'number') fields[key] = value;
      else if (ArrayBuffer.isView(value) && !(value instanceof DataView)) fields[key] = toShared(value as Float64Array);
    }
    sharedFields.set(forest, fields);
  }
  return fields;
}

function outputFields(out: Scores): Record<string, unknown> {
  const fields: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(out)) if (ArrayBuffer.isView(value)) fields[key] = value;
  return fields;
}

/**
 * The worker: the compiled `cpu-worker.js` next to this file (dist/), or, when this module runs
 * from TypeScript sources (tsx, vitest), `cpu-worker.ts` required through tsx's CommonJS hook
 * inside the worker: Node 20 does not apply the parent's ESM loader hooks to a worker's entry.
 */
function workerScript(): { script: URL | string; eval: boolean } {
  const js = new URL('./cpu-worker.js', import.meta.url);
  if (existsSync(fileURLToPath(js))) return { script: js, eval: false };
  const ts = fileURLToPath(new URL('./cpu-worker.ts', import.meta.url));
  let tsx: string;
  try {
    tsx = createRequire(import.meta.url).resolve('tsx/cjs/api');
  } catch {
    throw new Error(`CPU worker threads need ${fileURLToPath(js)} (npm run build) or the tsx package to load ${ts}; or score with threads: 1`);
  }
  return { script: `require(${JSON.stringify(tsx)}).register();\nrequire(${JSON.stringify(ts)});`, eval: true };
}

interface Pending {
  remaining: number;
  resolve: () => void;
  reject: (err: Error) => void;
}

/**
 * Worker threads that score chunks of a forest's groups with the float64 reference
 * (`scoreGroupsCpu`, in `cpu-worker.ts`), reading the forest and writing the outputs in shared
 * memory. Created on first use, reused across calls, `unref`ed between calls so an idle pool
 * never keeps the process alive; `destroy()` terminates the workers.
 */
export class CpuWorkerPool {
  private workers: Worker[] = [];
  private starting: Promise<Worker[]> | undefined;
  private readonly pending = new Map<number, Pending>();
  private nextId = 1;
  private destroyed = false;

  /** `size`: worker threads (the calling thread scores too, so a pool of N−1 serves N threads). */
  constructor(readonly size: number) {}

  get running(): number {
    return this.workers.length;
  }

  /** Chunks the workers (not the calling thread) have scored since the pool started. */
  chunksOnWorkers = 0;

  /**
   * Scores `forest` into `out` (whose arrays must be over SharedArrayBuffer) on the workers and
   * on the calling thread (`scoreHere(g0, g1)`), chunk by chunk from one shared queue; resolves
   * when every chunk is done. A worker still starting up when the queue runs dry is not waited
   * for (it finds the queue empty), so the first call never pays the workers' start-up alone.
   */
  async score(
    forest: PackedForest, params: ScoreParams, out: Scores, scoreHere: (groupStart: number, groupEnd: number) => void, total?: number,
    pairs?: ScoreJob['pairs'],
  ): Promise<void> {
    const bounds = splitGroups(forest, (this.size + 1) * CHUNKS_PER_THREAD, total);
    await this.dispatch((id, next) => ({ id, forest: shareForest(forest), params, out: outputFields(out), bounds, next, ...(pairs ? { pairs } : {}) }), bounds, scoreHere);
  }

  /**
   * Runs `task` over chunks [bounds[c], bounds[c + 1]) of `data` on the workers and on the
   * calling thread (`runHere`), from one shared queue like `score`; resolves when every chunk is done.
   */
  async run(task: RangeTask, data: Record<string, unknown>, bounds: Int32Array, runHere: (start: number, end: number) => void): Promise<void> {
    await this.dispatch((id, next) => ({ id, task, data, bounds, next }), bounds, runHere);
  }

  private async dispatch(makeJob: (id: number, next: Int32Array) => ScoreJob | TaskJob, bounds: Int32Array, runHere: (start: number, end: number) => void): Promise<void> {
    if (this.destroyed) throw new Error('this CpuScorer was destroyed');
    const workers = this.workers.length === this.size ? this.workers : await this.startWorkers();
    const next = new Int32Array(new SharedArrayBuffer(4));
    const id = this.nextId++;
    const job = makeJob(id, next);
    const chunks = bounds.length - 1;
    const done = new Promise<void>((resolve, reject) => this.pending.set(id, { remaining: chunks, resolve, reject }));
    for (const w of workers) { w.ref(); w.postMessage(job); }
    let here = 0;
    try {
      for (let c = Atomics.add(next, 0, 1); c < chunks; c = Atomics.add(next, 0, 1), here++) runHere(bounds[c], bounds[c + 1]);
    } catch (err) {
      Atomics.store(next, 0, chunks); // let the workers stop early; their late replies are ignored
      this.pending.delete(id);
      if (this.pending.size === 0) for (const w of workers) w.unref();
      throw err;
    }
    this.complete(id, here);
    try {
      await done;
    } finally {
      if (this.pending.size === 0) for (const w of workers) w.unref();
    }
  }

  /** Creates the worker threads (once); resolves when they exist, which is before they finish booting. */
  async start(): Promise<void> {
    await this.startWorkers();
  }

  // Private, so that the published declarations name no node:worker_threads type.
  private startWorkers(): Promise<Worker[]> {
    this.starting ??= (async () => {
      const { Worker } = await import('node:worker_threads');
      const entry = workerScript();
      const workers: Worker[] = [];
      for (let i = 0; i < this.size; i++) {
        const w = new Worker(entry.script, { eval: entry.eval, name: `trace-alloc cpu ${i + 1}` });
        w.unref();
        w.on('message', (reply: WorkerReply) => this.settle(reply));
        w.on('error', (err) => { if (this.workers.includes(w)) this.fail(err); });
        w.on('exit', (code) => { if (this.workers.includes(w)) this.fail(new Error(`a CPU scoring worker exited (code ${code})`)); });
        workers.push(w);
      }
      if (this.destroyed) for (const w of workers) void w.terminate();
      else this.workers = workers;
      return workers;
    })();
    return this.starting;
  }

  private settle(reply: WorkerReply): void {
    const p = this.pending.get(reply.id);
    if (!p) return;
    if (!reply.ok) {
      this.pending.delete(reply.id);
      p.reject(new Error(`CPU scoring worker failed: ${reply.message}`));
      return;
    }
    this.chunksOnWorkers += reply.chunks;
    this.complete(reply.id, reply.chunks);
  }

  /** `n` more chunks of call `id` are scored; the call is done when all of them are. */
  private complete(id: number, n: number): void {
    const p = this.pending.get(id);
    if (!p) return;
    p.remaining -= n;
    if (p.remaining === 0) {
      this.pending.delete(id);
      p.resolve();
    }
  }

  /** A worker died: fail every call in flight and start afresh on the next one. */
  private fail(err: Error): void {
    for (const p of this.pending.values()) p.reject(err);
    this.pending.clear();
    const old = this.workers;
    this.workers = [];
    this.starting = undefined;
    for (const w of old) void w.terminate();
  }

  destroy(): void {
    if (this.destroyed) return;
    this.destroyed = true;
    for (const w of this.workers) void w.terminate();
    this.workers = [];
    for (const p of this.pending.values()) p.reject(new Error('this CpuScorer was destroyed'));
    this.pending.clear();
  }
}
