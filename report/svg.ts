// Tiny dependency-free SVG charts and Markdown tables for committed reports.
// Output is deterministic (same input, same bytes) so regenerated charts diff cleanly.

export interface Series {
  name: string;
  points: Array<[number, number]>;
  /** Shaded spread around the line: [x, lo, hi]. */
  band?: Array<[number, number, number]>;
}

export interface LineChartOptions {
  title: string;
  xLabel: string;
  yLabel: string;
  logX?: boolean;
  logY?: boolean;
  width?: number;
  height?: number;
  series: Series[];
}

export interface BarGroup {
  name: string;
  /** One value per category; NaN marks a category this group has no value for (no bar is drawn). */
  values: number[];
  /** Error bars as absolute [lo, hi], one per category. */
  errors?: Array<[number, number]>;
}

export interface BarChartOptions {
  title: string;
  yLabel: string;
  logY?: boolean;
  categories: string[];
  groups: BarGroup[];
  width?: number;
  height?: number;
}

/**
 * Okabe–Ito colour-blind-safe palette without its yellow, which is too faint on white; past
 * seven series the colours repeat with a dash pattern (and markers differ throughout).
 */
export const PALETTE = ['#0072B2', '#D55E00', '#009E73', '#CC79A7', '#E69F00', '#56B4E9', '#000000'];
const DASHES = ['', '6 3', '2 2', '8 3 2 3'];
const MARKERS = ['circle', 'square', 'triangle', 'diamond'] as const;

const FONT = 'font-family="system-ui, -apple-system, Segoe UI, Helvetica, Arial, sans-serif"';
const CHAR_W = 6.6; // approximate advance of a 12px sans-serif glyph, for layout only

export function escapeXml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c] as string);
}

/** Compact, human-readable number: 3 significant digits (whole numbers from 1000 up), plain notation in [1e-3, 1e6). */
export function formatNumber(v: number): string {
  if (!Number.isFinite(v)) return String(v);
  if (v === 0) return '0';
  const a = Math.abs(v);
  if (a >= 1e6 || a < 1e-3) {
    const [m, e] = v.toExponential(2).split('e');
    return `${trimZeros(m as string)}e${Number(e)}`;
  }
  if (Number.isInteger(v)) return String(v);
  if (a >= 1000) return String(Math.round(v));
  return trimZeros(v.toPrecision(3));
}

function trimZeros(s: string): string {
  return s.includes('.') ? s.replace(/\.?0+$/, '') : s;
}

// ---------------------------------------------------------------- scales and ticks

interface Scale {
  (v: number): number;
  ticks: number[];
  domain: [number, number];
}

/** Linear ticks on 1/2/5 × 10^k steps; the domain is widened to whole steps. */
export function linearTicks(lo: number, hi: number, target = 5): { ticks: number[]; domain: [number, number] } {
  if (lo === hi) {
    const pad = lo === 0 ? 1 : Math.abs(lo) * 0.1;
    lo -= pad;
    hi += pad;
  }
  const raw = (hi - lo) / target;
  const mag = 10 ** Math.floor(Math.log10(raw));
  const step = ([1, 2, 5, 10].find((m) => m * mag >= raw) as number) * mag;
  const d0 = Math.floor(lo / step) * step;
  const d1 = Math.ceil(hi / step) * step;
  const ticks: number[] = [];
  const decimals = Math.max(0, -Math.floor(Math.log10(step)));
  for (let i = 0; d0 + i * step <= d1 + step * 1e-9; i++) {
    ticks.push(Number((d0 + i * step).toFixed(decimals)));
  }
  return { ticks, domain: [d0, d1] };
}

/**
 * Log ticks. Short ranges (two decades or fewer) span whole decades with 2 and 5 in between;
 * longer ranges hug the data (a little padding) and tick the decades inside, so a 64…16384
 * axis does not waste half its width on 10…64 and 16384…100000.
 */
export function logTicks(lo: number, hi: number): { ticks: number[]; domain: [number, number] } {
  const e0 = Math.floor(Math.log10(lo) + 1e-9);
  let e1 = Math.ceil(Math.log10(hi) - 1e-9);
  if (e0 === e1) e1 += 1;
  const decade = (e: number) => Number((10 ** e).toPrecision(12));
  const ticks: number[] = [];
  if (e1 - e0 <= 2) {
    for (let e = e0; e <= e1; e++) {
      ticks.push(decade(e));
      if (e < e1) ticks.push(Number((2 * 10 ** e).toPrecision(12)), Number((5 * 10 ** e).toPrecision(12)));
    }
    return { ticks, domain: [decade(e0), decade(e1)] };
  }
  const pad = 10 ** ((Math.log10(hi) - Math.log10(lo)) * 0.04);
  const domain: [number, number] = [lo / pad, hi * pad];
  const first = Math.ceil(Math.log10(domain[0]) - 1e-9);
  const last = Math.floor(Math.log10(domain[1]) + 1e-9);
  const stride = Math.max(1, Math.ceil((last - first) / 8));
  for (let e = first; e <= last; e += stride) ticks.push(decade(e));
  return { ticks, domain };
}

