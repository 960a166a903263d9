/**
 * A live forest on the CPU taking batches of new trees, one thread against two: per batch of
 * 1024 W1-shaped trees (dim 128), the time to add it (`addForest`) and to re-score it (every
 * group new, so every sibling distance computed). Two live forests, batches interleaved.
 *   npx tsx bench/live-batches.ts
 */
import { createLiveForest } from '../src/live/create.js';
import { generateRegularForest } from '../src/synth/generate.js';
const batches = Array.from({ length: 6 }, (_, i) => {
  const f = generateRegularForest({ trees: 1024, branching: 4, depth: 3, dim: 128, seed: 10 + i });
  return { ...f, treeIds: f.treeIds.map((id) => `b${i}-${id}`) } as typeof f;
});
const res: Record<number, { apply: number[]; rescore: number[] }> = { 1: { apply: [], rescore: [] }, 2: { apply: [], rescore: [] } };
const lives = { 1: await createLiveForest({ dim: 128, backend: 'cpu', threads: 1 }), 2: await createLiveForest({ dim: 128, backend: 'cpu', threads: 2 }) };
for (let i = 0; i < batches.length; i++) for (const th of [1, 2] as const) {
  const live = lives[th];
  let t = performance.now(); live.addForest(batches[i]); const a = performance.now() - t;
  t = performance.now(); await live.rescore(); const r = performance.now() - t;
  if (i > 0) { res[th].apply.push(a); res[th].rescore.push(r); }
}
for (const th of [1, 2]) console.log(`threads ${th}: apply ${res[th].apply.map((x) => x.toFixed(0)).join(' ')} | rescore of a new 1024-tree batch ${res[th].rescore.map((x) => x.toFixed(0)).join(' ')}`);
lives[1].destroy(); lives[2].destroy();
