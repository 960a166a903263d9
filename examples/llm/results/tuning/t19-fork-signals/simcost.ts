// What a fork costs in the simulations, beside final success: one allocator row on every
// (environment, learner) pair, tuning seeds (300-319; the reports use 1-40 and 101-140), trained as
// eval/sweep.ts trains a tuning seed. For the base-share rows, apply cost-gate.patch first (t10's
// base-share patch with the cost gate; README.md has every command):
//   git apply examples/llm/results/tuning/t19-fork-signals/cost-gate.patch
//   TRACE_BASE=9 npx tsx examples/llm/results/tuning/t19-fork-signals/simcost.ts 300 20 trace > sim-v5-base9.json
//   git apply -R examples/llm/results/tuning/t19-fork-signals/cost-gate.patch
// Prints one JSON array of {env, learner, seed, final, stepsPerRollout, rootShare}.
import type { AllocatorName } from '../../../../../eval/allocators/index.js';
import { tuningConfig } from '../../../../../eval/settings.js';
import { train } from '../../../../../eval/train.js';
import { printSimRecords } from '../simrows.js';

const [first, count, allocator] = [Number(process.argv[2]), Number(process.argv[3]), process.argv[4] as AllocatorName];
printSimRecords(first, count, (env, learner, seed) => {
  const r = train(tuningConfig(env, learner, seed, allocator));
  return { final: r.finalSuccess, stepsPerRollout: r.stepsPerRollout, rootShare: r.rootShare };
});
