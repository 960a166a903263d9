/**
 * Largest-remainder rounding (docs/ALGORITHM.md §4) of the non-negative reals `x[lo..hi)` that sum to
 * `total`: every item gets ⌊x⌋, then the remaining units go one each to the items with x > 0
 * in order of larger fractional part, ties to the smaller index. If float error leaves more
 * units than eligible items, the order is walked again, so the result always sums to `total`.
 *
 * Instead of sorting items by (fraction, index) with a comparator, the cut-off fraction is found
 * with a native numeric sort of the fractions alone; items above it take a unit, and items
 * exactly at it take the rest in index order — the same result, several times faster.
 */
export class LargestRemainder {
  private fractions = new Float64Array(0);
  private sorted = new Float64Array(0);

  round(x: Float64Array, lo: number, hi: number, total: number, out: Float64Array | Int32Array): void {
    this.ensure(hi - lo);
    const fractions = this.fractions;
    let floorSum = 0, eligible = 0;
    for (let i = lo; i < hi; i++) {
      const whole = Math.floor(x[i]);
      out[i] = whole;
      floorSum += whole;
      if (x[i] > 0) fractions[eligible++] = x[i] - whole;
    }
    let remaining = total - floorSum;
    if (remaining === 0 || eligible === 0) return;
    if (remaining < 0) return this.takeBack(x, lo, hi, -remaining, out);
    const rounds = Math.floor(remaining / eligible);
    remaining -= rounds * eligible;
    let threshold = Infinity, atThreshold = 0;
    if (remaining > 0) {
      const sorted = this.sorted.subarray(0, eligible);
      sorted.set(fractions.subarray(0, eligible));
      sorted.sort();
      threshold = sorted[eligible - remaining];
      let above = 0;
      for (let j = 0; j < eligible; j++) if (fractions[j] > threshold) above++;
      atThreshold = remaining - above;
    }
    for (let i = lo, j = 0; i < hi; i++) {
      if (!(x[i] > 0)) continue;
      const f = fractions[j++];
      let extra = rounds;
      if (f > threshold) extra++;
      else if (f === threshold && atThreshold > 0) { extra++; atThreshold--; }
      out[i] += extra;
    }
  }

  /** Float error pushed Σ⌊x⌋ past the total: take units back from the smallest fractions, later items first. */
  private takeBack(x: Float64Array, lo: number, hi: number, units: number, out: Float64Array | Int32Array): void {
    const order: number[] = [];
    for (let i = lo; i < hi; i++) if (out[i] > 0) order.push(i);
    order.sort((a, b) => (x[a] - Math.floor(x[a])) - (x[b] - Math.floor(x[b])) || b - a);
    for (let n = 0; units > 0 && order.length > 0; n = (n + 1) % order.length) {
      if (out[order[n]] > 0) { out[order[n]] -= 1; units--; }
    }
  }

  private ensure(n: number): void {
    if (this.fractions.length >= n) return;
    this.fractions = new Float64Array(n);
    this.sorted = new Float64Array(n);
  }
}

const shared = new LargestRemainder();

/**
 * Function form over `items`, which must be consecutive indices `[items[0], items[0] + n)`
 * (every caller rounds a tree's rows or the trees of a forest). `_order` is no longer needed.
 */
export function largestRemainder(x: Float64Array, items: Int32Array, total: number, out: Float64Array | Int32Array, _order?: Int32Array): void {
  const lo = items.length > 0 ? items[0] : 0;
  if (items.length > 0 && items[items.length - 1] !== lo + items.length - 1) throw new RangeError('largestRemainder needs consecutive indices');
  shared.round(x, lo, lo + items.length, total, out);
}
