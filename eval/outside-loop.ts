// The outside loop of the TRACE contract, emulated: each round a trainer runs
// `trace-alloc score FILE --budget N` (a per-tree budget; here the same library calls in
// process) and starts `branches` rollouts at every allocated node, each to the episode's end —
// for v1 too, so v1's truncation is not what is compared. The default rule (v3) against
// `--rule v2` and `--rule v1`, paired by seed on tuning seeds 2001–2060, which the reported
// runs never use; the task table's budgets and training steps.
// `npx tsx eval/outside-loop.ts [--budget N] [--seeds S] [--learner treerl|grpo]`; prints one line per environment.
import { allocate } from '../src/allocate/allocate.js';
import type { Rule } from '../src/allocate/options.js';
import { scoreCpu } from '../src/score/cpu.js';
import { interleave, runLaunches, type Allocator, type Launch } from './allocators/types.js';
import { ENVS } from './envs/index.js';
import { pairedGap } from './direction.js';
import { meanCi, type Interval } from './stats.js';
import { packRollouts } from './pack.js';
import type { Grower } from './tree.js';
import { tuningConfig } from './settings.js';
import { train, type Learner } from './train.js';

const args = process.argv.slice(2);
const arg = (name: string) => { const i = args.indexOf(name); return i >= 0 ? args[i + 1] : undefined; };
const budget = Number(arg('--budget') ?? 4), seedCount = Number(arg('--seeds') ?? 60);
const learner = (arg('--learner') ?? 'treerl') as Learner;

/** `score --budget N` each round, `branches` rollouts per allocated node, to the episode's end. */
class OutsideLoop implements Allocator {
  readonly name: string;
  constructor(private readonly rule: Rule) { this.name = `outside-${rule}`; }
  grow(g: Grower): void {
    const f = g.forest;
    while (g.remaining() > 0) {
      const packed = packRollouts(f);
      const plan = allocate(packed, scoreCpu(packed, { rule: this.rule }), { budget });
      const perTree: Launch[][] = f.treeNodes.map((nodes, t) => nodes.flatMap((v, i) => Array.from({ length: plan.branches[packed.treeOffset[t] + i] }, () => ({ node: v, steps: Infinity }))));
      if (runLaunches(g, interleave(perTree)) === 0) break;
    }
  }
}

const pts = (x: Interval) => `${(100 * x.mean).toFixed(1)} [${(100 * x.lo).toFixed(1)}, ${(100 * x.hi).toFixed(1)}]`;
for (const env of ENVS) {
  const run = (rule: Rule) => Array.from({ length: seedCount }, (_, i) => train({
    ...tuningConfig(env, learner, 2001 + i, 'trace'), makeAllocator: () => new OutsideLoop(rule),
  }).finalSuccess);
  const v3 = run('v3'), v2 = run('v2'), v1 = run('v1');
  process.stdout.write(`${env.padEnd(11)} ${learner}, --budget ${budget}, to the end: default (v3) ${pts(meanCi(v3))}%, --rule v2 ${pts(meanCi(v2))}%, --rule v1 ${pts(meanCi(v1))}%; v3 − v2 ${pts(pairedGap(v3, v2))}, v3 − v1 ${pts(pairedGap(v3, v1))} points\n`);
}
