import { describe, expect, it } from 'vitest';
import { barChart, escapeXml, formatNumber, lineChart, linearTicks, logTicks, markdownTable } from '../report/svg.js';

/** Minimal well-formedness check: every tag closes in order and no raw '<' or '&' leaks into text. */
function assertWellFormed(svg: string): void {
  expect(svg.startsWith('<svg xmlns="http://www.w3.org/2000/svg"')).toBe(true);
  const stack: string[] = [];
  const tag = /<(\/?)([a-zA-Z]+)((?:\s+[a-zA-Z0-9:-]+="[^"<]*")*)\s*(\/?)>/g;
  let last = 0;
  for (let m = tag.exec(svg); m; m = tag.exec(svg)) {
    const between = svg.slice(last, m.index);
    expect(between).not.toMatch(/[<>]|&(?!(amp|lt|gt|quot|#39);)/);
    last = tag.lastIndex;
    const [, close, name, , self] = m;
    if (self) continue;
    if (close) expect(stack.pop()).toBe(name);
    else stack.push(name as string);
  }
  expect(svg.slice(last).trim()).toBe('');
  expect(stack).toEqual([]);
}

const texts = (svg: string) => [...svg.matchAll(/<text[^>]*>([^<]*)<\/text>/g)].map((m) => m[1]);

describe('ticks', () => {
  it('linear ticks land on 1/2/5 steps and cover the data', () => {
    const { ticks, domain } = linearTicks(0.3, 9.2);
    expect(ticks).toEqual([0, 2, 4, 6, 8, 10]);
    expect(domain).toEqual([0, 10]);
    expect(linearTicks(0, 0.07).ticks).toEqual([0, 0.02, 0.04, 0.06, 0.08]);
    expect(linearTicks(-3, 3).ticks).toEqual([-4, -2, 0, 2, 4]);
  });
  it('log ticks are decades, with 2 and 5 when the range is short', () => {
    // long ranges hug the data and tick the decades inside it
    const wide = logTicks(64, 16384);
    expect(wide.ticks).toEqual([100, 1000, 10000]);
    expect(wide.domain[0]).toBeLessThan(64);
    expect(wide.domain[0]).toBeGreaterThan(10);
    expect(wide.domain[1]).toBeGreaterThan(16384);
    expect(wide.domain[1]).toBeLessThan(100000);
    expect(logTicks(3, 40).ticks).toEqual([1, 2, 5, 10, 20, 50, 100]);
    expect(logTicks(0.002, 0.004).domain).toEqual([0.001, 0.01]);
  });
  it('formats numbers compactly', () => {
    expect(formatNumber(16384)).toBe('16384');
    expect(formatNumber(0.12345)).toBe('0.123');
    expect(formatNumber(2.5e-5)).toBe('2.5e-5');
    expect(formatNumber(1e7)).toBe('1e7');
    expect(formatNumber(7370.46)).toBe('7370');
  });
});

describe('lineChart', () => {
  const series = [
    { name: 'cpu <ref> & co', points: [[64, 0.5], [1024, 8], [16384, 130]] as Array<[number, number]>, band: [[64, 0.4, 0.6], [1024, 7, 9], [16384, 120, 140]] as Array<[number, number, number]> },
    { name: 'gpu', points: [[64, 2], [1024, 3], [16384, 20]] as Array<[number, number]> },
  ];
  it('renders valid SVG with escaped text, legend and log-axis decade labels', () => {
    const svg = lineChart({ title: 'Time "vs" trees', xLabel: 'trees', yLabel: 'ms', logX: true, logY: true, series });
    assertWellFormed(svg);
    expect(svg).toContain('cpu &lt;ref&gt; &amp; co');
    expect(svg).toContain('Time &quot;vs&quot; trees');
    const labels = texts(svg);
    for (const t of ['100', '1000', '10000', '1', '10']) expect(labels).toContain(t);
    expect(labels).toContain('gpu');
  });
  it('places log-spaced points evenly: equal ratios give equal pixel steps', () => {
    const svg = lineChart({ title: 't', xLabel: 'x', yLabel: 'y', logX: true, logY: true, series: [{ name: 's', points: [[10, 10], [100, 100], [1000, 1000]] }] });
    const d = /class="line" d="M([^"]+)"/.exec(svg)?.[1] as string;
    const pts = d.split('L').map((p) => p.split(' ').map(Number));
    expect(pts).toHaveLength(3);
    const [a, b, c] = pts as [number[], number[], number[]];
    expect((b[0] as number) - (a[0] as number)).toBeCloseTo((c[0] as number) - (b[0] as number), 1);
    expect((b[1] as number) - (a[1] as number)).toBeCloseTo((c[1] as number) - (b[1] as number), 1);
    expect(b[1] as number).toBeLessThan(a[1] as number); // larger y is higher on screen
  });
  it('draws a closed band polygon that encloses the line', () => {
    const svg = lineChart({ title: 't', xLabel: 'x', yLabel: 'y', logX: true, logY: true, series });
    const bands = [...svg.matchAll(/class="band" d="M([^"]+)Z"/g)];
    expect(bands).toHaveLength(1);
    const pts = (bands[0]?.[1] as string).split('L').map((p) => p.split(' ').map(Number));
    expect(pts).toHaveLength(6);
    const ys = pts.map((p) => p[1] as number);
    // upper edge (hi) is above the lower edge (lo) at the same x
    expect(ys[0]).toBeLessThan(ys[5] as number);
    expect(ys[2]).toBeLessThan(ys[3] as number);
  });
  it('rejects values a log axis cannot show, naming the series and point', () => {
    expect(() => lineChart({ title: 't', xLabel: 'x', yLabel: 'y', logY: true, series: [{ name: 'zeroes', points: [[1, 1], [2, 0]] }] })).toThrow(/series "zeroes" point 1 y/);
    expect(() => lineChart({ title: 't', xLabel: 'x', yLabel: 'y', series: [{ name: 'nan', points: [[1, Number.NaN]] }] })).toThrow(/finite/);
  });
  it('is deterministic and handles an empty chart', () => {
    const o = { title: 't', xLabel: 'x', yLabel: 'y', logX: true, series };
    expect(lineChart(o)).toBe(lineChart(o));
    assertWellFormed(lineChart({ title: 'empty', xLabel: 'x', yLabel: 'y', series: [] }));
  });
});

describe('barChart', () => {
  it('renders one bar per group and category with error whiskers', () => {
    const svg = barChart({
      title: 'Speed-up',
      yLabel: '× over CPU',
      categories: ['W1', 'dim 0', 'dim 1024'],
      groups: [
        { name: 'gpu', values: [3, 0.5, 12], errors: [[2.5, 3.5], [0.4, 0.6], [10, 14]] },
        { name: 'tfjs', values: [1.2, 0.8, 2] },
      ],
    });
    assertWellFormed(svg);
    expect(svg.match(/class="bar"/g)).toHaveLength(6);
    expect(svg.match(/class="error"/g)).toHaveLength(3);
    expect(texts(svg)).toContain('dim 1024');
  });
  it('grows log-axis bars from the bottom of the axis', () => {
    const svg = barChart({ title: 't', yLabel: 'y', logY: true, categories: ['a', 'b'], groups: [{ name: 'g', values: [0.1, 100] }] });
    assertWellFormed(svg);
    const bars = [...svg.matchAll(/class="bar" x="[^"]+" y="([^"]+)" width="[^"]+" height="([^"]+)"/g)].map((m) => Number(m[1]) + Number(m[2]));
    expect(bars[0]).toBeCloseTo(bars[1] as number, 2);
  });
  it('rejects a group whose values do not match the categories', () => {
    expect(() => barChart({ title: 't', yLabel: 'y', categories: ['a', 'b'], groups: [{ name: 'short', values: [1] }] })).toThrow(/group "short" has 1 values for 2 categories/);
  });
});

describe('markdownTable', () => {
  it('right-aligns numeric columns, formats numbers and escapes pipes', () => {
    const md = markdownTable(['path', 'ms', 'ratio'], [['cpu | ref', 12.3456, 1], ['gpu', 3.2, 0.259]]);
    expect(md).toBe('| path | ms | ratio |\n| --- | ---: | ---: |\n| cpu \\| ref | 12.3 | 1 |\n| gpu | 3.2 | 0.259 |\n');
  });
  it('keeps a numeric column right-aligned when some cells are the "—" placeholder', () => {
    expect(markdownTable(['a', 'b'], [['x', 1], ['y', '—']])).toContain('| --- | ---: |');
    expect(markdownTable(['a'], [['—']])).toContain('| --- |');
  });
  it('rejects ragged rows', () => {
    expect(() => markdownTable(['a', 'b'], [['x']])).toThrow(/row 0 has 1 cells for 2 columns/);
  });
  it('escapes XML specials', () => {
    expect(escapeXml(`a<b>&"c'`)).toBe('a&lt;b&gt;&amp;&quot;c&#39;');
  });
});

describe('barChart missing values', () => {
  it('draws no bar (and no whisker) for NaN values', () => {
    const svg = barChart({ title: 't', yLabel: 'y', logY: true, categories: ['a', 'b', 'c'], groups: [{ name: 'g', values: [1, Number.NaN, 3], errors: [[0.5, 2], [Number.NaN, Number.NaN], [2, 4]] }] });
    assertWellFormed(svg);
    expect(svg.match(/class="bar"/g)).toHaveLength(2);
    expect(svg.match(/class="error"/g)).toHaveLength(2);
    expect(() => barChart({ title: 't', yLabel: 'y', categories: ['a'], groups: [{ name: 'inf', values: [Number.POSITIVE_INFINITY] }] })).toThrow(/finite/);
  });
});
