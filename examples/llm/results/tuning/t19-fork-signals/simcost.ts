// What a fork costs in the simulations, beside final success: one allocator row on every
// (environment, learner) pair, tuning seeds (300-319; the reports use 1-40 and 101-140), trained as
// eval/sweep.ts trains a tuning seed. For the many-forks row, apply t10's patch first:
//   git apply examples/llm/results/tuning/t10-sim-base-share/base-share.patch
//   TRACE_BASE=9 npx tsx examples/llm/results/tuning/t19-fork-signals/simcost.ts 300 20 trace > base9.json
//   git apply -R examples/llm/results/tuning/t10-sim-base-share/base-share.patch
// Prints one JSON array of {env, learner, seed, final, stepsPerRollout, rootShare}.
import { ENVS, type EnvName } from '../../../../../eval/envs/index.js';
import type { AllocatorName } from '../../../../../eval/allocators/index.js';
import { tuningConfig } from '../../../../../eval/settings.js';
import { train, type Learner } from '../../../../../eval/train.js';

const [first, count, allocator] = [Number(process.argv[2]), Number(process.argv[3]), process.argv[4] as AllocatorName];
const envs = (process.env.ENVS?.split(',') ?? [...ENVS]) as EnvName[];
const learners = (process.env.LEARNERS ?? 'treerl-leaf,grpo').split(',') as Learner[];
const out: Array<Record<string, string | number>> = [];
for (const env of envs) {
  for (const learner of learners) {
    for (let seed = first; seed < first + count; seed++) {
      const r = train(tuningConfig(env, learner, seed, allocator));
      out.push({ env, learner, seed, final: r.finalSuccess, stepsPerRollout: r.stepsPerRollout, rootShare: r.rootShare });
    }
  }
}
console.log(JSON.stringify(out));
