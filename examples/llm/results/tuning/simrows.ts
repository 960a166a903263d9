// The loop the simulation tuning scripts share (t10-sim-base-share/simbase.ts,
// t16-sim-gate/simgate.ts): one training run per (environment, learner, seed), the environments
// and learners narrowed by ENVS and LEARNERS, printed as one JSON array of
// {env, learner, seed, final} (final success), or with `rowOf` whatever fields it returns beside
// env, learner and seed (t19-fork-signals/simcost.ts).
import { ENVS, type EnvName } from '../../../../eval/envs/index.js';
import type { Learner } from '../../../../eval/train.js';

export function printSimRows(first: number, count: number, finalOf: (env: EnvName, learner: Learner, seed: number) => number): void {
  printSimRecords(first, count, (env, learner, seed) => ({ final: finalOf(env, learner, seed) }));
}

export function printSimRecords(first: number, count: number, rowOf: (env: EnvName, learner: Learner, seed: number) => Record<string, number>): void {
  const envs = (process.env.ENVS?.split(',') ?? [...ENVS]) as EnvName[];
  const learners = (process.env.LEARNERS ?? 'treerl-leaf,grpo').split(',') as Learner[];
  const out: Array<Record<string, string | number>> = [];
  for (const env of envs) {
    for (const learner of learners) {
      for (let seed = first; seed < first + count; seed++) out.push({ env, learner, seed, ...rowOf(env, learner, seed) });
    }
  }
  console.log(JSON.stringify(out));
}
