/**
 * The in-process side of `npm run bench:io`, as a process bench/io_driver.py keeps running and
 * asks for one sample after each sample of a path, so that every ratio compares times taken
 * moments apart on a shared machine. One request per line on stdin, one JSON reply per line:
 *
 *   whole FILE      score + allocate (on the scorer's threads) + plan JSON of the forest in FILE (read once), warm, default threads → {"seconds"}
 *   round DIR K     round K of DIR (round-K.npz, round-K-rollouts.json) on a live forest of DIR/in-process.npz
 *                   (rounds in order from 0): extend + plan + plan JSON of the changed trees → {"seconds", "samePlan"}
 *
 * samePlan compares the plan with DIR/round-K-plan.json, the driver's plan of the same round.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { allocate } from '../src/allocate/allocate.js';
import { planToJson } from '../src/allocate/plan.js';
import { allocateOnThreads } from '../src/allocate/threaded.js';
import { rowsFromNdArrays } from '../src/forest/columnar.js';
import { loadForestFile } from '../src/forest/load.js';
import { decodeNpz } from '../src/forest/npz.js';
import type { PackedForest } from '../src/forest/packed.js';
import { createLiveForest } from '../src/live/create.js';
import type { RolloutInput } from '../src/live/extend.js';
import type { LiveForest } from '../src/live/forest.js';
import { createScorer } from '../src/backend/select.js';
import { CpuScorer } from '../src/score/cpu.js';
import type { Scorer } from '../src/score/types.js';

const BUDGET = 16;
let scorer: Scorer | undefined;
const forests = new Map<string, PackedForest>();
const lives = new Map<string, { live: LiveForest; next: number }>();

async function whole(file: string): Promise<{ seconds: number; threads: number; groups: number }> {
  scorer ??= await createScorer({ backend: 'cpu' });
  let forest = forests.get(file);
  const once = async () => {
    const t = performance.now();
    const scores = await scorer!.score(forest!, { alpha: 1, tau: 0.5 });
    const allocation = scorer instanceof CpuScorer ? await allocateOnThreads(forest!, scores, { budget: BUDGET }, scorer) : allocate(forest!, scores, { budget: BUDGET });
    JSON.stringify(planToJson(forest!, scores, allocation));
    return (performance.now() - t) / 1000;
  };
  if (forest === undefined) {
    forest = loadForestFile(file);
    forests.set(file, forest);
    for (let i = 0; i < 3; i++) await once(); // warm-up: worker threads started, code compiled
  }
  return { seconds: await once(), threads: (scorer as { threads?: number }).threads ?? 1, groups: forest.groupCount };
}

async function round(dir: string, k: number): Promise<{ seconds: number; samePlan: boolean }> {
  let state = lives.get(dir);
  if (state === undefined) {
    const forest = loadForestFile(join(dir, 'in-process.npz'));
    const live = await createLiveForest({ dim: forest.dim, backend: 'cpu' });
    live.addForest(forest);
    await live.plan({ budget: BUDGET });
    lives.set(dir, (state = { live, next: 0 }));
  }
  if (k !== state.next) throw new Error(`round ${k} asked for, round ${state.next} is next`);
  state.next++;
  const rows = rowsFromNdArrays(decodeNpz(readFileSync(join(dir, `round-${k}.npz`)), 'round'), 'round');
  const rollouts = JSON.parse(readFileSync(join(dir, `round-${k}-rollouts.json`), 'utf8')) as RolloutInput[];
  const t = performance.now();
  state.live.extend({ rows, rollouts });
  const { replanned } = await state.live.plan({ budget: BUDGET });
  const text = JSON.stringify(state.live.planJson({ trees: replanned }));
  const seconds = (performance.now() - t) / 1000;
  const theirs = JSON.parse(readFileSync(join(dir, `round-${k}-plan.json`), 'utf8')) as unknown;
  return { seconds, samePlan: JSON.stringify(theirs) === text };
}

process.stdout.write('ready\n');
for await (const line of createInterface({ input: process.stdin })) {
  const [what, a, b] = line.split('\t');
  const reply = what === 'whole' ? await whole(a) : await round(a, Number(b));
  process.stdout.write(`${JSON.stringify(reply)}\n`);
}
scorer?.destroy();
for (const { live } of lives.values()) live.destroy();
