import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { fromHalfBits, toHalfBits } from '../src/gpu/half.js';
import { writeHalfRow } from '../src/gpu/layout.js';

describe('float32 → f16 conversion', () => {
  it('converts known values exactly', () => {
    expect(toHalfBits(0)).toBe(0);
    expect(toHalfBits(-0)).toBe(0x8000);
    expect(toHalfBits(1)).toBe(0x3c00);
    expect(toHalfBits(-2)).toBe(0xc000);
    expect(toHalfBits(65504)).toBe(0x7bff);
    expect(toHalfBits(65520)).toBe(0x7c00); // rounds up to +Infinity
    expect(toHalfBits(2 ** -24)).toBe(1); // smallest subnormal
    expect(toHalfBits(2 ** -26)).toBe(0); // below half of it
    expect(toHalfBits(1 + 2 ** -11)).toBe(0x3c00); // a tie rounds to even
    expect(toHalfBits(1 + 3 * 2 ** -11)).toBe(0x3c02);
  });

  it('rounds to the nearest f16 (fast-check)', () => {
    fc.assert(
      fc.property(fc.float({ min: -65504, max: 65504, noNaN: true }), (x) => {
        const h = fromHalfBits(toHalfBits(x));
        // The neighbours one f16 step either side are never closer.
        const bits = toHalfBits(x);
        for (const other of [bits - 1, bits + 1]) {
          if ((other & 0x7fff) > 0x7bff || other < 0 || ((other ^ bits) & 0x8000)) continue;
          expect(Math.abs(fromHalfBits(other) - x)).toBeGreaterThanOrEqual(Math.abs(h - x));
        }
      }),
      { numRuns: 2000 },
    );
  });

  it('scales a row by a power of two so huge and tiny rows keep their direction', () => {
    for (const scale of [1e30, 1e-30, 1]) {
      const src = Float32Array.from([3, -4, 0, 0.5].map((x) => x * scale));
      const out = new Uint16Array(4);
      writeHalfRow(out, 0, src, 0, 4);
      const back = Array.from(out, fromHalfBits);
      expect(back.every(Number.isFinite)).toBe(true);
      const ratio = back[1] / back[0];
      expect(ratio).toBeCloseTo(-4 / 3, 3);
    }
  });
});
