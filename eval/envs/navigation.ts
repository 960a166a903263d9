import { Rng } from '../../src/util/random.js';
import { MOVES, addNoise, rbf2, type Env, type Transition } from './types.js';

export interface NavigationOptions {
  seed: number;
  size?: number;
  goals?: number;
  /** Goals move to new cells every `period` training steps. */
  period?: number;
  horizon?: number;
  /** Smallest Manhattan distance of a goal from the start. */
  minDistance?: number;
  noise?: number;
}

/**
 * Dynamic multi-goal navigation: an open grid, the agent starts in the centre and prompt `g`
 * asks it to reach goal g (the goal index is part of the state). Every `period` training steps
 * all goals jump to new seeded cells, so a policy and an allocation tuned to the old goals must
 * re-target.
 */
export class NavigationEnv implements Env {
  readonly name = 'navigation';
  readonly actions = 4;
  readonly stateCount: number;
  readonly horizon: number;
  readonly dim: number;
  readonly promptCount: number;
  readonly size: number;
  readonly period: number;
  private readonly cells: number;
  private readonly noise: number;
  private readonly layouts: Int32Array[] = [];
  private readonly layoutRng: Rng;
  private readonly minDistance: number;
  private goal: Int32Array;

  constructor(options: NavigationOptions) {
    this.size = options.size ?? 7;
    this.cells = this.size * this.size;
    this.promptCount = options.goals ?? 3;
    this.stateCount = this.promptCount * this.cells;
    this.dim = 9 + this.promptCount;
    this.horizon = options.horizon ?? 16;
    this.period = options.period ?? 10;
    this.minDistance = options.minDistance ?? 4;
    this.noise = options.noise ?? 0.05;
    this.layoutRng = new Rng(options.seed);
    this.goal = this.layout(0);
  }

  /** Goal cells of epoch e; epochs are drawn in order from the seed, so any step sequence sees the same layouts. */
  private layout(epoch: number): Int32Array {
    while (this.layouts.length <= epoch) {
      const goals = new Int32Array(this.promptCount);
      const centre = (this.size >> 1) * this.size + (this.size >> 1);
      for (let g = 0; g < this.promptCount; g++) {
        let c: number;
        do c = this.layoutRng.int(0, this.cells - 1);
        while (this.manhattan(c, centre) < this.minDistance || goals.subarray(0, g).includes(c));
        goals[g] = c;
      }
      this.layouts.push(goals);
    }
    return this.layouts[epoch];
  }

  /** Current goal cell of each prompt (for tests and the report). */
  goals(): Int32Array { return this.goal.slice(); }

  setTrainingStep(step: number): void {
    this.goal = this.layout(Math.floor(step / this.period));
  }

  start(i: number): number {
    const g = i % this.promptCount;
    return g * this.cells + (this.size >> 1) * this.size + (this.size >> 1);
  }

  step(state: number, action: number): Transition {
    const g = Math.floor(state / this.cells), c = state % this.cells;
    const x = (c % this.size) + MOVES[action][0], y = Math.floor(c / this.size) + MOVES[action][1];
    const nc = x < 0 || y < 0 || x >= this.size || y >= this.size ? c : y * this.size + x;
    const done = nc === this.goal[g];
    return { next: g * this.cells + nc, done, reward: done ? 1 : 0 };
  }

  embed(state: number, out: Float32Array, offset: number, rng: Rng): void {
    const g = Math.floor(state / this.cells), c = state % this.cells;
    rbf2((c % this.size) / (this.size - 1), Math.floor(c / this.size) / (this.size - 1), 3, 0.3, out, offset);
    for (let i = 0; i < this.promptCount; i++) out[offset + 9 + i] = i === g ? 0.5 : 0;
    addNoise(out, offset, this.dim, this.noise, rng);
  }

  private manhattan(a: number, b: number): number {
    return Math.abs((a % this.size) - (b % this.size)) + Math.abs(Math.floor(a / this.size) - Math.floor(b / this.size));
  }
}
