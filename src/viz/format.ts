/**
 * How the view prints a number: integers as they are, ordinary magnitudes with four decimals,
 * tiny and huge ones in exponent form so a gradient of 3e-7 does not read as 0. The page's
 * script prints with the same rule (the browser test checks they agree).
 */
export function formatNumber(x: number): string {
  if (Number.isInteger(x)) return String(x);
  const a = Math.abs(x);
  if (a >= 1e-3 && a < 1e4) return x.toFixed(4);
  return x.toExponential(3);
}

/** Short form for labels drawn inside the tree: two decimals. */
export function formatShort(x: number): string {
  return x.toFixed(2);
}

export function escapeXml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}
