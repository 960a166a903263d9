import type { Worker } from 'node:worker_threads';

/**
 * The memory-pass floor of CPU scoring: one read of every embedding value, split across
 * `threads` threads (the calling one included) as the threaded scorer splits groups. Scoring
 * must read each embedding at least once, so no CPU path on that many cores beats it by much.
 * The workers are plain-JS `eval` workers: they need nothing from the project.
 */
const WORKER = `
const { parentPort } = require('node:worker_threads');
parentPort.on('message', ({ id, data, start, end }) => {
  let a = 0, b = 0, c = 0, d = 0, i = start;
  for (; i + 3 < end; i += 4) { a += data[i]; b += data[i + 1]; c += data[i + 2]; d += data[i + 3]; }
  for (; i < end; i++) a += data[i];
  parentPort.postMessage({ id, sum: a + b + c + d });
});`;

function sumRange(data: ArrayLike<number>, start: number, end: number): number {
  let a = 0, b = 0, c = 0, d = 0, i = start;
  for (; i + 3 < end; i += 4) { a += data[i]; b += data[i + 1]; c += data[i + 2]; d += data[i + 3]; }
  for (; i < end; i++) a += data[i];
  return a + b + c + d;
}

export class MemoryPass {
  private workers: Worker[] = [];
  private nextId = 1;

  private constructor(readonly threads: number) {}

  static async create(threads: number): Promise<MemoryPass> {
    const { Worker } = await import('node:worker_threads');
    const m = new MemoryPass(threads);
    for (let i = 1; i < threads; i++) m.workers.push(new Worker(WORKER, { eval: true }));
    return m;
  }

  /** One pass over `data` (which must be over SharedArrayBuffer when threads > 1); returns the sum, so nothing is optimised away. */
  async pass(data: Float32Array | Float64Array): Promise<number> {
    const n = data.length, parts = this.threads;
    const cut = (p: number) => Math.floor((n * p) / parts);
    const id = this.nextId++;
    const replies = this.workers.map((w, i) => new Promise<number>((resolve) => {
      const on = (m: { id: number; sum: number }) => { if (m.id === id) { w.off('message', on); resolve(m.sum); } };
      w.on('message', on);
      w.postMessage({ id, data, start: cut(i + 1), end: cut(i + 2) });
    }));
    const mine = sumRange(data, 0, cut(1));
    return mine + (await Promise.all(replies)).reduce((s, x) => s + x, 0);
  }

  destroy(): void {
    for (const w of this.workers) void w.terminate();
    this.workers = [];
  }
}
