/** Edit distance (insertions, deletions, substitutions) between two short strings. */
export function editDistance(a: string, b: string): number {
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) {
      row[j] = Math.min(prev[j] + 1, row[j - 1] + 1, prev[j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    prev = row;
  }
  return prev[b.length];
}

/**
 * The known name closest to a misspelled one, when it is close enough to be a likely typo
 * (at most a third of the longer name's letters differ, case ignored), else undefined.
 */
export function nearestName(name: string, known: readonly string[]): string | undefined {
  let best: string | undefined;
  let bestDistance = Infinity;
  const lower = name.toLowerCase();
  for (const k of known) {
    const d = editDistance(lower, k.toLowerCase());
    if (d < bestDistance) { best = k; bestDistance = d; }
  }
  return best !== undefined && bestDistance <= Math.max(1, Math.floor(Math.max(name.length, best.length) / 3)) ? best : undefined;
}

/** " (did you mean "x"?)" for a likely typo, else "". */
export function didYouMean(name: string, known: readonly string[]): string {
  const near = nearestName(name, known);
  return near === undefined ? '' : ` (did you mean ${JSON.stringify(near)}?)`;
}
