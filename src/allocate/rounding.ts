/**
 * Largest-remainder rounding of non-negative reals that sum to `total` (SPEC §4): every
 * item gets ⌊x⌋, then the remaining units go to items with x > 0 by larger fractional part,
 * ties to the smaller index. Only items with x > 0 are eligible; if float error leaves more
 * units than eligible items, the order is walked again, so the result always sums to `total`.
 *
 * `items` lists the indices into `x` to consider; `out` receives whole
 * numbers at the same indices. `order` is caller-owned scratch (at least `items.length`).
 */
export function largestRemainder(
  x: Float64Array,
  items: Int32Array,
  total: number,
  out: Float64Array | Int32Array,
  order: Int32Array,
): void {
  let floorSum = 0, eligible = 0;
  for (let i = 0; i < items.length; i++) {
    const idx = items[i];
    const whole = Math.floor(x[idx]);
    out[idx] = whole;
    floorSum += whole;
    if (x[idx] > 0) order[eligible++] = idx;
  }
  let remaining = total - floorSum;
  if (remaining === 0 || eligible === 0) return;
  const ranked = order.subarray(0, eligible);
  ranked.sort((a, b) => {
    const fa = x[a] - Math.floor(x[a]), fb = x[b] - Math.floor(x[b]);
    return fa !== fb ? fb - fa : a - b; // ties to the smaller index (node or tree)
  });
  if (remaining > 0) {
    for (let i = 0; remaining > 0; i = (i + 1) % eligible, remaining--) out[ranked[i]] += 1;
  } else {
    // Float error pushed Σ⌊x⌋ past the total: take units back from the smallest remainders.
    for (let i = eligible - 1; remaining < 0; i = (i - 1 + eligible) % eligible) {
      if (out[ranked[i]] > 0) { out[ranked[i]] -= 1; remaining++; }
    }
  }
}
