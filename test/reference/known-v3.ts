/**
 * Known disagreements of the CLI with docs/ALGORITHM.md under v3, found by this conformance
 * suite and left for the owners of src/. Each is pinned by an `it.fails` hand case in
 * test/conformance-v3.test.ts ("known disagreements"); the random comparison still holds the
 * scores of a tree that hits one, and skips only its allocation. When a fix lands, its hand case
 * starts to pass (and so fails as `it.fails`): delete the predicate here and turn the case into `it`.
 */
import type { SpecForest, SpecTree } from './spec.js';
import { distance, isTerminal, rewardOf, siblingGroups, unitVector, visitsOf } from './v3-scores.js';
import type { TreeAllocationV3, V3Params, V3Result } from './v3.js';

/**
 * Visited rewards that span more than the float64 range (hi − lo overflows, e.g. +10³⁰⁸ and
 * −10³⁰⁸): the CLI's ν is not finite and the whole tree falls back to an equal spread over its
 * reached open nodes, even with an open root (the document's ν is a number in [0, 1], and the
 * fallback needs Σπ = 0).
 */
export function rewardSpanOverflows(tree: SpecTree): boolean {
  const visited = tree.nodes.filter((v) => visitsOf(v) > 0).map(rewardOf);
  return visited.length > 0 && !Number.isFinite(Math.max(...visited) - Math.min(...visited));
}

/**
 * An open contested fork below the root that keeps (almost) nothing itself (η ≈ 0) while its kept
 * children take (almost) all it passes (every ν = 1): what stays with it, P − Σ g_c, is 0 in exact
 * arithmetic, and the CLI's float subtraction can make it a negative claim; ⌊x⌋ = −1 then hands
 * an extra unit elsewhere and the tree places B + 1 branches.
 */
export function zeroStayAtOpenFork(tree: SpecTree, a: TreeAllocationV3, s: { weight: number[] }, p: V3Params): boolean {
  if (p.forkKeep > 1e-12) return false;
  return a.contested.some((isFork, f) => {
    if (!isFork || f === 0 || isTerminal(tree.nodes[f])) return false;
    let W = 0;
    let untaken = 0;
    for (const c of a.kept[f]) {
      W += s.weight[c];
      untaken += s.weight[c] * (1 - a.nu[c]);
    }
    return W > 0 && untaken <= 1e-12 * W;
  });
}

/**
 * Claims that are all near the subnormal range in a scaled form with M floored at 0
 * (M = max(0, max ln ψ_p), which is what the library's answers look like): a terminal root (no
 * claim of 1) with κ·ψ·I below about 10⁻²⁹⁰ (a subnormal κ, or a reward gap of 5·10⁻³²⁴). The CLI computes them there and loses their precision
 * or their value; the document asks for x within 1e−9 of exact arithmetic.
 */
export function subnormalClaims(a: TreeAllocationV3): boolean {
  return a.claim.some((c) => c > 0) && a.literalLargestPart < 1e-290;
}

/**
 * A ψ beyond the float64 range (ln ψ > ln(max float64) or < ln(min positive float64)) on a node
 * whose exact fork horizon D0·ψ^γ is ordinary (0 < γ small): the CLI takes ψ = ∞ (maxDepth) or
 * ψ = 0 (minDepth) there.
 */
export function depthOfFarPsi(a: TreeAllocationV3, p: V3Params): boolean {
  if (p.depthGain === 0) return false;
  const maxDepth = p.maxDepth ?? 4 * p.baseDepth;
  return a.lnPsi.some((l, v) => {
    if (!Number.isFinite(l)) return false;
    if (l > Math.log(Number.MAX_VALUE)) return a.depth[v] !== maxDepth;
    if (l < Math.log(Number.MIN_VALUE)) return a.depth[v] !== p.minDepth;
    return false;
  });
}

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
export type KnownDisagreement = 'extremeAlphaNearDuplicates' | 'rewardSpanOverflows' | 'zeroStayAtOpenFork' | 'subnormalClaims' | 'depthOfFarPsi';

/** The trees of a forest whose allocation (or, for a score disagreement, everything) the comparison must skip. */
export function knownDisagreements(forest: SpecForest, params: V3Params, ref: V3Result): Map<number, KnownDisagreement> {
  const out = new Map<number, KnownDisagreement>();
  forest.trees.forEach((tree, t) => {
    const a = ref.trees[t];
    if (extremeAlphaNearDuplicates(tree, params)) out.set(t, 'extremeAlphaNearDuplicates');
    else if (rewardSpanOverflows(tree)) out.set(t, 'rewardSpanOverflows');
    else if (zeroStayAtOpenFork(tree, a, ref.scores[t], params)) out.set(t, 'zeroStayAtOpenFork');
    else if (subnormalClaims(a)) out.set(t, 'subnormalClaims');
    else if (depthOfFarPsi(a, params)) out.set(t, 'depthOfFarPsi');
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