function makeScale(values: number[], log: boolean, r0: number, r1: number, includeZero: boolean): Scale {
  let lo = Math.min(...values);
  let hi = Math.max(...values);
  if (values.length === 0) {
    lo = log ? 1 : 0;
    hi = log ? 10 : 1;
  }
  if (!log && includeZero) {
    lo = Math.min(lo, 0);
    hi = Math.max(hi, 0);
  }
  const { ticks, domain } = log ? logTicks(lo, hi) : linearTicks(lo, hi);
  const f = log ? Math.log10 : (v: number) => v;
  const a = f(domain[0]);
  const b = f(domain[1]);
  const scale = ((v: number) => r0 + ((f(v) - a) / (b - a)) * (r1 - r0)) as Scale;
  scale.ticks = ticks;
  scale.domain = domain;
  return scale;
}

function checkValue(v: number, log: boolean, what: () => string): void {
  if (!Number.isFinite(v)) throw new Error(`${what()} is ${v}; charts need finite numbers`);
  if (log && v <= 0) throw new Error(`${what()} is ${v}; a log axis cannot show values <= 0`);
}

// ---------------------------------------------------------------- shared pieces

const r = (v: number) => Number(v.toFixed(2));

function header(w: number, h: number, title: string): string[] {
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${w}" height="${h}" viewBox="0 0 ${w} ${h}" role="img" aria-label="${escapeXml(title)}">`,
    `<title>${escapeXml(title)}</title>`,
    `<rect width="${w}" height="${h}" fill="#ffffff"/>`,
    `<text x="${r(w / 2)}" y="22" text-anchor="middle" font-size="15" font-weight="600" ${FONT} fill="#222">${escapeXml(title)}</text>`,
  ];
}

interface Box {
  left: number;
  right: number;
  top: number;
  bottom: number;
}

function yAxis(out: string[], y: Scale, box: Box, label: string): void {
  for (const t of y.ticks) {
    const py = r(y(t));
    out.push(`<line x1="${box.left}" x2="${box.right}" y1="${py}" y2="${py}" stroke="#e3e3e3" stroke-width="1"/>`);
    out.push(`<text x="${box.left - 6}" y="${py}" dy="0.32em" text-anchor="end" font-size="11" ${FONT} fill="#444">${escapeXml(formatNumber(t))}</text>`);
  }
  const cy = r((box.top + box.bottom) / 2);
  out.push(`<text transform="translate(16 ${cy}) rotate(-90)" text-anchor="middle" font-size="12" ${FONT} fill="#222">${escapeXml(label)}</text>`);
  out.push(`<line x1="${box.left}" x2="${box.left}" y1="${box.top}" y2="${box.bottom}" stroke="#444" stroke-width="1"/>`);
  out.push(`<line x1="${box.left}" x2="${box.right}" y1="${box.bottom}" y2="${box.bottom}" stroke="#444" stroke-width="1"/>`);
}

function legend(out: string[], names: string[], x: number, y: number, swatch: (i: number, sx: number, sy: number) => string): void {
  names.forEach((name, i) => {
    const sy = y + i * 18;
    out.push(swatch(i, x, sy));
    out.push(`<text x="${x + 28}" y="${sy}" dy="0.32em" font-size="12" ${FONT} fill="#222">${escapeXml(name)}</text>`);
  });
}

function legendWidth(names: string[]): number {
  return names.length === 0 ? 0 : 40 + Math.max(...names.map((n) => n.length)) * CHAR_W;
}

function marker(kind: (typeof MARKERS)[number], x: number, y: number, colour: string): string {
  const s = 3.5;
  switch (kind) {
    case 'circle':
      return `<circle cx="${r(x)}" cy="${r(y)}" r="${s}" fill="${colour}"/>`;
    case 'square':
      return `<rect x="${r(x - s)}" y="${r(y - s)}" width="${2 * s}" height="${2 * s}" fill="${colour}"/>`;
    case 'triangle':
      return `<path d="M${r(x)} ${r(y - s - 1)}L${r(x + s + 0.5)} ${r(y + s)}L${r(x - s - 0.5)} ${r(y + s)}Z" fill="${colour}"/>`;
    case 'diamond':
      return `<path d="M${r(x)} ${r(y - s - 1)}L${r(x + s + 1)} ${r(y)}L${r(x)} ${r(y + s + 1)}L${r(x - s - 1)} ${r(y)}Z" fill="${colour}"/>`;
  }
}

