/**
 * The viz without a browser: which trees a page embeds and in what order, the columns it shows,
 * that the page carries everything it needs (and nothing that reaches the network), the static
 * SVG, and `trace-alloc viz` flag handling. The browser behaviour is in viz.browser.test.ts.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { allocate } from '../src/allocate/allocate.js';
import { runViz } from '../src/cli/viz.js';
import { packForest } from '../src/forest/packed.js';
import { scoreCpu } from '../src/score/cpu.js';
import { generateForest } from '../src/synth/generate.js';
import { d3HierarchySource } from '../src/viz/d3source.js';
import { formatNumber } from '../src/viz/format.js';
import { renderTreeView, jsonForScript } from '../src/viz/html.js';
import { layoutTree } from '../src/viz/layout.js';
import { extractTree, meanIntensity, rankTreesByContest, selectTrees } from '../src/viz/model.js';
import { colorAt, metricDomain, PALETTE } from '../src/viz/palette.js';
import { renderTreeSvg } from '../src/viz/svg.js';
import { writeTreeView } from '../src/viz/write.js';

const dir = mkdtempSync(join(tmpdir(), 'trace-alloc-viz-unit-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const forest = generateForest({ trees: 120, dim: 8, seed: 3, minNodes: 10, maxNodes: 80 });
const scores = scoreCpu(forest);
const allocation = allocate(forest, scores, { budget: 16 });

/** The page's embedded data, parsed back. */
function pageData(html: string): { trees: Array<{ index: number; id: string; cols: Record<string, number[]> }>; initial: number; note: string } {
  const m = /<script type="application\/json" id="trace-alloc-data">([\s\S]*?)<\/script>/.exec(html);
  expect(m).not.toBeNull();
  return JSON.parse(m![1]);
}

