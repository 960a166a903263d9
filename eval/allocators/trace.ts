import { allocate } from '../../src/allocate/allocate.js';
import type { PackedForest } from '../../src/forest/packed.js';
import { outcomeVarianceGains } from '../../src/learn/gain.js';
import { objectiveGradient } from '../../src/learn/gradient.js';
import { ascend, createLearnState, learnedParams, type LearnOptions, type LearnState } from '../../src/learn/state.js';
import { scoreCpu } from '../../src/score/cpu.js';
import type { ScoreParams, Scores } from '../../src/score/types.js';
import { DEFAULT_RULE, type AllocateOptions, type Rule } from '../../src/allocate/options.js';
import { exhaustedNodes, packRollouts, rowOf } from '../pack.js';
import type { Grower } from '../tree.js';
import { ablatedScores, type AblatedScores } from './ablation.js';
import { DEFAULT_ROUND, interleave, runLaunches, type Allocator, type Launch, type RoundSize } from './types.js';

export interface TraceOptions {
  /** The library's default rule (v5) unless given: rollouts run to the episode's end under v5, v4, v3, v2; 'v1': depth-limited rollouts as v1 specifies. */
  rule?: Rule;
  /** What `allocate` is given: the library's scores (default) or an ablation of them (the default rule only; `ablation.ts`). */
  scores?: 'contrast' | AblatedScores;
  /** Extra allocation settings (contestGain, forkKeep, treeFloor, pruneRatio; sweeps). */
  allocate?: Pick<AllocateOptions, 'contestGain' | 'forkKeep' | 'treeFloor' | 'pruneRatio'>;
  /** Rollouts per tree per round: `budget: perTree`, or with `global` `totalBudget: perTree × trees, minPerTree: 1`. Default 4 per tree. */
  round?: RoundSize;
  /** Learn α, τ from the gains of each training step (SPEC §3). */
  learn?: boolean;
  learnOptions?: LearnOptions;
  params?: Partial<ScoreParams>;
  /** D0 of SPEC §4 (depth of a rollout at uniform priority). Default 4, the SPEC default. */
  baseDepth?: number;
  /**
   * Not SPEC behaviour — a measured v1 proposal: present expanded nodes whose children have all
   * ended as terminal, so their mass flows back up to live siblings or the root instead of
   * re-sampling the last step before an episode's end. Default false.
   */
  closeExhausted?: boolean;
}

interface Round { packed: PackedForest; scores: Scores; firstNewNode: number }

/**
 * TRACE through the library's CPU path, as a trainer calling `trace-alloc score` each round
 * would: pack the whole forest (SPEC §1), `scoreCpu` (§2; or an ablation of its scores),
 * `allocate` (§4) with `budget` per tree or, in global mode, `totalBudget`, then start
 * `branches` rollouts at every allocated node, interleaved across trees — to the episode's end
 * under v3 and v2, of `depth` steps under v1; repeat until the step budget is spent. With
 * `learn`, every round's scores and the outcomes of the rollouts started since give one
 * gradient of J per training step.
 */
export class TraceAllocator implements Allocator {
  readonly name: string;
  deadEndLaunches = 0;
  private state: LearnState;
  private readonly round: RoundSize;
  private readonly learn: boolean;
  private readonly baseDepth: number;
  private readonly closeExhausted: boolean;
  private readonly rule: Rule;
  private readonly scoring: 'contrast' | AblatedScores;
  private readonly extra: TraceOptions['allocate'];

