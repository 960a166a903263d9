import type { PackedForest } from '../forest/packed.js';
import type { Scores } from '../score/types.js';
import type { Gains } from './gain.js';
import { objectiveGradient, type ObjectiveGradient } from './gradient.js';
import { ascend, type LearnState } from './state.js';

export interface LearnStepResult {
  /** The state to carry into the next training step. */
  state: LearnState;
  /** J and its gradient at the parameters that produced `scores`. */
  gradient: ObjectiveGradient;
  /** False when no child had a gain, so the state was returned unchanged. */
  stepped: boolean;
}

/**
 * One docs/ALGORITHM.md §3 update: J's gradient from the scores that placed this step's rollouts and the
 * gains those rollouts produced, then a bounded ascent step. Several scored batches of one
 * training step (several forests) can be combined by summing their gradients and calling
 * `ascend` once.
 */
export function learnStep(state: LearnState, forest: PackedForest, scores: Scores, gains: Gains): LearnStepResult {
  const gradient = objectiveGradient(forest, scores, gains);
  if (gradient.count === 0) return { state, gradient, stepped: false };
  return { state: ascend(state, gradient), gradient, stepped: true };
}
