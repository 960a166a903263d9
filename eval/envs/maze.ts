import { Rng } from '../../src/util/random.js';
import { MOVES, addNoise, rbf2, type Env, type Transition } from './types.js';

export interface MazeOptions {
  seed: number;
  width?: number;
  height?: number;
  /** Fraction of the remaining interior walls knocked out after carving, so there are a few loops. */
  loops?: number;
  /** The exit is the cell farthest from the start whose path distance is at most this. */
  exitDistance?: number;
  /** Horizon as a multiple of the shortest path length. */
  slack?: number;
  noise?: number;
}

/**
 * Sparse-reward maze: a seeded perfect maze (randomised depth-first carving) with a few loops;
 * the agent starts in a corner and is rewarded only on reaching the exit, the cell farthest
 * from it by path length up to `exitDistance` (so every seed is about equally hard), within
 * the horizon. Bumping into a wall wastes the step.
 */
export class MazeEnv implements Env {
  readonly name = 'maze';
  readonly actions = 4;
  readonly stateCount: number;
  readonly horizon: number;
  readonly dim = 16;
  readonly promptCount = 1;
  readonly width: number;
  readonly height: number;
  readonly exit: number;
  readonly shortest: number;
  /** open[cell*4 + move] = 1 when the move from cell is not blocked by a wall. */
  private readonly open: Uint8Array;
  private readonly noise: number;

  constructor(options: MazeOptions) {
    const rng = new Rng(options.seed);
    this.width = options.width ?? 5;
    this.height = options.height ?? 5;
    this.noise = options.noise ?? 0.05;
    const n = this.width * this.height;
    this.stateCount = n;
    this.open = new Uint8Array(n * 4);
    const seen = new Uint8Array(n);
    const stack = [0];
    seen[0] = 1;
    while (stack.length > 0) {
      const c = stack[stack.length - 1];
      const options4: number[] = [];
      for (let m = 0; m < 4; m++) { const d = this.neighbour(c, m); if (d >= 0 && !seen[d]) options4.push(m); }
      if (options4.length === 0) { stack.pop(); continue; }
      const m = options4[rng.int(0, options4.length - 1)];
      const d = this.neighbour(c, m);
      this.link(c, m);
      seen[d] = 1;
      stack.push(d);
    }
    const loops = options.loops ?? 0.2;
    for (let c = 0; c < n; c++) for (const m of [1, 2]) if (this.neighbour(c, m) >= 0 && !this.open[c * 4 + m] && rng.bernoulli(loops)) this.link(c, m);
    const dist = this.distances(0);
    const cap = options.exitDistance ?? 10;
    const manhattan = (c: number) => (c % this.width) + Math.floor(c / this.width);
    let far = 0;
    for (let c = 1; c < n; c++) {
      if (dist[c] > cap) continue;
      if (dist[c] > dist[far] || (dist[c] === dist[far] && manhattan(c) > manhattan(far))) far = c;
    }
    this.exit = far;
    this.shortest = dist[far];
    this.horizon = Math.ceil((options.slack ?? 3) * this.shortest);
  }

  setTrainingStep(): void {}

  start(): number { return 0; }

  step(state: number, action: number): Transition {
    const next = this.open[state * 4 + action] ? this.neighbour(state, action) : state;
    const done = next === this.exit;
    return { next, done, reward: done ? 1 : 0 };
  }

  embed(state: number, out: Float32Array, offset: number, rng: Rng): void {
    const x = (state % this.width) / (this.width - 1), y = Math.floor(state / this.width) / (this.height - 1);
    rbf2(x, y, 4, 0.25, out, offset);
    addNoise(out, offset, this.dim, this.noise, rng);
  }

  private neighbour(c: number, m: number): number {
    const x = (c % this.width) + MOVES[m][0], y = Math.floor(c / this.width) + MOVES[m][1];
    return x < 0 || y < 0 || x >= this.width || y >= this.height ? -1 : y * this.width + x;
  }

  private link(c: number, m: number): void {
    this.open[c * 4 + m] = 1;
    this.open[this.neighbour(c, m) * 4 + ((m + 2) % 4)] = 1;
  }

  private distances(from: number): Int32Array {
    const dist = new Int32Array(this.stateCount).fill(-1);
    dist[from] = 0;
    const queue = [from];
    for (let q = 0; q < queue.length; q++) {
      const c = queue[q];
      for (let m = 0; m < 4; m++) {
        if (!this.open[c * 4 + m]) continue;
        const d = this.neighbour(c, m);
        if (dist[d] < 0) { dist[d] = dist[c] + 1; queue.push(d); }
      }
    }
    return dist;
  }
}
