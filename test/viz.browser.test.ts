/**
 * The generated page in a real browser (headless Debian Chromium through playwright-core) with
 * every non-file request aborted: all nodes drawn inside the view, fills equal to the library's
 * colour scale, hover shows every number of the node, the picker switches trees, the colour
 * toggle recolours, pan and zoom move the drawing, and a screenshot is saved under tmp/viz/.
 *
 * Without /usr/bin/chromium the suite is skipped with a notice, unless
 * TRACE_ALLOC_REQUIRE_BROWSER=1 (CI), where that is a failure.
 * TRACE_ALLOC_UPDATE_SCREENSHOT=1 also renders the demo workload's most contested tree and
 * writes docs/img/demo-view.png.
 */
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { allocate, type Allocation } from '../src/allocate/allocate.js';
import type { PackedForest } from '../src/forest/packed.js';
import { scoreCpu } from '../src/score/cpu.js';
import type { Scores } from '../src/score/types.js';
import { generateForest } from '../src/synth/generate.js';
import { formatNumber } from '../src/viz/format.js';
import { greyedNodes } from '../src/viz/layout.js';
import { extractTree, rankTreesByContest, type TreeColumns } from '../src/viz/model.js';
import { metricDomain, nodeFill, type ColorMetric } from '../src/viz/palette.js';
import { writeTreeView } from '../src/viz/write.js';

const CHROMIUM = '/usr/bin/chromium';
const hasBrowser = existsSync(CHROMIUM);
const required = process.env.TRACE_ALLOC_REQUIRE_BROWSER === '1';
const SHOTS = resolve('tmp/viz');

if (!hasBrowser) {
  const line = `viz browser test: ${CHROMIUM} not found — ${required ? 'FAILING (TRACE_ALLOC_REQUIRE_BROWSER=1)' : 'SKIPPED (install Debian\'s chromium to run it)'}`;
  console.warn(`\n*** ${line} ***\n`);
}

describe.runIf(!hasBrowser && required)('viz in a browser (required)', () => {
  it('needs Chromium at /usr/bin/chromium', () => {
    throw new Error(`TRACE_ALLOC_REQUIRE_BROWSER=1 but ${CHROMIUM} does not exist`);
  });
});

interface Workload { forest: PackedForest; scores: Scores; allocation: Allocation }

function workload(shape: Parameters<typeof generateForest>[0]): Workload {
  const forest = generateForest(shape);
  const scores = scoreCpu(forest);
  return { forest, scores, allocation: allocate(forest, scores, { budget: 24 }) };
}

