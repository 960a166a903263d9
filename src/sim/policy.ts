import type { Rng } from '../util/random.js';

/** A tabular softmax policy: one row of logits per state. */
export class TabularPolicy {
  readonly logits: Float64Array;
  private readonly probs: Float64Array;

  constructor(readonly states: number, readonly actions: number) {
    this.logits = new Float64Array(states * actions);
    this.probs = new Float64Array(actions);
  }

  /** π(·|s) into `out` (defaults to a scratch buffer that the next call overwrites). */
  distribution(state: number, out: Float64Array = this.probs): Float64Array {
    const base = state * this.actions;
    let max = -Infinity;
    for (let a = 0; a < this.actions; a++) max = Math.max(max, this.logits[base + a]);
    let z = 0;
    for (let a = 0; a < this.actions; a++) { out[a] = Math.exp(this.logits[base + a] - max); z += out[a]; }
    for (let a = 0; a < this.actions; a++) out[a] /= z;
    return out;
  }

  sample(state: number, rng: Rng): { action: number; logProb: number } {
    const p = this.distribution(state);
    const u = rng.next();
    let acc = 0;
    for (let a = 0; a < this.actions; a++) {
      acc += p[a];
      if (u < acc) return { action: a, logProb: Math.log(p[a]) };
    }
    const last = this.actions - 1;
    return { action: last, logProb: Math.log(p[last]) };
  }

  /** Entropy of π(·|s) divided by ln |A|, in [0, 1] (the uncertainty the simulations give TRACE). */
  normalizedEntropy(state: number): number {
    const p = this.distribution(state);
    let h = 0;
    for (let a = 0; a < this.actions; a++) if (p[a] > 0) h -= p[a] * Math.log(p[a]);
    return h / Math.log(this.actions);
  }

  /** logits[s] += scale · (onehot(a) − π(·|s)): the gradient of scale · log π(a|s). */
  addLogProbGradient(state: number, action: number, scale: number, grad: Float64Array): void {
    const p = this.distribution(state);
    const base = state * this.actions;
    for (let a = 0; a < this.actions; a++) grad[base + a] += scale * ((a === action ? 1 : 0) - p[a]);
  }
}
