/**
 * Conformance on float64 inputs. The main conformance test feeds float32-representable
 * numbers; an outside checker will not. The packed layout keeps embeddings in a Float32Array,
 * so here the question is whether that storage keeps the CLI within the SPEC tolerances of a
 * float64 reference (it does on generic inputs), and, on a crafted near-duplicate pair at
 * α = 1000 where it does not, that the whole gap is the input rounding and nothing else.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { caseArb } from './reference/arbitrary.js';
import { scoreFile } from './reference/cli.js';
import { comparePlans } from './reference/compare.js';
import { DEFAULT_PARAMS, referencePlan, type SpecForest, type SpecNode } from './reference/spec.js';

const RUNS = Math.max(1, Math.round(Number(process.env.CONFORMANCE_RUNS ?? 60) / 6));
const SEED = process.env.CONFORMANCE_SEED === undefined ? undefined : Number(process.env.CONFORMANCE_SEED);

const workDir = mkdtempSync(join(tmpdir(), 'trace-alloc-prec-'));
afterAll(() => rmSync(workDir, { recursive: true, force: true }));

/** x·(1 + 2⁻³⁰): off the float32 grid, yet a deterministic map, so exact duplicates stay exact. */
const offGrid = (x: number) => x + x * 2 ** -30;

function toFloat64Inputs(forest: SpecForest): SpecForest {
  return {
    ...forest,
    trees: forest.trees.map((t) => ({
      ...t,
      nodes: t.nodes.map((v): SpecNode => ({
        ...v,
        ...(v.reward === undefined ? {} : { reward: offGrid(v.reward) }),
        ...(v.uncertainty === undefined ? {} : { uncertainty: offGrid(v.uncertainty) }),
        ...(v.embedding === undefined ? {} : { embedding: v.embedding.map(offGrid) }),
      })),
    })),
  };
}

function withFloat32Embeddings(forest: SpecForest): SpecForest {
  return {
    ...forest,
    trees: forest.trees.map((t) => ({ ...t, nodes: t.nodes.map((v) => ({ ...v, embedding: v.embedding?.map(Math.fround) })) })),
  };
}

describe('conformance on float64 inputs', () => {
  it(`agrees with the float64 reference on ${RUNS} random forests of off-float32-grid numbers`, () => {
    let n = 0;
    fc.assert(fc.property(caseArb, (c) => {
      const forest = JSON.parse(JSON.stringify(toFloat64Inputs(c.forest))) as SpecForest;
      const file = join(workDir, `f64-${n++}.json`);
      writeFileSync(file, JSON.stringify(forest));
      const problems = comparePlans(scoreFile(file, c.params), referencePlan(forest, c.params));
      if (problems.length > 0) throw new Error(`${file}:\n${problems.slice(0, 20).join('\n')}`);
    }), { numRuns: RUNS, seed: SEED, interruptAfterTimeLimit: 120_000, markInterruptAsFailure: false });
  }, 300_000);

  // Two siblings whose second embedding components differ by 1.25e-4 on top of 1.0, where the
  // float32 grid step is 1.2e-7: rounding moves their distance d ≈ 1.95e-9 by ~1e-3 relative.
  // At α = 1000, αd ≈ 2e-6 is comparable to Δ = 1.63e-6 and ε, so c = Δ/(Δ + αd + ε) ≈ 0.4526
  // moves by ~2.3e-4 — more than the SPEC's 1e-4 — when the embeddings are stored as float32.
  // Whichever way the project settles it, the CLI must match the float64 reference of either
  // the file's numbers or their float32 roundings, closely in the latter case (1e-8: the
  // reference's d = (1 − s)/2 itself cancels to ~1e-16 absolute, ~5e-8 relative at this d).
  it('deviates on crafted near-duplicates at α = 1000 only by float32 rounding of the embeddings', () => {
    const file = fileURLToPath(new URL('./fixtures/near-duplicates.json', import.meta.url));
    const forest = JSON.parse(readFileSync(file, 'utf8')) as SpecForest;
    const params = { ...DEFAULT_PARAMS, alpha: 1000 };
    const got = scoreFile(file, params).trees[0].scores ?? [];
    const exact = referencePlan(forest, params).plan.trees[0].scores ?? [];
    const rounded = referencePlan(withFloat32Embeddings(forest), params).plan.trees[0].scores ?? [];
    expect(got).toHaveLength(2);
    const within = (ref: typeof exact, tol: number) => ref.every((s, i) => Math.abs(got[i].contrast - s.contrast) <= tol);
    expect(within(exact, 1e-4) || within(rounded, 1e-8), `CLI C = ${got[0].contrast}; float64 reference ${exact[0].contrast}; float32-embedding reference ${rounded[0].contrast}`).toBe(true);
  });
});
