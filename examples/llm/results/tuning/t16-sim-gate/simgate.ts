// Where rule v4's uncertainty gate costs in the simulations (tuning seeds 300-319, never
// reported), and v3 with a larger contest gain. From the repository root, D=this folder:
//   npx tsx $D/simgate.ts 300 20 v4 > $D/v4.json          (the library's default: reproduces ../t10-sim-base-share/v4.json)
//   npx tsx $D/simgate.ts 300 20 v3 > $D/v3.json
//   KAPPA=8 npx tsx $D/simgate.ts 300 20 v3 > $D/v3k8.json   (and KAPPA=16 > v3k16.json)
//   git apply $D/gate.patch                                (gate variants behind TRACE_GATE; in no released rule)
//   TRACE_GATE=pos npx tsx $D/simgate.ts 300 20 v4 > $D/gate-pos.json    (and zero, lo, tree, visits2, ...; README.md)
//   git apply -R $D/gate.patch
// Rule v5 is accepted too (../t18-sim-v5-kappa/README.md runs it at KAPPA 16 and 64).
// Prints one JSON array (../simrows.ts): final success per (environment, learner, seed), trained as eval/sweep.ts
// trains a tuning seed (tuningConfig: 400 final evaluation episodes). Environment: KAPPA (contest
// gain, default 4), FORK_KEEP (fork keep η, default the rule's 0.25: ../t24-fork-keep/README.md),
// TRIE=1 (trie trees: identical actions share a child, as the robustness run), ENVS, LEARNERS.
import { TraceAllocator } from '../../../../../eval/allocators/trace.js';
import { trainConfig } from '../../../../../eval/settings.js';
import { train } from '../../../../../eval/train.js';
import { printSimRows } from '../simrows.js';

const RULES = ['v3', 'v4', 'v5'] as const;
const [first, count, rule] = [Number(process.argv[2]), Number(process.argv[3]), process.argv[4] as (typeof RULES)[number]];
if (!RULES.includes(rule)) throw new Error(`rule must be v3, v4 or v5, got ${String(rule)}`);
const contestGain = Number(process.env.KAPPA ?? 4);
const forkKeep = process.env.FORK_KEEP === undefined ? undefined : Number(process.env.FORK_KEEP);
const merge = process.env.TRIE === '1';
printSimRows(first, count, (env, learner, seed) => {
  // eval/settings.ts tuningConfig, with trie trees under TRIE=1
  const config = trainConfig(env, learner, 'trace', seed, { evalEvery: 1000, evalEpisodes: 10, finalEpisodes: 400 }, { merge });
  const makeAllocator = (segment: number) => new TraceAllocator({ baseDepth: segment, round: config.round, rule, allocate: { contestGain, ...(forkKeep === undefined ? {} : { forkKeep }) } });
  return train({ ...config, makeAllocator }).finalSuccess;
});