// ---------------------------------------------------------------- line chart

/** Lines with markers (and optional spread bands) on linear or log axes; returns SVG text. */
export function lineChart(o: LineChartOptions): string {
  const logX = o.logX ?? false;
  const logY = o.logY ?? false;
  const xs: number[] = [];
  const ys: number[] = [];
  for (const s of o.series) {
    s.points.forEach(([x, y], i) => {
      checkValue(x, logX, () => `lineChart "${o.title}": series "${s.name}" point ${i} x`);
      checkValue(y, logY, () => `lineChart "${o.title}": series "${s.name}" point ${i} y`);
      xs.push(x);
      ys.push(y);
    });
    s.band?.forEach(([x, lo, hi], i) => {
      checkValue(x, logX, () => `lineChart "${o.title}": series "${s.name}" band ${i} x`);
      checkValue(lo, logY, () => `lineChart "${o.title}": series "${s.name}" band ${i} lo`);
      checkValue(hi, logY, () => `lineChart "${o.title}": series "${s.name}" band ${i} hi`);
      xs.push(x);
      ys.push(lo, hi);
    });
  }
  const names = o.series.map((s) => s.name);
  const w = o.width ?? 720;
  const h = o.height ?? 420;
  const box: Box = { left: 64, right: w - 16 - legendWidth(names), top: 40, bottom: h - 48 };
  const x = makeScale(xs, logX, box.left, box.right, false);
  const y = makeScale(ys, logY, box.bottom, box.top, !logY);

  const out = header(w, h, o.title);
  yAxis(out, y, box, o.yLabel);
  for (const t of x.ticks) {
    const px = r(x(t));
    out.push(`<line x1="${px}" x2="${px}" y1="${box.top}" y2="${box.bottom}" stroke="#f0f0f0" stroke-width="1"/>`);
    out.push(`<line x1="${px}" x2="${px}" y1="${box.bottom}" y2="${box.bottom + 4}" stroke="#444"/>`);
    out.push(`<text x="${px}" y="${box.bottom + 16}" text-anchor="middle" font-size="11" ${FONT} fill="#444">${escapeXml(formatNumber(t))}</text>`);
  }
  out.push(`<text x="${r((box.left + box.right) / 2)}" y="${h - 10}" text-anchor="middle" font-size="12" ${FONT} fill="#222">${escapeXml(o.xLabel)}</text>`);

  const style = (i: number) => ({ colour: PALETTE[i % PALETTE.length] as string, dash: DASHES[Math.floor(i / PALETTE.length) % DASHES.length] as string, mark: MARKERS[i % MARKERS.length] as (typeof MARKERS)[number] });
  o.series.forEach((s, i) => {
    const { colour } = style(i);
    if (s.band && s.band.length > 0) {
      const band = [...s.band].sort((a, b) => a[0] - b[0]);
      const upper = band.map(([bx, , hi]) => `${r(x(bx))} ${r(y(hi))}`);
      const lower = band.map(([bx, lo]) => `${r(x(bx))} ${r(y(lo))}`).reverse();
      out.push(`<path class="band" d="M${[...upper, ...lower].join('L')}Z" fill="${colour}" fill-opacity="0.18" stroke="none"/>`);
    }
  });
  o.series.forEach((s, i) => {
    const { colour, dash, mark } = style(i);
    const pts = [...s.points].sort((a, b) => a[0] - b[0]);
    if (pts.length > 1) {
      const d = pts.map(([px, py]) => `${r(x(px))} ${r(y(py))}`).join('L');
      out.push(`<path class="line" d="M${d}" fill="none" stroke="${colour}" stroke-width="2"${dash ? ` stroke-dasharray="${dash}"` : ''}/>`);
    }
    for (const [px, py] of pts) out.push(marker(mark, x(px), y(py), colour));
  });
  legend(out, names, box.right + 16, box.top + 8, (i, sx, sy) => {
    const { colour, dash, mark } = style(i);
    return `<line x1="${sx}" x2="${sx + 22}" y1="${sy}" y2="${sy}" stroke="${colour}" stroke-width="2"${dash ? ` stroke-dasharray="${dash}"` : ''}/>${marker(mark, sx + 11, sy, colour)}`;
  });
  out.push('</svg>');
  return out.join('\n') + '\n';
}

// ---------------------------------------------------------------- bar chart

