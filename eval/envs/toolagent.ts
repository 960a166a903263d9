import { Rng } from '../../src/util/random.js';
import { addNoise, unitVector, type Env, type Transition } from './types.js';

export interface ToolAgentOptions {
  seed: number;
  /** Questions (prompts); each has its own right queries and relevant documents. */
  questions?: number;
  /** Evidence hops a question needs before it can be answered. */
  hops?: number;
  /** Episode length limit in steps. */
  horizon?: number;
  /** Embedding distance between a page of relevant and of irrelevant results: small = near-identical. */
  pageSeparation?: number;
  noise?: number;
}

/** Actions: three phrasings of a search query, read the first or second result, answer. */
const SEARCH = 3, READ_FIRST = 3, READ_SECOND = 4, ANSWER = 5;
/** Phases within a hop. */
const NEED_SEARCH = 0, GOOD_RESULTS = 1, BAD_RESULTS = 2, PHASES = 3;

/**
 * A multi-turn, tool-using agent in miniature (search → read → search → read → answer), verified
 * only at the end. Each question needs `hops` pieces of evidence: at every hop exactly one of the
 * three query phrasings returns the relevant page, and on that page exactly one of the two
 * results holds the evidence; reading it moves the agent to the next hop. Answering ends the
 * episode: reward 1 only with all the evidence in hand, so answering early is the decisive
 * mistake. The other phrasings return pages that look almost the same (embeddings
 * `pageSeparation` apart) but hold nothing; reading a wrong result or searching again wastes a
 * step in a near-identical state. Tool results change what the next steps can do: reads only
 * help on a relevant page.
 */
export class ToolAgentEnv implements Env {
  readonly name = 'toolagent';
  readonly actions = 6;
  readonly stateCount: number;
  readonly horizon: number;
  readonly dim = 16;
  readonly promptCount: number;
  readonly hops: number;
  /** rightQuery[q*hops + h], relevantResult[q*hops + h]. */
  readonly rightQuery: Uint8Array;
  readonly relevantResult: Uint8Array;
  private readonly perQuestion: number;
  private readonly pageDirection: Float32Array;
  private readonly questionDirection: Float32Array;
  private readonly noise: number;
  private readonly separation: number;

  constructor(options: ToolAgentOptions) {
    const rng = new Rng(options.seed * 2654435761 >>> 0);
    this.promptCount = options.questions ?? 3;
    this.hops = options.hops ?? 2;
    this.horizon = options.horizon ?? 16;
    this.noise = options.noise ?? 0.02;
    this.separation = options.pageSeparation ?? 0.05;
    // Per question: hops × phases, plus the "ready to answer" state.
    this.perQuestion = this.hops * PHASES + 1;
    this.stateCount = this.promptCount * this.perQuestion;
    this.rightQuery = new Uint8Array(this.promptCount * this.hops);
    this.relevantResult = new Uint8Array(this.promptCount * this.hops);
    for (let i = 0; i < this.rightQuery.length; i++) {
      this.rightQuery[i] = rng.int(0, SEARCH - 1);
      this.relevantResult[i] = rng.int(0, 1);
    }
    this.pageDirection = unitVector(rng, this.dim);
    this.questionDirection = new Float32Array(this.promptCount * this.dim);
    for (let q = 0; q < this.promptCount; q++) this.questionDirection.set(unitVector(rng, this.dim), q * this.dim);
  }

  setTrainingStep(): void {}

  start(i: number): number { return (i % this.promptCount) * this.perQuestion; }

  decode(state: number): { question: number; hop: number; phase: number } {
    const question = Math.floor(state / this.perQuestion), local = state % this.perQuestion;
    if (local === this.hops * PHASES) return { question, hop: this.hops, phase: NEED_SEARCH };
    return { question, hop: Math.floor(local / PHASES), phase: local % PHASES };
  }

  private encode(question: number, hop: number, phase: number): number {
    return question * this.perQuestion + (hop === this.hops ? this.hops * PHASES : hop * PHASES + phase);
  }

  step(state: number, action: number): Transition {
    const { question, hop, phase } = this.decode(state);
    if (action === ANSWER) return { next: state, done: true, reward: hop === this.hops ? 1 : 0 };
    if (hop === this.hops) return { next: state, done: false, reward: 0 };
    const at = question * this.hops + hop;
    if (action < SEARCH) {
      const good = action === this.rightQuery[at];
      return { next: this.encode(question, hop, good ? GOOD_RESULTS : BAD_RESULTS), done: false, reward: 0 };
    }
    const result = action === READ_FIRST ? 0 : action === READ_SECOND ? 1 : -1;
    if (phase === GOOD_RESULTS && result === this.relevantResult[at]) {
      return { next: this.encode(question, hop + 1, NEED_SEARCH), done: false, reward: 0 };
    }
    return { next: state, done: false, reward: 0 };
  }

  embed(state: number, out: Float32Array, offset: number, rng: Rng): void {
    const { question, hop, phase } = this.decode(state);
    for (let d = 0; d < this.dim; d++) out[offset + d] = 0;
    // Progress (hop) on radial features, the kind of page on two more, the question as a direction.
    const t = hop / this.hops;
    for (let i = 0; i < 6; i++) { const c = i / 5; out[offset + i] = Math.exp(-((t - c) * (t - c)) / (2 * 0.15 * 0.15)); }
    out[offset + 6] = phase === NEED_SEARCH ? 1 : 0;
    out[offset + 7] = phase === NEED_SEARCH ? 0 : 1;
    for (let d = 0; d < this.dim; d++) out[offset + d] += 0.3 * this.questionDirection[question * this.dim + d];
    if (phase === BAD_RESULTS) for (let d = 0; d < this.dim; d++) out[offset + d] += this.separation * this.pageDirection[d];
    addNoise(out, offset, this.dim, this.noise, rng);
  }
}