describe.runIf(hasBrowser)('viz in a browser', () => {
  let browser: Browser;
  let dir: string;
  const blocked: string[] = [];

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'trace-alloc-viz-'));
    mkdirSync(SHOTS, { recursive: true });
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking'] });
  });
  afterAll(async () => {
    await browser?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  async function open(file: string, scale = 1): Promise<{ page: Page; errors: string[] }> {
    const context = await browser.newContext({ viewport: { width: 1400, height: 860 }, deviceScaleFactor: scale });
    await context.route('**/*', (route) => {
      const url = route.request().url();
      if (url.startsWith('file:')) return route.continue();
      blocked.push(url);
      return route.abort();
    });
    const page = await context.newPage();
    const errors: string[] = [];
    page.on('pageerror', (err) => errors.push(err.message));
    page.on('console', (msg) => { if (msg.type() === 'error') errors.push(msg.text()); });
    await page.goto(pathToFileURL(file).href);
    await page.waitForSelector('body[data-tree]');
    return { page, errors };
  }

  /** Node elements drawn, and how many lie fully inside the visible drawing area. */
  async function drawn(page: Page): Promise<{ ids: number[]; inside: number; fills: string[] }> {
    // A string: this config has no DOM types, and the page needs none of the test's helpers.
    return page.evaluate(`(() => {
      const view = document.getElementById('view').getBoundingClientRect();
      const els = Array.from(document.querySelectorAll('#nodes [data-node]'));
      let inside = 0;
      for (const el of els) {
        const r = el.getBoundingClientRect();
        if (r.width > 0 && r.left >= view.left && r.right <= view.right && r.top >= view.top && r.bottom <= view.bottom) inside++;
      }
      return { ids: els.map((el) => Number(el.getAttribute('data-node'))), inside, fills: els.map((el) => el.getAttribute('fill') || '') };
    })()`);
  }

  function expectedFills(tree: TreeColumns, metric: ColorMetric): string[] {
    const greyed = greyedNodes(tree);
    const domain = metricDomain(tree, metric);
    return tree.parent.map((_, v) => nodeFill(tree, metric, domain, v, greyed[v] === 1));
  }

  it('draws every node, shows a node\'s numbers on hover, switches trees and colours, offline', async () => {
    // 70 trees: more than a page embeds, so the requested tree below comes from outside the top 50.
    const { forest, scores, allocation } = workload({ trees: 70, dim: 16, seed: 7, minNodes: 20, maxNodes: 200 });
    const ranked = rankTreesByContest(forest, scores);
    const requested = ranked[65];
    const file = join(dir, 'view.html');
    const written = writeTreeView(forest, scores, allocation, { outFile: file, initialTree: requested });
    expect(written.selection.trees).toHaveLength(51);
    const { page, errors } = await open(file);

    // The requested tree is shown first, every node is drawn and the fitted view holds them all.
    const first = extractTree(forest, scores, allocation, requested);
    expect(await page.getAttribute('body', 'data-tree')).toBe(forest.treeIds[requested]);
    let nodes = await drawn(page);
    expect(nodes.ids).toEqual(first.parent.map((_, v) => v));
    expect(nodes.inside).toBe(first.parent.length);
    expect(nodes.fills).toEqual(expectedFills(first, 'weight'));
    const segments = await page.$$eval('#links path', (paths) => paths.reduce((n, p) => n + (p.getAttribute('d')!.match(/M/g) ?? []).length, 0));
    expect(segments).toBe(first.parent.length - 1);
    // Pruned branches are greyed from the pruned node down; terminal steps are squares.
    const greyed = greyedNodes(first);
    expect(greyed.some((g) => g === 1)).toBe(true); // this workload has pruned branches to show
    const greyedDrawn = await page.$$eval('#nodes .pruned', (els) => els.map((el) => Number(el.getAttribute('data-node'))));
    expect(greyedDrawn).toEqual(first.parent.flatMap((_, v) => (greyed[v] ? [v] : [])));
    const prunedLinks = await page.$$eval('#links path.pruned', (paths) => paths.reduce((n, p) => n + (p.getAttribute('d')!.match(/M/g) ?? []).length, 0));
    expect(prunedLinks).toBe(greyed.reduce((a, g) => a + g, 0));
    const squares = await page.$$eval('#nodes rect', (els) => els.map((el) => Number(el.getAttribute('data-node'))));
    expect(squares).toEqual(first.parent.flatMap((_, v) => (first.terminal[v] ? [v] : [])));

    // The picker lists the embedded trees most contested first, then switches to the top one.
    const options = await page.$$eval('#picker option', (os) => os.map((o) => o.textContent ?? ''));
    expect(options).toHaveLength(51);
    expect(options.map((o) => o.split(' ')[1])).toEqual(written.selection.trees.map((t) => forest.treeIds[t]));
    await page.selectOption('#picker', '0');
    await page.waitForSelector(`body[data-tree="${forest.treeIds[ranked[0]]}"]`);
    const top = extractTree(forest, scores, allocation, ranked[0]);
    nodes = await drawn(page);
    expect(nodes.ids).toEqual(top.parent.map((_, v) => v));
    expect(nodes.inside).toBe(top.parent.length);

    // Hovering a node that starts new rollouts shows every one of its numbers.
    const v = top.branches.findIndex((b, i) => b > 0 && i > 0);
    expect(v).toBeGreaterThan(0);
    await page.hover(`#nodes [data-node="${v}"]`);
    const tip = page.locator('#tip');
    await expect.poll(() => tip.isVisible()).toBe(true);
    const rows = Object.fromEntries(await page.$$eval('#tip tr', (trs) => trs.map((tr) => [tr.children[0].textContent, tr.children[1].textContent])));
    expect(await page.textContent('#tip .tip-head')).toContain(`node ${v} `);
    expect(rows).toMatchObject({
      reward: formatNumber(top.reward[v]),
      visits: formatNumber(top.visits[v]),
      uncertainty: formatNumber(top.uncertainty[v]),
      C: formatNumber(top.contrast[v]),
      w: formatNumber(top.weight[v]),
      gA: formatNumber(top.gradAlpha[v]),
      gB: formatNumber(top.gradTau[v]),
      branches: String(top.branches[v]),
      depth: String(top.depth[v]),
    });
    await page.screenshot({ path: join(SHOTS, 'view-hover.png') });
    await page.mouse.move(2, 300);
    await expect.poll(() => tip.isVisible()).toBe(false);

    // The colour toggle recolours with the library's scale.
    await page.click('label:has(input[value="reward"])');
    expect(await page.textContent('#legend-title')).toBe('reward r');
    expect((await drawn(page)).fills).toEqual(expectedFills(top, 'reward'));

    // Badges: one per node that starts rollouts, saying how many and how deep.
    const badges = await page.$$eval('#labels .badge', (ts) => ts.map((t) => [Number(t.getAttribute('data-badge')), t.textContent]));
    expect(badges).toEqual(top.branches.flatMap((b, u) => (b > 0 ? [[u, `+${b} \u00b7 d${top.depth[u]}`]] : [])));

    // Wheel zoom and drag pan move the drawing.
    const before = await page.getAttribute('#viewport', 'transform');
    await page.mouse.move(700, 400);
    await page.mouse.wheel(0, -400);
    await expect.poll(() => page.getAttribute('#viewport', 'transform')).not.toBe(before);
    const zoomed = await page.getAttribute('#viewport', 'transform');
    await page.mouse.down();
    await page.mouse.move(600, 350, { steps: 5 });
    await page.mouse.up();
    await expect.poll(() => page.getAttribute('#viewport', 'transform')).not.toBe(zoomed);

    await page.click('#fit');
    await page.click('label:has(input[value="weight"])');
    await page.screenshot({ path: join(SHOTS, 'view.png') });
    expect(errors).toEqual([]);
    expect(blocked).toEqual([]);
    expect(await page.evaluate(() => performance.getEntriesByType('resource').length)).toBe(0);
    await page.context().close();
  });

  it('draws a tree of a few thousand nodes and keeps them all in the fitted view', async () => {
    const { forest, scores, allocation } = workload({ trees: 1, dim: 8, seed: 11, minNodes: 3000, maxNodes: 3000 });
    const file = join(dir, 'big.html');
    writeTreeView(forest, scores, allocation, { outFile: file });
    const { page, errors } = await open(file);
    const nodes = await drawn(page);
    expect(nodes.ids).toHaveLength(3000);
    expect(nodes.inside).toBe(3000);
    await page.screenshot({ path: join(SHOTS, 'view-3000.png') });
    expect(errors).toEqual([]);
    await page.context().close();
  });

  it.runIf(process.env.TRACE_ALLOC_UPDATE_SCREENSHOT === '1')('renders the demo workload\'s most contested tree for docs/img/demo-view.png', async () => {
    // The demo's default workload (src/cli/demo.ts): 4096 trees of 20–200 nodes, dim 64, seed 1, budget 16.
    const forest = generateForest({ trees: 4096, dim: 64, seed: 1, minNodes: 20, maxNodes: 200 });
    const scores = scoreCpu(forest);
    const allocation = allocate(forest, scores);
    const file = join(dir, 'demo.html');
    const written = writeTreeView(forest, scores, allocation, { outFile: file });
    const { page, errors } = await open(file, 2);
    const shown = written.selection.initialTree;
    expect(await page.getAttribute('body', 'data-tree')).toBe(forest.treeIds[shown]);
    // Hover the non-root node that starts the most rollouts, so the picture shows a tooltip too.
    const c = extractTree(forest, scores, allocation, shown);
    const v = c.branches.reduce((best, b, u) => (u > 0 && b > c.branches[best] ? u : best), 1);
    await page.hover(`#nodes [data-node="${v}"]`);
    await expect.poll(() => page.locator('#tip').isVisible()).toBe(true);
    const shot = join(SHOTS, 'demo-view.png');
    await page.screenshot({ path: shot });
    expect(errors).toEqual([]);
    copyFileSync(shot, resolve('docs/img/demo-view.png'));
    await page.context().close();
  });
});
