import type { PackedForest } from '../src/forest/packed.js';
import type { RealArray } from '../src/score/types.js';

/** The outputs every path must produce, in the reference's row/group layout. */
export interface ScoreArrays {
  contrast: ArrayLike<number> | RealArray;
  weight: ArrayLike<number> | RealArray;
  gradAlpha: ArrayLike<number> | RealArray;
  gradTau: ArrayLike<number> | RealArray;
  intensity: ArrayLike<number> | RealArray;
}

export interface CheckResult {
  ok: boolean;
  /** Largest |Δ| of contrast, weight and intensity (tolerance 1e-4, SPEC §2). */
  maxAbs: number;
  /** Largest |Δg| / max(1, |g|) of both gradients (tolerance 1e-3). */
  maxGradRel: number;
  /** Where the worst disagreement sits, for the failure note. */
  worst: string;
}

export const TOL_VALUE = 1e-4;
export const TOL_GRAD = 1e-3;

/** Compares a path's outputs against the float64 reference with the SPEC §2 float32 tolerances. */
export function checkAgainstReference(forest: PackedForest, ref: ScoreArrays, got: ScoreArrays): CheckResult {
  let maxAbs = 0;
  let maxGradRel = 0;
  let worst = 'none';
  let worstScore = 0;
  const where = (row: number) => {
    const t = forest.nodeTree[row] as number;
    return `tree "${forest.treeIds[t]}" node ${row - (forest.treeOffset[t] as number)}`;
  };
  for (const field of ['contrast', 'weight'] as const) {
    const a = ref[field];
    const b = got[field];
    if (b.length !== a.length) return { ok: false, maxAbs: Infinity, maxGradRel: Infinity, worst: `${field} has ${b.length} entries, expected ${a.length}` };
    for (let i = 0; i < a.length; i++) {
      const d = Math.abs((a[i] as number) - (b[i] as number));
      if (!(d <= maxAbs)) maxAbs = Number.isNaN(d) ? Infinity : d;
      const score = Number.isNaN(d) ? Infinity : d / TOL_VALUE;
      if (score > worstScore) { worstScore = score; worst = `${where(i)}, field "${field}": ${b[i]} vs reference ${a[i]}`; }
    }
  }
  for (const field of ['gradAlpha', 'gradTau'] as const) {
    const a = ref[field];
    const b = got[field];
    if (b.length !== a.length) return { ok: false, maxAbs, maxGradRel: Infinity, worst: `${field} has ${b.length} entries, expected ${a.length}` };
    for (let i = 0; i < a.length; i++) {
      const d = Math.abs((a[i] as number) - (b[i] as number)) / Math.max(1, Math.abs(a[i] as number));
      if (!(d <= maxGradRel)) maxGradRel = Number.isNaN(d) ? Infinity : d;
      const score = Number.isNaN(d) ? Infinity : d / TOL_GRAD;
      if (score > worstScore) { worstScore = score; worst = `${where(i)}, field "${field}": ${b[i]} vs reference ${a[i]}`; }
    }
  }
  const ai = ref.intensity;
  const bi = got.intensity;
  if (bi.length !== ai.length) return { ok: false, maxAbs, maxGradRel, worst: `intensity has ${bi.length} entries, expected ${ai.length}` };
  for (let g = 0; g < ai.length; g++) {
    const d = Math.abs((ai[g] as number) - (bi[g] as number));
    if (!(d <= maxAbs)) maxAbs = Number.isNaN(d) ? Infinity : d;
    const score = Number.isNaN(d) ? Infinity : d / TOL_VALUE;
    if (score > worstScore) { worstScore = score; worst = `group of ${where(forest.groupParent[g] as number)}, field "intensity": ${bi[g]} vs reference ${ai[g]}`; }
  }
  return { ok: maxAbs <= TOL_VALUE && maxGradRel <= TOL_GRAD, maxAbs, maxGradRel, worst };
}