/** Grouped bars: one cluster per category, one bar per group, optional error whiskers. */
export function barChart(o: BarChartOptions): string {
  const logY = o.logY ?? false;
  const ys: number[] = [];
  for (const g of o.groups) {
    if (g.values.length !== o.categories.length) {
      throw new Error(`barChart "${o.title}": group "${g.name}" has ${g.values.length} values for ${o.categories.length} categories`);
    }
    if (g.errors && g.errors.length !== o.categories.length) {
      throw new Error(`barChart "${o.title}": group "${g.name}" has ${g.errors.length} error bars for ${o.categories.length} categories`);
    }
    g.values.forEach((v, i) => {
      if (Number.isNaN(v)) return;
      checkValue(v, logY, () => `barChart "${o.title}": group "${g.name}" value for "${o.categories[i]}"`);
      ys.push(v);
    });
    g.errors?.forEach(([lo, hi], i) => {
      if (Number.isNaN(g.values[i] as number)) return;
      checkValue(lo, logY, () => `barChart "${o.title}": group "${g.name}" error lo for "${o.categories[i]}"`);
      checkValue(hi, logY, () => `barChart "${o.title}": group "${g.name}" error hi for "${o.categories[i]}"`);
      ys.push(lo, hi);
    });
  }
  const names = o.groups.map((g) => g.name);
  const w = o.width ?? 720;
  const h = o.height ?? 420;
  const longest = Math.max(0, ...o.categories.map((c) => c.length));
  const slant = o.categories.length * longest * CHAR_W > w * 0.6;
  const box: Box = { left: 64, right: w - 16 - legendWidth(names), top: 40, bottom: h - (slant ? 40 + longest * CHAR_W * 0.7 : 48) };
  const y = makeScale(ys, logY, box.bottom, box.top, !logY);
  const out = header(w, h, o.title);
  yAxis(out, y, box, o.yLabel);

  const n = Math.max(1, o.categories.length);
  const slot = (box.right - box.left) / n;
  const barW = (slot * 0.8) / Math.max(1, o.groups.length);
  // Bars grow from zero on linear axes and from the bottom of the domain on log axes.
  const base = logY ? box.bottom : y(0);
  o.categories.forEach((c, ci) => {
    const cx = box.left + slot * (ci + 0.5);
    const lx = r(cx);
    if (slant) {
      out.push(`<text transform="translate(${lx} ${box.bottom + 12}) rotate(-35)" text-anchor="end" font-size="11" ${FONT} fill="#444">${escapeXml(c)}</text>`);
    } else {
      out.push(`<text x="${lx}" y="${box.bottom + 16}" text-anchor="middle" font-size="11" ${FONT} fill="#444">${escapeXml(c)}</text>`);
    }
    o.groups.forEach((g, gi) => {
      const colour = PALETTE[gi % PALETTE.length] as string;
      if (Number.isNaN(g.values[ci] as number)) return;
      const x0 = box.left + slot * ci + slot * 0.1 + barW * gi;
      const top = y(g.values[ci] as number);
      const y0 = Math.min(top, base);
      out.push(`<rect class="bar" x="${r(x0)}" y="${r(y0)}" width="${r(barW * 0.92)}" height="${r(Math.abs(base - top))}" fill="${colour}"><title>${escapeXml(`${g.name} · ${c}: ${formatNumber(g.values[ci] as number)}`)}</title></rect>`);
      const e = g.errors?.[ci];
      if (e) {
        const mx = r(x0 + barW * 0.46);
        const [ylo, yhi] = [r(y(e[0])), r(y(e[1]))];
        out.push(`<path class="error" d="M${mx} ${ylo}V${yhi}M${r(mx - 3)} ${ylo}H${r(mx + 3)}M${r(mx - 3)} ${yhi}H${r(mx + 3)}" stroke="#222" stroke-width="1.2" fill="none"/>`);
      }
    });
  });
  legend(out, names, box.right + 16, box.top + 8, (i, sx, sy) => `<rect x="${sx}" y="${sy - 6}" width="22" height="12" fill="${PALETTE[i % PALETTE.length]}"/>`);
  out.push('</svg>');
  return out.join('\n') + '\n';
}

// ---------------------------------------------------------------- markdown

/**
 * GitHub-flavoured Markdown table. Numbers are formatted compactly; a column whose cells are all
 * numbers (or the placeholder "—") is right-aligned.
 */
export function markdownTable(header: string[], rows: Array<Array<string | number>>): string {
  rows.forEach((row, i) => {
    if (row.length !== header.length) throw new Error(`markdownTable: row ${i} has ${row.length} cells for ${header.length} columns`);
  });
  const cell = (v: string | number) => (typeof v === 'number' ? formatNumber(v) : v.replace(/\|/g, '\\|').replace(/\r?\n/g, ' '));
  const numeric = header.map((_, c) => rows.some((row) => typeof row[c] === 'number') && rows.every((row) => typeof row[c] === 'number' || row[c] === '—'));
  const lines = [
    `| ${header.map(cell).join(' | ')} |`,
    `| ${numeric.map((n) => (n ? '---:' : '---')).join(' | ')} |`,
    ...rows.map((row) => `| ${row.map(cell).join(' | ')} |`),
  ];
  return lines.join('\n') + '\n';
}
