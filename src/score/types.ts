import type { PackedForest } from '../forest/packed.js';
import { OptionError } from '../util/errors.js';
import { joinWords } from '../util/words.js';

/** The two learnable scalars of docs/ALGORITHM.md §2, given in natural (not log) space. */
export interface ScoreParams {
  /** α > 0: how strongly semantic distance damps the contrast response. Default 1. */
  alpha: number;
  /** τ > 0: softmax temperature of the priority weights. Default 0.5. */
  tau: number;
  /**
   * Which rule (docs/ALGORITHM.md): 'v5' (default), 'v4', 'v3', 'v2' or 'v1'. Scoring differs in
   * how a pair's contrast is shared (v1 against the others) and in whether an uncertainty gap
   * counts between siblings whose rewards agree (v4 gates it once both were visited, v5 once both
   * were visited twice; v2 and v3 score alike).
   */
  rule?: ScoreRule;
}

/** Every rule scoring knows, in the order messages list them (the allocation registry's names). */
export const SCORE_RULES = ['v1', 'v2', 'v3', 'v4', 'v5'] as const;
export type ScoreRule = (typeof SCORE_RULES)[number];
/** The library's default rule (allocation's `DEFAULT_RULE` is this one, so scoring and allocation never disagree). */
export const DEFAULT_SCORE_RULE: ScoreRule = 'v5';

export const DEFAULT_PARAMS: Readonly<ScoreParams> = Object.freeze({ alpha: 1, tau: 0.5 });

/** ε of the contrast response c = Δ / (Δ + α·d + ε). */
export const CONTRAST_EPSILON = 1e-6;

/**
 * Whether `params` select v2's scoring, which v3 shares (each pair's contrast split between the two
 * siblings in proportion to their uncertainty). The one place every backend asks.
 */
export function splitsContrast(params: Pick<ScoreParams, 'rule'>): boolean {
  return params.rule !== undefined && params.rule !== 'v1';
}

/**
 * The evidence the uncertainty gate asks for, in visits: in a pair of siblings whose rewards are
 * equal and that each have at least this many visits, the uncertainty gap Δu does not count
 * (outcome evidence says they agree). v4: 1 (both visited); v5: 2 (one failure is not yet a
 * dead branch); v1, v2, v3: Infinity (Δu always counts). The one place every backend asks.
 */
export function uncertaintyGateVisits(params: Pick<ScoreParams, 'rule'>): number {
  return params.rule === 'v4' ? 1 : params.rule === 'v5' ? 2 : Infinity;
}

export type RealArray = Float64Array | Float32Array;

/**
 * Scores of a packed forest. Per-node arrays are indexed by global row; root rows hold
 * contrast 0, weight 1 and zero gradients (a root belongs to no group). `intensity` is
 * indexed by group.
 */
export interface Scores {
  readonly contrast: RealArray;
  readonly weight: RealArray;
  readonly gradAlpha: RealArray;
  readonly gradTau: RealArray;
  readonly intensity: RealArray;
  readonly params: Readonly<ScoreParams>;
  /** Which backend produced them. */
  readonly backend: 'cpu' | 'gpu';
}

/** One scoring backend. Both backends read the same `PackedForest`. */
export interface Scorer {
  readonly backend: 'cpu' | 'gpu';
  score(forest: PackedForest, params?: Partial<ScoreParams>): Promise<Scores>;
  /** Frees what the backend holds (GPU device, pools). Idempotent. */
  destroy(): void;
}

/**
 * α and τ are accepted in [1e−300, 1e300]: the gradients are bounded by about 1/τ, so a
 * smaller τ would make them overflow, and the contrast's denominator Δ + α·d + ε must stay
 * finite for every finite Δ. Outside, `OptionError`.
 */
export const PARAM_MIN = 1e-300;
export const PARAM_MAX = 1e300;

export function resolveParams(params?: Partial<ScoreParams>): ScoreParams {
  const alpha = params?.alpha ?? DEFAULT_PARAMS.alpha;
  const tau = params?.tau ?? DEFAULT_PARAMS.tau;
  if (typeof alpha !== 'number' || !(alpha >= PARAM_MIN && alpha <= PARAM_MAX)) throw new OptionError(`alpha must be a number in [${PARAM_MIN}, ${PARAM_MAX}], got ${alpha}`);
  if (typeof tau !== 'number' || !(tau >= PARAM_MIN && tau <= PARAM_MAX)) throw new OptionError(`tau must be a number in [${PARAM_MIN}, ${PARAM_MAX}], got ${tau}`);
  const rule = params?.rule ?? DEFAULT_SCORE_RULE;
  if (!(SCORE_RULES as readonly unknown[]).includes(rule)) {
    throw new OptionError(`rule must be ${joinWords(SCORE_RULES.map((r) => `'${r}'`), 'or')}, got ${String(rule)}`);
  }
  return { alpha, tau, rule };
}
