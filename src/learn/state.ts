import { DEFAULT_PARAMS, resolveParams, type ScoreParams } from '../score/types.js';

/** Bounds of docs/ALGORITHM.md §3, in natural space. */
export const ALPHA_RANGE: readonly [number, number] = Object.freeze([1e-3, 1e3]) as readonly [number, number];
export const TAU_RANGE: readonly [number, number] = Object.freeze([1e-2, 1e2]) as readonly [number, number];

/** How α and τ are ascended. Every field is optional. */
export interface LearnOptions {
  /** `adam` (default) or `sgd` (plain ascent with each log-step clipped to `maxStep`). */
  optimizer?: 'adam' | 'sgd';
  /** Step size in log space. Default 0.05 (Adam moves ln α, ln τ by about this much per step). */
  learningRate?: number;
  /** Adam's first-moment decay. Default 0.9. */
  beta1?: number;
  /** Adam's second-moment decay. Default 0.999. */
  beta2?: number;
  /** Adam's denominator guard. Default 1e-8. */
  epsilon?: number;
  /** SGD only: the largest change of ln α or ln τ in one step. Default 0.5. */
  maxStep?: number;
}

export type ResolvedLearnOptions = Required<LearnOptions>;

/**
 * Everything a training job carries from one step to the next. Plain numbers only, so
 * `JSON.stringify` / {@link learnStateFromJson} round-trip it exactly (checkpointing).
 */
export interface LearnState {
  readonly version: 1;
  /** a = ln α. */
  readonly a: number;
  /** b = ln τ. */
  readonly b: number;
  /** Adam first moments of (a, b). */
  readonly m: readonly [number, number];
  /** Adam second moments of (a, b). */
  readonly v: readonly [number, number];
  /** Steps taken (steps with no gain are not counted). */
  readonly t: number;
  readonly options: ResolvedLearnOptions;
}

export function resolveLearnOptions(options: LearnOptions = {}): ResolvedLearnOptions {
  const o: ResolvedLearnOptions = {
    optimizer: options.optimizer ?? 'adam',
    learningRate: options.learningRate ?? 0.05,
    beta1: options.beta1 ?? 0.9,
    beta2: options.beta2 ?? 0.999,
    epsilon: options.epsilon ?? 1e-8,
    maxStep: options.maxStep ?? 0.5,
  };
  if (o.optimizer !== 'adam' && o.optimizer !== 'sgd') throw new RangeError(`optimizer must be "adam" or "sgd", got ${String(o.optimizer)}`);
  if (!(o.learningRate > 0) || !Number.isFinite(o.learningRate)) throw new RangeError(`learningRate must be a finite number > 0, got ${o.learningRate}`);
  if (!(o.beta1 >= 0 && o.beta1 < 1)) throw new RangeError(`beta1 must be in [0, 1), got ${o.beta1}`);
  if (!(o.beta2 >= 0 && o.beta2 < 1)) throw new RangeError(`beta2 must be in [0, 1), got ${o.beta2}`);
  if (!(o.epsilon > 0) || !Number.isFinite(o.epsilon)) throw new RangeError(`epsilon must be a finite number > 0, got ${o.epsilon}`);
  if (!(o.maxStep > 0) || !Number.isFinite(o.maxStep)) throw new RangeError(`maxStep must be a finite number > 0, got ${o.maxStep}`);
  return o;
}

/** A fresh state at `params` (default α = 1, τ = 0.5), clamped into the docs/ALGORITHM.md §3 ranges. */
export function createLearnState(params: Partial<ScoreParams> = DEFAULT_PARAMS, options: LearnOptions = {}): LearnState {
  const p = resolveParams(params);
  return {
    version: 1,
    a: clampLog(Math.log(p.alpha), ALPHA_RANGE),
    b: clampLog(Math.log(p.tau), TAU_RANGE),
    m: [0, 0],
    v: [0, 0],
    t: 0,
    options: resolveLearnOptions(options),
  };
}

