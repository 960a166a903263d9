/** Two-sided 95% Student-t critical values for 1 … 30 degrees of freedom. */
const T95 = [12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.16, 2.145, 2.131, 2.12, 2.11, 2.101, 2.093, 2.086, 2.08, 2.074, 2.069, 2.064, 2.06, 2.056, 2.052, 2.048, 2.045, 2.042];

export interface Interval { mean: number; lo: number; hi: number; n: number }

/** Mean and 95% t-interval of the mean over seeds (a single value gets a zero-width interval). */
export function meanCi(values: readonly number[]): Interval {
  const n = values.length;
  if (n === 0) return { mean: NaN, lo: NaN, hi: NaN, n };
  const mean = values.reduce((a, b) => a + b, 0) / n;
  if (n === 1) return { mean, lo: mean, hi: mean, n };
  const variance = values.reduce((a, b) => a + (b - mean) * (b - mean), 0) / (n - 1);
  const t = n - 1 <= T95.length ? T95[n - 2] : 1.96;
  const half = t * Math.sqrt(variance / n);
  return { mean, lo: mean - half, hi: mean + half, n };
}
