import type { Rng } from '../util/random.js';

/** What a transition returns. `done` ends the episode (the horizon is enforced by the rollout tree). */
export interface Transition {
  next: number;
  done: boolean;
  /** Verifiable outcome, 0 or 1; only meaningful when `done`. */
  reward: number;
}

/**
 * A simulated agentic task: discrete states (so a tabular softmax policy fits), a fixed action
 * count, deterministic transitions and a 0/1 reward at the end. Everything random is drawn from
 * the seed given at construction, so two environments built from one seed behave identically.
 */
export interface Env {
  readonly name: string;
  readonly actions: number;
  /** Size of the tabular policy: states are 0 … stateCount − 1. */
  readonly stateCount: number;
  /** Episodes end (reward 0) after this many steps. */
  readonly horizon: number;
  /** Length of the semantic embeddings. */
  readonly dim: number;
  /** Called before every training step; dynamic environments move their goals here. */
  setTrainingStep(step: number): void;
  /** Start state of prompt `i` of a batch (trees of one step, evaluation episodes). */
  start(i: number): number;
  /** How many distinct prompts there are (evaluation cycles through them). */
  readonly promptCount: number;
  step(state: number, action: number): Transition;
  /** Writes the semantic embedding of arriving in `state`: state features plus Gaussian noise. */
  embed(state: number, out: Float32Array, offset: number, rng: Rng): void;
}

/** Radial-basis features of a point in [0, 1]²: nearby points get similar, far points near-orthogonal vectors. */
export function rbf2(x: number, y: number, anchors: number, width: number, out: Float32Array, offset: number): void {
  for (let i = 0; i < anchors; i++) {
    for (let j = 0; j < anchors; j++) {
      const ax = anchors === 1 ? 0.5 : i / (anchors - 1), ay = anchors === 1 ? 0.5 : j / (anchors - 1);
      const d2 = (x - ax) * (x - ax) + (y - ay) * (y - ay);
      out[offset + i * anchors + j] = Math.exp(-d2 / (2 * width * width));
    }
  }
}

export function addNoise(out: Float32Array, offset: number, length: number, sigma: number, rng: Rng): void {
  for (let d = 0; d < length; d++) out[offset + d] += sigma * rng.normal();
}

/** Grid moves: north, east, south, west. */
export const MOVES: ReadonlyArray<readonly [number, number]> = [[0, -1], [1, 0], [0, 1], [-1, 0]];

/** A seeded random direction of length 1 in `dim` dimensions (Gaussian components, normalized). */
export function unitVector(rng: Rng, dim: number): Float32Array {
  const v = new Float32Array(dim);
  let norm = 0;
  for (let d = 0; d < dim; d++) { v[d] = rng.normal(); norm += v[d] * v[d]; }
  for (let d = 0; d < dim; d++) v[d] /= Math.sqrt(norm);
  return v;
}
