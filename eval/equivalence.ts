/**
 * Compute-equivalence: the budget multiplier m at which independent chains match a mean final
 * success `target`, read off the piecewise-linear curve through the chains' means at the
 * measured multipliers (docs/EVALUATION.md): the smallest m on that curve whose value reaches
 * the target. `'at most'` when the chains at the smallest multiplier already reach it (m ≤ the
 * first; "≤ 1"), `'above'` when no point reaches it (m > the last; "> 2").
 */
export type Equivalence =
  | { kind: 'at most'; multiplier: number }
  | { kind: 'at'; multiplier: number }
  | { kind: 'above'; multiplier: number };

/** `chains`: [multiplier, mean final success] pairs, in increasing multiplier. */
export function chainsMultiplier(target: number, chains: ReadonlyArray<readonly [number, number]>): Equivalence {
  if (chains.length === 0) throw new Error('chainsMultiplier: no chain results');
  for (let i = 1; i < chains.length; i++) if (!(chains[i][0] > chains[i - 1][0])) throw new Error('chainsMultiplier: multipliers must increase');
  if (target <= chains[0][1]) return { kind: 'at most', multiplier: chains[0][0] };
  for (let i = 1; i < chains.length; i++) {
    const [m0, y0] = chains[i - 1], [m1, y1] = chains[i];
    // The first segment that reaches the target: y0 < target ≤ y1 (y0 < target holds by induction).
    if (target <= y1) return { kind: 'at', multiplier: m0 + ((m1 - m0) * (target - y0)) / (y1 - y0) };
  }
  return { kind: 'above', multiplier: chains[chains.length - 1][0] };
}

/** "≤ 1", "1.37", "> 2". */
export function formatEquivalence(e: Equivalence): string {
  return e.kind === 'at most' ? `≤ ${e.multiplier}` : e.kind === 'above' ? `> ${e.multiplier}` : e.multiplier.toFixed(2);
}

/** Whether chains need at least `m` times the budget to match (true for "> last" when last ≥ m). */
export function needsAtLeast(e: Equivalence, m: number): boolean {
  return e.kind === 'above' ? e.multiplier >= m : e.kind === 'at' ? e.multiplier >= m : false;
}