/** The score parameters a state stands for, ready for `scoreCpu` or a `Scorer`. */
export function learnedParams(state: LearnState): ScoreParams {
  return { alpha: Math.exp(state.a), tau: Math.exp(state.b) };
}

/**
 * One bounded ascent step on J with gradient (dA, dB) in log space; returns a new state
 * (the input is not changed). α and τ are clamped to [1e−3, 1e3] and [1e−2, 1e2].
 */
export function ascend(state: LearnState, gradient: { dA: number; dB: number }): LearnState {
  const { dA, dB } = gradient;
  if (!Number.isFinite(dA) || !Number.isFinite(dB)) throw new RangeError(`gradient must be finite, got dA = ${dA}, dB = ${dB}`);
  const o = state.options;
  const t = state.t + 1;
  let stepA: number, stepB: number;
  let m: [number, number] = [state.m[0], state.m[1]];
  let v: [number, number] = [state.v[0], state.v[1]];
  if (o.optimizer === 'adam') {
    m = [o.beta1 * m[0] + (1 - o.beta1) * dA, o.beta1 * m[1] + (1 - o.beta1) * dB];
    v = [o.beta2 * v[0] + (1 - o.beta2) * dA * dA, o.beta2 * v[1] + (1 - o.beta2) * dB * dB];
    const c1 = 1 - Math.pow(o.beta1, t), c2 = 1 - Math.pow(o.beta2, t);
    stepA = (o.learningRate * m[0] / c1) / (Math.sqrt(v[0] / c2) + o.epsilon);
    stepB = (o.learningRate * m[1] / c1) / (Math.sqrt(v[1] / c2) + o.epsilon);
  } else {
    stepA = clip(o.learningRate * dA, o.maxStep);
    stepB = clip(o.learningRate * dB, o.maxStep);
  }
  return { version: 1, a: clampLog(state.a + stepA, ALPHA_RANGE), b: clampLog(state.b + stepB, TAU_RANGE), m, v, t, options: o };
}

/** Validates a parsed checkpoint (e.g. `JSON.parse` output) and returns it as a `LearnState`. */
export function learnStateFromJson(value: unknown): LearnState {
  const fail = (field: string, why: string): never => { throw new RangeError(`learn state field "${field}": ${why}`); };
  if (value === null || typeof value !== 'object' || Array.isArray(value)) fail('(root)', 'must be an object');
  const s = value as Record<string, unknown>;
  if (s.version !== 1) fail('version', `must be 1, got ${String(s.version)}`);
  const num = (field: string, x: unknown): number => (typeof x === 'number' && Number.isFinite(x) ? x : fail(field, `must be a finite number, got ${String(x)}`));
  const pair = (field: string, x: unknown): [number, number] => {
    if (!Array.isArray(x) || x.length !== 2) fail(field, 'must be an array of 2 numbers');
    const arr = x as unknown[];
    return [num(`${field}[0]`, arr[0]), num(`${field}[1]`, arr[1])];
  };
  const a = num('a', s.a), b = num('b', s.b);
  if (a < Math.log(ALPHA_RANGE[0]) - 1e-12 || a > Math.log(ALPHA_RANGE[1]) + 1e-12) fail('a', `ln α must be within ln [1e-3, 1e3], got ${a}`);
  if (b < Math.log(TAU_RANGE[0]) - 1e-12 || b > Math.log(TAU_RANGE[1]) + 1e-12) fail('b', `ln τ must be within ln [1e-2, 1e2], got ${b}`);
  const v = pair('v', s.v);
  if (v[0] < 0 || v[1] < 0) fail('v', 'second moments must be >= 0');
  const t = num('t', s.t);
  if (!Number.isInteger(t) || t < 0) fail('t', `must be an integer >= 0, got ${t}`);
  const options = resolveLearnOptions((s.options ?? {}) as LearnOptions);
  return { version: 1, a, b, m: pair('m', s.m), v, t, options };
}

function clampLog(x: number, range: readonly [number, number]): number {
  return Math.min(Math.log(range[1]), Math.max(Math.log(range[0]), x));
}

function clip(x: number, limit: number): number {
  return Math.max(-limit, Math.min(limit, x));
}
