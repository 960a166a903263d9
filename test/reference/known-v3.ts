/**
 * Known disagreements of the CLI with docs/ALGORITHM.md under v3, found by this conformance
 * suite and left for the owners of src/. Each is pinned by an `it.fails` hand case in
 * test/conformance-v3.test.ts ("known disagreements"); the random comparison still holds the
 * scores of a tree that hits one, and skips only its allocation. When a fix lands, its hand case
 * starts to pass (and so fails as `it.fails`): delete the predicate here and turn the case into `it`.
 */
import type { SpecForest, SpecTree } from './spec.js';
import { distance, siblingGroups, unitVector } from './v3-scores.js';
import type { V3Params, V3Result } from './v3.js';

/**
 * α beyond about 10¹⁵ with two siblings pointing the same way or almost (d < 10⁻¹², e.g. the
 * one-dimensional embeddings [−1] and [−1.287], where ê is exactly −1 for both and d = 0): the
 * CLI's d carries rounding noise of about 10⁻³², which α·d turns into a response near 0 where the
 * document's d = ‖ê_i − ê_j‖²/4 gives c = Δ/(Δ + ε). Every score of the group differs, and so
 * does every allocation that follows.
 */
export function extremeAlphaNearDuplicates(tree: SpecTree, p: V3Params): boolean {
  if (p.alpha < 1e15) return false;
  return siblingGroups(tree).some((kids) => {
    const units = kids.map((c) => unitVector(tree.nodes[c].embedding));
    return units.some((ui, i) => ui !== undefined && units.some((uj, j) => j > i && uj !== undefined && distance(ui, uj) < 1e-12));
  });
}

/** Which known disagreement a tree hits; `scores` ones make the whole tree incomparable. */
export type KnownDisagreement = 'extremeAlphaNearDuplicates';

/** The trees of a forest whose allocation (or, for a score disagreement, everything) the comparison must skip. */
export function knownDisagreements(forest: SpecForest, params: V3Params, _ref: V3Result): Map<number, KnownDisagreement> {
  const out = new Map<number, KnownDisagreement>();
  forest.trees.forEach((tree, t) => {
    if (extremeAlphaNearDuplicates(tree, params)) out.set(t, 'extremeAlphaNearDuplicates');
  });
  return out;
}

/** The comparison options that leave out exactly what each known disagreement makes incomparable. */
export function knownSkips(known: ReadonlyMap<number, KnownDisagreement>, params: V3Params, trees: number): { scoresOnly: Set<number>; shapeOnly: Set<number> } {
  const scoresOnly = new Set<number>();
  const shapeOnly = new Set<number>();
  for (const [t, kind] of known) (kind === 'extremeAlphaNearDuplicates' ? shapeOnly : scoresOnly).add(t);
  // a root intensity that differs moves every tree's share of a global budget
  if (params.budget.kind === 'global' && shapeOnly.size > 0) for (let t = 0; t < trees; t++) if (!scoresOnly.has(t)) shapeOnly.add(t);
  return { scoresOnly, shapeOnly };
}