  constructor(options: TraceOptions = {}) {
    this.learn = options.learn ?? false;
    this.closeExhausted = options.closeExhausted ?? false;
    this.rule = options.rule ?? DEFAULT_RULE;
    this.scoring = options.scores ?? 'contrast';
    if (this.scoring !== 'contrast' && (this.rule !== DEFAULT_RULE || this.learn)) throw new Error(`TraceAllocator: ablated scores (${this.scoring}) are an ablation of the default rule (${DEFAULT_RULE}) without learning`);
    this.extra = options.allocate;
    // The names `createAllocator` builds them under.
    const variant = this.closeExhausted ? '-closed' : `${this.rule === DEFAULT_RULE ? '' : `-${this.rule}`}${this.scoring === 'contrast' ? '' : `-${this.scoring}`}`;
    this.name = `trace${variant}${this.learn ? '-learned' : ''}`;
    this.round = options.round ?? DEFAULT_ROUND;
    this.baseDepth = options.baseDepth ?? 4;
    this.state = createLearnState(options.params, options.learnOptions);
  }

  params(): ScoreParams { return { ...learnedParams(this.state), rule: this.rule }; }

  grow(g: Grower): void {
    const f = g.forest;
    const trees = f.treeNodes.length;
    const rounds: Round[] = [];
    const params = this.params();
    const budget = this.round.global ? { totalBudget: trees * this.round.perTree, minPerTree: 1 } : { budget: this.round.perTree };
    while (g.remaining() > 0) {
      const packed = packRollouts(f, this.closeExhausted ? exhaustedNodes(f) : undefined);
      const scores = this.scoring === 'contrast' ? scoreCpu(packed, params) : ablatedScores(packed, this.scoring, params);
      const plan = allocate(packed, scores, { ...this.extra, ...budget, baseDepth: this.baseDepth });
      // v3 and v2 rollouts always run to the episode's end (depth is the fork horizon, not a cut-off).
      const steps = (row: number) => (this.rule === 'v1' ? plan.depth[row] : Infinity);
      if (this.learn) rounds.push({ packed, scores, firstNewNode: f.size });
      const perTree: Launch[][] = [];
      for (let t = 0; t < trees; t++) {
        const list: Launch[] = [];
        const nodes = f.treeNodes[t];
        for (let i = 0; i < nodes.length; i++) {
          const row = packed.treeOffset[t] + i;
          if (plan.branches[row] === 0) continue;
          const kids = f.children[nodes[i]];
          const deadEnd = kids.length > 0 && kids.every((c) => f.terminal[c] === 1);
          for (let b = 0; b < plan.branches[row]; b++) list.push({ node: nodes[i], steps: steps(row), deadEnd });
        }
        perTree.push(list);
      }
      const launches = interleave(perTree);
      const started = runLaunches(g, launches);
      for (let i = 0; i < started; i++) if (launches[i].deadEnd) this.deadEndLaunches++;
      if (started === 0) break;
    }
    if (this.learn) this.update(g, rounds);
  }

  /** Sums ∂J over the rounds of this step and takes one bounded ascent step. */
  private update(g: Grower, rounds: Round[]): void {
    const f = g.forest;
    let dA = 0, dB = 0, count = 0;
    for (const r of rounds) {
      const n = r.packed.nodeCount;
      const newRollouts = new Float64Array(n), newRewardSum = new Float64Array(n);
      // New outcomes are read from the nodes added since the round. On trie trees a rollout can
      // end at a node that already existed; its outcome is not credited (no learned row runs there).
      for (let leaf = r.firstNewNode; leaf < f.size; leaf++) {
        if (!f.terminal[leaf]) continue;
        // Credit every node that existed when the round was scored and lies above this new outcome.
        for (let v = f.parent[leaf]; v >= 0; v = f.parent[v]) {
          if (v >= r.firstNewNode) continue;
          const row = rowOf(f, r.packed, v);
          newRollouts[row]++;
          newRewardSum[row] += f.outcome[leaf];
        }
      }
      const grad = objectiveGradient(r.packed, r.scores, outcomeVarianceGains(r.packed, newRollouts, newRewardSum));
      dA += grad.dA; dB += grad.dB; count += grad.count;
    }
    if (count > 0) this.state = ascend(this.state, { dA, dB });
  }
}
