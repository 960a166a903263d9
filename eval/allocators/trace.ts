import { allocate } from '../../src/allocate/allocate.js';
import type { PackedForest } from '../../src/forest/packed.js';
import { outcomeVarianceGains } from '../../src/learn/gain.js';
import { objectiveGradient } from '../../src/learn/gradient.js';
import { ascend, createLearnState, learnedParams, type LearnOptions, type LearnState } from '../../src/learn/state.js';
import { scoreCpu } from '../../src/score/cpu.js';
import type { ScoreParams, Scores } from '../../src/score/types.js';
import type { AllocateOptions, Rule } from '../../src/allocate/options.js';
import { exhaustedNodes, packRollouts, rowOf } from '../pack.js';
import type { Grower } from '../tree.js';
import { interleave, runLaunches, type Allocator, type Launch } from './types.js';

export interface TraceOptions {
  /** 'v2' (default): rollouts run to the episode's end and claims follow docs/ALGORITHM.md v2; 'v1': depth-limited rollouts as v1 specifies. */
  rule?: Rule;
  /** Extra allocation settings (v2's contestGain, treeFloor, pruneRatio; sweeps). */
  allocate?: Pick<AllocateOptions, 'contestGain' | 'treeFloor' | 'pruneRatio'>;
  /** Rollouts placed per tree per allocation round (the global budget is this × trees). Default 4. */
  rolloutsPerTree?: number;
  /** Learn α, τ from the gains of each training step (SPEC §3). */
  learn?: boolean;
  learnOptions?: LearnOptions;
  params?: Partial<ScoreParams>;
  /** D0 of SPEC §4 (depth of a rollout at uniform priority). Default 4, the SPEC default. */
  baseDepth?: number;
  /**
   * Not SPEC behaviour — a measured proposal: present expanded nodes whose children have all
   * ended as terminal, so their mass flows back up to live siblings or the root instead of
   * re-sampling the last step before an episode's end. Default false.
   */
  closeExhausted?: boolean;
}

interface Round { packed: PackedForest; scores: Scores; firstNewNode: number }

/**
 * TRACE through the library's CPU path: pack the trees (SPEC §1), `scoreCpu` (§2), `allocate`
 * in global-budget mode (§4), then start `branches` rollouts of `depth` steps at every
 * allocated node; repeat until the step budget is spent. With `learn`, every round's scores
 * and the outcomes of the rollouts started since give one gradient of J per training step.
 */
export class TraceAllocator implements Allocator {
  readonly name: string;
  deadEndLaunches = 0;
  private state: LearnState;
  private readonly perTree: number;
  private readonly learn: boolean;
  private readonly baseDepth: number;
  private readonly closeExhausted: boolean;
  private readonly rule: Rule;
  private readonly extra: TraceOptions['allocate'];

  constructor(options: TraceOptions = {}) {
    this.learn = options.learn ?? false;
    this.closeExhausted = options.closeExhausted ?? false;
    this.rule = options.rule ?? 'v2';
    this.extra = options.allocate;
    this.name = (this.rule === 'v1' ? 'trace-v1' : 'trace') + (this.learn ? '-learned' : '') + (this.closeExhausted ? '-closed' : '');
    this.perTree = options.rolloutsPerTree ?? 4;
    this.baseDepth = options.baseDepth ?? 4;
    this.state = createLearnState(options.params, options.learnOptions);
  }

  params(): ScoreParams { return { ...learnedParams(this.state), rule: this.rule }; }

  grow(g: Grower): void {
    const f = g.forest;
    const trees = f.treeNodes.length;
    const rounds: Round[] = [];
    const params = this.params();
    while (g.remaining() > 0) {
      const packed = packRollouts(f, this.closeExhausted ? exhaustedNodes(f) : undefined);
      const scores = scoreCpu(packed, { ...params, rule: this.rule });
      const plan = allocate(packed, scores, { ...this.extra, totalBudget: trees * this.perTree, minPerTree: 1, baseDepth: this.baseDepth });
      // v2 rollouts always run to the episode's end (depth is the fork horizon, not a cut-off).
      const steps = (row: number) => (this.rule === 'v2' ? Infinity : plan.depth[row]);
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