describe('tree selection', () => {
  it('ranks trees by mean fork intensity, most contested first, ties to the smaller index', () => {
    const ranked = rankTreesByContest(forest, scores);
    expect([...ranked].sort((a, b) => a - b)).toEqual(Array.from({ length: forest.treeCount }, (_, t) => t));
    for (let i = 1; i < ranked.length; i++) {
      const a = meanIntensity(forest, scores, ranked[i - 1]), b = meanIntensity(forest, scores, ranked[i]);
      expect(a > b || (a === b && ranked[i - 1] < ranked[i])).toBe(true);
    }
  });

  it('mean intensity counts only forks with two or more children', () => {
    // Root with one child (k = 1, intensity 0 by definition) which forks into two different children.
    const f = packForest({ dim: 0, trees: [{ nodes: [{}, { parent: 0 }, { parent: 1, visits: 1, reward: 0 }, { parent: 1, visits: 1, reward: 1 }] }] });
    const s = scoreCpu(f);
    const fork = f.childGroup[1];
    expect(s.intensity[fork]).toBeCloseTo(2 / 3, 5); // Δ = 1, d = 1/2 (no embeddings): c = 1 / 1.5
    expect(meanIntensity(f, s, 0)).toBe(s.intensity[fork]);
  });

  it('embeds at most maxTrees of the most contested trees, plus the requested one, and says so', () => {
    const ranked = rankTreesByContest(forest, scores);
    const top = selectTrees(forest, scores, { maxTrees: 10 });
    expect(top.trees).toEqual(ranked.slice(0, 10));
    expect(top.initialTree).toBe(ranked[0]);
    expect(top.note).toContain('10 of the forest\'s 120 trees');

    const withRequested = selectTrees(forest, scores, { maxTrees: 10, initialTree: ranked[100] });
    expect(withRequested.trees).toEqual([...ranked.slice(0, 10), ranked[100]]);
    expect(withRequested.initialTree).toBe(ranked[100]);
    expect(withRequested.note).toContain('plus the requested one');

    const inside = selectTrees(forest, scores, { maxTrees: 10, initialTree: ranked[3] });
    expect(inside.trees).toEqual(ranked.slice(0, 10));
    expect(inside.note).not.toContain('requested');
  });

  it('stops adding trees at the node budget but always keeps one', () => {
    const ranked = rankTreesByContest(forest, scores);
    const size = (t: number) => forest.treeOffset[t + 1] - forest.treeOffset[t];
    const limit = size(ranked[0]) + size(ranked[1]);
    expect(selectTrees(forest, scores, { maxNodes: limit }).trees).toEqual(ranked.slice(0, 2));
    expect(selectTrees(forest, scores, { maxNodes: 1 }).trees).toEqual([ranked[0]]);
  });

  it('takes an explicit list, and rejects trees that do not exist', () => {
    expect(selectTrees(forest, scores, { trees: [5, 7] }).trees.sort((a, b) => a - b)).toEqual([5, 7]);
    expect(() => selectTrees(forest, scores, { initialTree: 120 })).toThrow(/initialTree #120 is not in the forest \(it has 120 trees\)/);
    expect(() => selectTrees(forest, scores, { trees: [-1] })).toThrow(/tree #-1/);
    expect(() => selectTrees(forest, scores, { maxTrees: 0 })).toThrow(/maxTrees/);
  });
});

describe('tree columns', () => {
  it('are the forest, score and allocation values of the tree, with tree-local parents', () => {
    const t = 17;
    const c = extractTree(forest, scores, allocation, t);
    const lo = forest.treeOffset[t];
    expect(c.id).toBe(forest.treeIds[t]);
    expect(c.parent.length).toBe(forest.treeOffset[t + 1] - lo);
    for (let v = 0; v < c.parent.length; v++) {
      const row = lo + v;
      expect(c.parent[v]).toBe(v === 0 ? -1 : forest.parentRow[row] - lo);
      expect([c.reward[v], c.visits[v], c.uncertainty[v], c.contrast[v], c.weight[v], c.gradAlpha[v], c.gradTau[v]])
        .toEqual([forest.reward[row], forest.visits[row], forest.uncertainty[row], scores.contrast[row], scores.weight[row], scores.gradAlpha[row], scores.gradTau[row]]);
      expect([c.branches[v], c.depth[v], c.pruned[v], c.live[v]]).toEqual([allocation.branches[row], allocation.depth[row], allocation.pruned[row], allocation.live[row]]);
      const g = forest.childGroup[row];
      const k = g < 0 ? 0 : forest.groupOffset[g + 1] - forest.groupOffset[g];
      expect(c.intensity[v]).toBe(k >= 2 ? scores.intensity[g] : 0);
    }
    expect(c.budget).toBe(16);
  });

  it('refuse scores or allocations of another forest', () => {
    const other = generateForest({ trees: 3, dim: 8, seed: 4 });
    expect(() => extractTree(other, scores, allocation, 0)).toThrow(/scores do not match the forest/);
  });
});

describe('colours and numbers', () => {
  it('interpolates the palette end to end and clamps outside [0, 1]', () => {
    expect(colorAt(0)).toBe(PALETTE[0]);
    expect(colorAt(1)).toBe(PALETTE[PALETTE.length - 1]);
    expect(colorAt(-3)).toBe(PALETTE[0]);
    expect(colorAt(Number.NaN)).toBe(PALETTE[0]);
    expect(colorAt(1 / (PALETTE.length - 1))).toBe(PALETTE[1]);
  });

  it('gives each metric a usable domain (weights from 0, rewards over visited nodes only)', () => {
    const c = extractTree(forest, scores, allocation, 0);
    const [lo, hi] = metricDomain(c, 'weight');
    expect(lo).toBe(0);
    expect(hi).toBe(Math.max(...c.weight.slice(1)));
    const visited = c.reward.filter((_, v) => c.visits[v] > 0);
    expect(metricDomain(c, 'reward')).toEqual([Math.min(...visited), Math.max(...visited) > Math.min(...visited) ? Math.max(...visited) : Math.min(...visited) + 1]);
  });

  it('prints integers plainly, ordinary values with four decimals, tiny ones as exponents', () => {
    expect(formatNumber(3)).toBe('3');
    expect(formatNumber(0.5)).toBe('0.5000');
    expect(formatNumber(-0.01234)).toBe('-0.0123');
    expect(formatNumber(3.2e-7)).toBe('3.200e-7');
  });
});

describe('the page', () => {
  const { html, selection } = renderTreeView(forest, scores, allocation, { maxTrees: 12 });

  it('is self-contained: inline styles and scripts, d3-hierarchy inside, nothing fetched', () => {
    expect(html).not.toMatch(/<script[^>]+src=/i);
    expect(html).not.toMatch(/<link[^>]+href=/i);
    expect(html).not.toMatch(/@import|url\(\s*['"]?https?:/i);
    expect(html).toContain("default-src 'none'");
    expect(html).toContain('d3js.org/d3-hierarchy'); // the bundled library's own banner
    expect(html).toContain(`<script>${d3HierarchySource()}</script>`);
  });

  it('embeds the selected trees with every column the tooltip shows', () => {
    const data = pageData(html);
    expect(data.trees.map((t) => t.index)).toEqual(selection.trees);
    expect(data.initial).toBe(0);
    expect(data.note).toBe(selection.note);
    const first = data.trees[0];
    const c = extractTree(forest, scores, allocation, first.index);
    for (const name of ['reward', 'visits', 'uncertainty', 'contrast', 'weight', 'gradAlpha', 'gradTau', 'branches', 'depth', 'pruned', 'parent'] as const) {
      expect(first.cols[name]).toHaveLength(c.parent.length);
      first.cols[name].forEach((x, v) => expect(Math.abs(x - c[name][v])).toBeLessThanOrEqual(1e-7 * Math.max(1, Math.abs(c[name][v]))));
    }
  });

  it('escapes tree ids that would end the script element or break the markup', () => {
    const evil = packForest({ dim: 0, trees: [{ id: '</script><img src=x onerror=alert(1)>', nodes: [{}, { parent: 0 }, { parent: 0, visits: 1, reward: 1 }] }] });
    const s = scoreCpu(evil);
    const page = renderTreeView(evil, s, allocate(evil, s)).html;
    expect(page).not.toContain('</script><img');
    expect(pageData(page).trees[0].id).toBe('</script><img src=x onerror=alert(1)>');
    expect(jsonForScript({ a: '\u2028</x>' })).toBe('{"a":"\\u2028\\u003c/x>"}');
  });

  it('stays small for a batch of 4096 trees (bounded set)', () => {
    const big = generateForest({ trees: 4096, dim: 4, seed: 9, minNodes: 20, maxNodes: 200 });
    const s = scoreCpu(big);
    const written = writeTreeView(big, s, allocate(big, s), { outFile: join(dir, 'big.html') });
    expect(written.selection.trees).toHaveLength(50);
    expect(written.bytes).toBeLessThan(3 * 1024 * 1024);
    expect(readFileSync(written.path, 'utf8')).toContain('50 of the forest\'s 4096 trees');
  });
});

describe('static SVG', () => {
  it('draws one shape per node, one link per edge, a badge per node that starts rollouts', () => {
    const t = rankTreesByContest(forest, scores)[0];
    const c = extractTree(forest, scores, allocation, t);
    const svg = renderTreeSvg(forest, scores, allocation, t);
    const section = (name: string) => new RegExp(`<g class="${name}"[^>]*>([\\s\\S]*?)</g>`).exec(svg)![1];
    const nodeShapes = (section('nodes').match(/<(circle|rect) /g) ?? []).length;
    expect(nodeShapes).toBe(c.parent.length);
    expect((section('links').match(/<path d="M/g) ?? []).length).toBe(c.parent.length - 1);
    expect((section('labels').match(/>\+\d+ · d\d+</g) ?? []).length).toBe(c.branches.filter((b) => b > 0).length);
    expect(svg).toContain(`tree ${c.id} (#${t})`);
    expect(svg).not.toMatch(/<script|<style/);
    expect(svg.startsWith('<svg xmlns="http://www.w3.org/2000/svg"')).toBe(true);
  });

  it('lays trees out tidily: parents above children, siblings in order and apart', () => {
    const c = extractTree(forest, scores, allocation, 3);
    const geo = layoutTree(c.parent);
    for (let v = 1; v < c.parent.length; v++) expect(geo.y[v]).toBeGreaterThan(geo.y[c.parent[v]]);
    for (let v = 2; v < c.parent.length; v++) {
      if (c.parent[v] === c.parent[v - 1]) expect(geo.x[v] - geo.x[v - 1]).toBeGreaterThanOrEqual(16 - 1e-9);
    }
  });
});

describe('trace-alloc viz', () => {
  const file = join(dir, 'forest.json');
  writeFileSync(file, JSON.stringify({
    dim: 2,
    trees: [
      { id: 'calm', nodes: [{ embedding: [1, 0] }, { parent: 0, embedding: [1, 0.1], visits: 2, reward: 0.5 }, { parent: 0, embedding: [1, -0.1], visits: 2, reward: 0.5 }] },
      { id: 'torn', nodes: [{ embedding: [1, 0] }, { parent: 0, embedding: [1, 0.01], visits: 4, reward: 0 }, { parent: 0, embedding: [1, -0.01], visits: 4, reward: 1 }] },
    ],
  }));

  async function run(argv: string[]): Promise<{ code: number; out: string }> {
    let out = '';
    const spy = vi.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => { out += String(chunk); return true; });
    try {
      return { code: await runViz(argv), out };
    } finally {
      spy.mockRestore();
    }
  }

  it('writes the page with the most contested tree first and prints where', async () => {
    const outFile = join(dir, 'view.html');
    const { code, out } = await run([file, '--out', outFile, '--budget', '8', '--backend', 'cpu']);
    expect(code).toBe(0);
    expect(out).toContain(outFile);
    expect(out).toContain('showing "torn" (#1) first');
    const data = pageData(readFileSync(outFile, 'utf8'));
    expect(data.trees.map((t) => t.id)).toEqual(['torn', 'calm']);
  });

  it('--tree shows that tree first; --svg writes a static SVG of it', async () => {
    const outFile = join(dir, 'calm.html');
    await run([file, '--tree', 'calm', '--out', outFile, '--max-trees', '1', '--backend', 'cpu']);
    const data = pageData(readFileSync(outFile, 'utf8'));
    expect(data.trees.map((t) => t.id)).toEqual(['torn', 'calm']);
    expect(data.trees[data.initial].id).toBe('calm');

    const svgFile = join(dir, 'calm.svg');
    const { out } = await run([file, '--tree', 'calm', '--svg', '--metric', 'reward', '--out', svgFile, '--backend', 'cpu']);
    expect(out).toContain('tree "calm" (#0), 3 nodes');
    expect(readFileSync(svgFile, 'utf8')).toContain('tree calm (#0) · reward r');
  });

  it('names what is wrong with the arguments', async () => {
    await expect(run([file])).rejects.toThrow(/needs --out FILE/);
    await expect(run([file, '--out', join(dir, 'x.html'), '--tree', 'nope'])).rejects.toThrow(/--tree "nope" is not a tree id of this forest \(ids: "calm", "torn"\)/);
    await expect(run([file, '--out', join(dir, 'x.html'), '--metric', 'depth'])).rejects.toThrow(/--metric must be one of weight, contrast, reward, uncertainty/);
    await expect(run([file, '--out', join(dir, 'x.html'), '--max-trees', '0'])).rejects.toThrow(/--max-trees must be an integer >= 1/);
    await expect(run(['--out', join(dir, 'x.html')])).rejects.toThrow(/exactly one FILE/);
  });
});
