/**
 * Development aid, not a test: `npx tsx test/reference/explore-v3.ts [runs] [seed]` draws the
 * conformance cases, holds the library (in process) to the v3 reference and prints every
 * disagreement with the known-disagreement class its tree falls in (if any).
 */
import fc from 'fast-check';
import { v3CaseArb } from './arbitrary-v3.js';
import { compareV3 } from './compare-v3.js';
import { knownDisagreements, knownSkips } from './known-v3.js';
import { libraryPlanV3 } from './library-v3.js';
import type { SpecForest, SpecTree } from './spec.js';
import { referencePlanV3 } from './v3.js';

const runs = Number(process.argv[2] ?? 200);
const seed = Number(process.argv[3] ?? 1);
let bad = 0;
const t0 = Date.now();
fc.sample(v3CaseArb, { numRuns: runs, seed }).forEach((c, i) => {
  const text = c.format === 'json' ? JSON.stringify(c.forest) : c.forest.trees.map((t) => JSON.stringify(t)).join('\n') + '\n';
  const forest: SpecForest = c.format === 'json' ? JSON.parse(text) : { dim: c.forest.dim, trees: text.trim().split('\n').map((l) => JSON.parse(l) as SpecTree) };
  let got;
  try { got = libraryPlanV3(text, c.format, c.params); } catch (e) { console.log(`#${i} library threw ${(e as Error).message}`); bad++; return; }
  const ref = referencePlanV3(forest, c.params);
  const known = knownDisagreements(forest, c.params, ref);
  const { problems } = compareV3(got, forest, c.params, ref, process.env.ALL ? {} : knownSkips(known, c.params, forest.trees.length));
  if (problems.length > 0) {
    bad++;
    console.log(`#${i} known=${JSON.stringify([...known])} params=${JSON.stringify(c.params)}\n  ${problems.slice(0, 6).join('\n  ')}`);
  }
});
console.log(`${runs} cases, ${bad} with disagreements, ${Date.now() - t0} ms`);
