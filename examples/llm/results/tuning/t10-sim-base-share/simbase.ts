// The LM tuning's base-fork-share candidates in the simulations (tuning seeds 300-319, never
// reported), with base-share.patch applied to the library (the share is not in any released rule):
//   git apply examples/llm/results/tuning/t10-sim-base-share/base-share.patch
//   TRACE_BASE=9 npx tsx examples/llm/results/tuning/t10-sim-base-share/simbase.ts 300 20 trace > base9.json
//   git apply -R examples/llm/results/tuning/t10-sim-base-share/base-share.patch
// Prints one JSON array: final success per (environment, learner, seed) of one allocator row,
// trained as eval/sweep.ts trains a tuning seed (tuningConfig: 400 final evaluation episodes).
// Environment: TRACE_BASE (claim beside the fresh share 1; 0 = v4), TRACE_BASE_TOP (0 = split by
// u; k = the k nodes of largest u, unforked first), TRACE_BASE_WHERE (all | mixed), ENVS, LEARNERS.
import type { AllocatorName } from '../../../../../eval/allocators/index.js';
import { tuningConfig } from '../../../../../eval/settings.js';
import { train } from '../../../../../eval/train.js';
import { printSimRows } from '../simrows.js';

const [first, count, allocator] = [Number(process.argv[2]), Number(process.argv[3]), process.argv[4] as AllocatorName];
printSimRows(first, count, (env, learner, seed) => train(tuningConfig(env, learner, seed, allocator)).finalSuccess);
