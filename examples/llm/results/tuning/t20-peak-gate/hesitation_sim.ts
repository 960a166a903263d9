// The simulations' side of hesitation.py: with peak-stats.patch applied (it records, in
// eval/pack.ts, each tree's nodes a base fork share could use, as hesitation_lm.py does for the
// language model), trains v5 (the `trace` row) on every environment under TreeRL, tuning seeds
// 300-302, and writes {env: [tree-plan records]} to the file named by its argument.
//   git apply examples/llm/results/tuning/t20-peak-gate/peak-stats.patch
//   npx tsx examples/llm/results/tuning/t20-peak-gate/hesitation_sim.ts /tmp/sim.json
//   git apply -R examples/llm/results/tuning/t20-peak-gate/peak-stats.patch
import { writeFileSync } from 'node:fs';
import { ENVS, type EnvName } from '../../../../../eval/envs/index.js';
import { tuningConfig } from '../../../../../eval/settings.js';
import { train } from '../../../../../eval/train.js';

const out: Record<string, unknown[]> = {};
for (const env of ENVS as readonly EnvName[]) {
  const records: unknown[] = [];
  (globalThis as { __PEAK?: unknown[] }).__PEAK = records;
  for (let seed = 300; seed < 303; seed++) train(tuningConfig(env, 'treerl-leaf', seed, 'trace'));
  out[env] = records;
}
writeFileSync(process.argv[2], JSON.stringify(out));
