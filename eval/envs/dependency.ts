import { Rng } from '../../src/util/random.js';
import { addNoise, type Env, type Transition } from './types.js';

export interface DependencyOptions {
  seed: number;
  /** Near-identical options offered at the first step; exactly one leads to success. */
  keys?: number;
  /** Corridor steps after the choice before the outcome is revealed. */
  length?: number;
  /** Extra steps the horizon allows beyond 1 + length. */
  slack?: number;
  /** How far apart (in embedding units) the keys' states are; small = near-identical. */
  keySeparation?: number;
  noise?: number;
}

/**
 * Long-horizon dependency: the first action picks one of `keys` options whose states look
 * almost the same (embeddings differ by `keySeparation`); then a corridor of `length` steps,
 * where at each position two of the four actions advance and two stall. Reaching the end of
 * the corridor within the horizon gives reward 1 only if the first choice was the seeded
 * correct key — the outcome of the first step is revealed 20+ steps later.
 */
export class DependencyEnv implements Env {
  readonly name = 'dependency';
  readonly actions = 4;
  readonly stateCount: number;
  readonly horizon: number;
  readonly dim = 12;
  readonly promptCount = 1;
  readonly keys: number;
  readonly length: number;
  readonly correctKey: number;
  /** advance[pos*4 + a] = 1 when action a moves forward at corridor position pos. */
  private readonly advance: Uint8Array;
  private readonly keyDirection: Float32Array;
  private readonly noise: number;
  private readonly separation: number;

  constructor(options: DependencyOptions) {
    const rng = new Rng(options.seed);
    this.keys = options.keys ?? 4;
    this.length = options.length ?? 20;
    this.horizon = 1 + this.length + (options.slack ?? 14);
    this.noise = options.noise ?? 0.02;
    this.separation = options.keySeparation ?? 0.06;
    this.stateCount = 1 + this.keys * (this.length + 1);
    this.correctKey = rng.int(0, this.keys - 1);
    this.advance = new Uint8Array(this.length * 4);
    for (let p = 0; p < this.length; p++) {
      const first = rng.int(0, 3);
      let second = rng.int(0, 2);
      if (second >= first) second++;
      this.advance[p * 4 + first] = 1;
      this.advance[p * 4 + second] = 1;
    }
    // Each key nudges the embedding along its own random unit direction.
    this.keyDirection = new Float32Array(this.keys * this.dim);
    for (let k = 0; k < this.keys; k++) {
      let norm = 0;
      for (let d = 0; d < this.dim; d++) { const x = rng.normal(); this.keyDirection[k * this.dim + d] = x; norm += x * x; }
      for (let d = 0; d < this.dim; d++) this.keyDirection[k * this.dim + d] /= Math.sqrt(norm);
    }
  }

  setTrainingStep(): void {}

  start(): number { return 0; }

  /** Key and corridor position of a state (key −1 for the start). */
  decode(state: number): { key: number; pos: number } {
    if (state === 0) return { key: -1, pos: -1 };
    return { key: Math.floor((state - 1) / (this.length + 1)), pos: (state - 1) % (this.length + 1) };
  }

  step(state: number, action: number): Transition {
    if (state === 0) {
      const key = action % this.keys;
      return { next: 1 + key * (this.length + 1), done: false, reward: 0 };
    }
    const { key, pos } = this.decode(state);
    const np = this.advance[pos * 4 + action] ? pos + 1 : pos;
    const next = 1 + key * (this.length + 1) + np;
    const done = np === this.length;
    return { next, done, reward: done && key === this.correctKey ? 1 : 0 };
  }

  embed(state: number, out: Float32Array, offset: number, rng: Rng): void {
    const { key, pos } = this.decode(state);
    // Progress along the corridor on 8 radial features; 4 constant features keep the start apart.
    const t = pos < 0 ? -0.3 : pos / this.length;
    for (let i = 0; i < 8; i++) { const c = i / 7; out[offset + i] = Math.exp(-((t - c) * (t - c)) / (2 * 0.12 * 0.12)); }
    for (let i = 8; i < 12; i++) out[offset + i] = 0.3;
    if (key >= 0) for (let d = 0; d < this.dim; d++) out[offset + d] += this.separation * this.keyDirection[key * this.dim + d];
    addNoise(out, offset, this.dim, this.noise, rng);
  }
}
