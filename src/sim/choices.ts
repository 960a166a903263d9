import { Rng } from '../util/random.js';
import { addNoise, unitVector, type Env, type Transition } from './env.js';

/** One prompt of a `ChoicesEnv`: where along its corridor the decisions are, and how many options each offers. */
export interface ChoicePrompt {
  /** Corridor positions (0 = the first step) at which the agent must pick one of `options`. */
  decisions: number[];
  /** Options offered at each decision (2–4); exactly one is right. */
  options: number[];
}

export interface ChoicesOptions {
  seed: number;
  name: string;
  prompts: ChoicePrompt[];
  /** Corridor length: positions 0 … length − 1, the episode succeeds on reaching `length`. */
  length: number;
  /** Extra steps the horizon allows beyond `length` (stalls on ordinary positions cost a step). */
  slack: number;
  /** Embedding distance between the right and a wrong option's states: small = near-identical. */
  separation?: number;
  noise?: number;
  /** Whether ordinary positions have stalling actions (two of four); false: every action advances. Default true. */
  stalls?: boolean;
}

/**
 * Decisions along a corridor, verified only at the end. At an ordinary position two of the four
 * actions advance and two stall (a skill the policy learns everywhere); at a decision position
 * every action advances, but only the seeded right option keeps the episode winnable: a wrong
 * one leads into a "doomed" copy of the rest of the corridor whose states look almost the same
 * (embeddings `separation` apart) and end with reward 0. So the outcome of a decision is revealed
 * only at the end, and where it sits (the first step, mid-episode) decides which allocation pays:
 * a wrong first choice makes every fork below it worthless, a mid-episode choice is resampled
 * best by forking just above it. Prompts differ in how many decisions they hold and how wide each
 * is, which makes them easy or hard for the untrained policy.
 */
export class ChoicesEnv implements Env {
  readonly name: string;
  readonly actions = 4;
  readonly stateCount: number;
  readonly horizon: number;
  readonly dim = 16;
  readonly promptCount: number;
  readonly length: number;
  private readonly prompts: ChoicePrompt[];
  /** right[p*length + pos]: the right option at a decision position (−1 elsewhere). */
  private readonly right: Int8Array;
  /** options[p*length + pos]: options offered at a decision position (0 elsewhere). */
  private readonly optionCount: Int8Array;
  /** advance[(p*length + pos)*4 + a] = 1 when action a moves on at an ordinary position. */
  private readonly advance: Uint8Array;
  private readonly promptDirection: Float32Array;
  private readonly doomDirection: Float32Array;
  private readonly separation: number;
  private readonly noise: number;

  constructor(options: ChoicesOptions) {
    const rng = new Rng((options.seed * 2246822519) >>> 0);
    this.name = options.name;
    this.prompts = options.prompts;
    this.promptCount = options.prompts.length;
    this.length = options.length;
    this.horizon = options.length + options.slack;
    this.separation = options.separation ?? 0.05;
    this.noise = options.noise ?? 0.02;
    // Per prompt: (position 0 … length, doomed 0/1); position `length` is never entered (the episode ends).
    this.stateCount = this.promptCount * (this.length + 1) * 2;
    this.right = new Int8Array(this.promptCount * this.length).fill(-1);
    this.optionCount = new Int8Array(this.promptCount * this.length);
    this.advance = new Uint8Array(this.promptCount * this.length * 4);
    for (let p = 0; p < this.promptCount; p++) {
      const { decisions, options: widths } = options.prompts[p];
      if (decisions.length !== widths.length) throw new Error(`prompt ${p}: ${decisions.length} decisions, ${widths.length} option counts`);
      decisions.forEach((pos, i) => {
        if (pos < 0 || pos >= this.length) throw new Error(`prompt ${p}: decision at ${pos} outside the corridor`);
        this.optionCount[p * this.length + pos] = widths[i];
        this.right[p * this.length + pos] = rng.int(0, widths[i] - 1);
      });
      for (let pos = 0; pos < this.length; pos++) {
        const first = rng.int(0, 3);
        let second = rng.int(0, 2);
        if (second >= first) second++;
        this.advance[(p * this.length + pos) * 4 + first] = 1;
        this.advance[(p * this.length + pos) * 4 + second] = 1;
        if (options.stalls === false) this.advance.fill(1, (p * this.length + pos) * 4, (p * this.length + pos + 1) * 4);
      }
    }
    this.promptDirection = new Float32Array(this.promptCount * this.dim);
    for (let p = 0; p < this.promptCount; p++) this.promptDirection.set(unitVector(rng, this.dim), p * this.dim);
    this.doomDirection = unitVector(rng, this.dim);
  }

