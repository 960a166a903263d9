// Summaries of timing samples. Every figure in a results file carries its spread, so the
// report can draw bands and error bars and a reader can judge how noisy the run was.

export type FigureSource = 'benny' | 'gpu-timestamps' | 'gpu-wall' | 'python' | 'wall';

export interface Figure {
  /** Mean time per call, milliseconds. */
  meanMs: number;
  medianMs: number;
  minMs: number;
  maxMs: number;
  /** Sample standard deviation, milliseconds. */
  sdMs: number;
  /** Relative margin of error of the mean at 95 % confidence, percent. */
  rmePct: number;
  /** How many samples (each the mean of one or more calls). */
  samples: number;
  source: FigureSource;
}

// Two-sided 95 % Student t quantiles for 1..30 degrees of freedom; beyond that, the normal 1.96.
const T95 = [12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.16, 2.145, 2.131, 2.12, 2.11, 2.101, 2.093, 2.086, 2.08, 2.074, 2.069, 2.064, 2.06, 2.056, 2.052, 2.048, 2.045, 2.042];

function t95(df: number): number {
  return df >= 1 && df <= T95.length ? (T95[df - 1] as number) : 1.96;
}

/** Summarises per-call times in milliseconds. */
export function summarise(samplesMs: readonly number[], source: FigureSource): Figure {
  if (samplesMs.length === 0) throw new Error(`no samples to summarise (${source})`);
  for (const s of samplesMs) if (!Number.isFinite(s) || s < 0) throw new Error(`bad timing sample ${s} (${source})`);
  const n = samplesMs.length;
  const sorted = [...samplesMs].sort((a, b) => a - b);
  const mean = sorted.reduce((a, b) => a + b, 0) / n;
  const median = n % 2 ? (sorted[(n - 1) / 2] as number) : ((sorted[n / 2 - 1] as number) + (sorted[n / 2] as number)) / 2;
  const variance = n > 1 ? sorted.reduce((a, b) => a + (b - mean) ** 2, 0) / (n - 1) : 0;
  const sd = Math.sqrt(variance);
  const rme = n > 1 && mean > 0 ? ((t95(n - 1) * sd) / Math.sqrt(n) / mean) * 100 : 0;
  return { meanMs: mean, medianMs: median, minMs: sorted[0] as number, maxMs: sorted[n - 1] as number, sdMs: sd, rmePct: rme, samples: n, source };
}

/** Ratio a/b of two figures' means with a first-order relative error (spreads added in quadrature). */
export function ratio(a: Figure, b: Figure): { value: number; lo: number; hi: number } {
  const value = a.meanMs / b.meanMs;
  const rel = Math.sqrt((a.sdMs / a.meanMs) ** 2 + (b.sdMs / b.meanMs) ** 2);
  // Symmetric in log space, so the interval stays positive on log axes.
  return { value, lo: value / (1 + rel), hi: value * (1 + rel) };
}