  setTrainingStep(): void {}

  /** Whether position `pos` of prompt `prompt` is a decision (for oracle allocators in the lab). */
  isDecision(prompt: number, pos: number): boolean { return pos < this.length && this.optionCount[prompt * this.length + pos] > 0; }

  start(i: number): number { return this.encode(i % this.promptCount, 0, 0); }

  decode(state: number): { prompt: number; pos: number; doomed: number } {
    const perPrompt = (this.length + 1) * 2;
    const prompt = Math.floor(state / perPrompt), local = state % perPrompt;
    return { prompt, pos: local >> 1, doomed: local & 1 };
  }

  private encode(prompt: number, pos: number, doomed: number): number {
    return prompt * (this.length + 1) * 2 + pos * 2 + doomed;
  }

  step(state: number, action: number): Transition {
    const { prompt, pos, doomed } = this.decode(state);
    const at = prompt * this.length + pos;
    const width = this.optionCount[at];
    let next: number;
    if (width > 0) {
      // A decision: every action moves on; actions beyond the options count as the last option.
      const choice = Math.min(action, width - 1);
      next = this.encode(prompt, pos + 1, doomed | (choice === this.right[at] ? 0 : 1));
    } else {
      next = this.advance[at * 4 + action] ? this.encode(prompt, pos + 1, doomed) : state;
    }
    const arrived = this.decode(next).pos === this.length;
    return { next, done: arrived, reward: arrived && this.decode(next).doomed === 0 ? 1 : 0 };
  }

  /**
   * Progress on 8 radial features, the prompt as a direction, and a small offset for doomed
   * states: a wrong option's state looks almost like the right one's.
   */
  embed(state: number, out: Float32Array, offset: number, rng: Rng): void {
    const { prompt, pos, doomed } = this.decode(state);
    const t = pos / this.length;
    for (let d = 0; d < this.dim; d++) out[offset + d] = 0;
    for (let i = 0; i < 8; i++) { const c = i / 7; out[offset + i] = Math.exp(-((t - c) * (t - c)) / (2 * 0.12 * 0.12)); }
    for (let d = 0; d < this.dim; d++) out[offset + d] += 0.3 * this.promptDirection[prompt * this.dim + d];
    if (doomed) for (let d = 0; d < this.dim; d++) out[offset + d] += this.separation * this.doomDirection[d];
    addNoise(out, offset, this.dim, this.noise, rng);
  }
}

/** A decisive first choice and a decisive mid-episode choice, 4 near-identical options each. */
export function twoChoices(seed: number, prompts = 4): ChoicesEnv {
  return new ChoicesEnv({ seed, name: 'twochoice', length: 14, slack: 10, prompts: Array.from({ length: prompts }, () => ({ decisions: [0, 7], options: [4, 4] })) });
}

/** `twoChoices` without stalls: only the two decisions matter, every other step advances. */
export function twoChoicesClean(seed: number, prompts = 4): ChoicesEnv {
  return new ChoicesEnv({ seed, name: 'twoclean', length: 14, slack: 0, stalls: false, prompts: Array.from({ length: prompts }, () => ({ decisions: [0, 7], options: [4, 4] })) });
}

/** Only a mid-episode choice decides (4 near-identical options); the first steps are corridor. */
export function midChoice(seed: number, prompts = 4): ChoicesEnv {
  return new ChoicesEnv({ seed, name: 'midchoice', length: 14, slack: 10, prompts: Array.from({ length: prompts }, () => ({ decisions: [7], options: [4] })) });
}

/**
 * 16 prompts from mostly solved to rarely solved by the untrained policy: no decision, one of 2,
 * one of 4, two of 3 and 4, three of 4 — each at seeded positions — under one global budget.
 */
export function mixedPrompts(seed: number): ChoicesEnv {
  const rng = new Rng((seed * 3266489917) >>> 0);
  const shapes: number[][] = [[], [], [2], [2], [3], [3], [4], [4], [2, 3], [3, 3], [3, 4], [4, 4], [2, 3, 4], [3, 4, 4], [4, 4, 4], [4, 4, 4, 4]];
  const length = 10;
  const prompts = shapes.map((widths) => {
    const positions = new Set<number>();
    while (positions.size < widths.length) positions.add(rng.int(0, length - 1));
    return { decisions: [...positions].sort((a, b) => a - b), options: widths };
  });
  return new ChoicesEnv({ seed, name: 'mixed', length, slack: 12, prompts });
}
