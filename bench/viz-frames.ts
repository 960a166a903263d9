/**
 * How smooth pan and zoom stay in the viz page as trees grow: opens generated pages in headless
 * Chromium (software rendering, --disable-gpu) and times animation frames while the view zooms
 * continuously (fitted overview → 4× in) and then pans, one view change per frame.
 *
 *   XDG_RUNTIME_DIR=/tmp/xdg npx tsx bench/viz-frames.ts [--merge-links] [nodes ...]   (default 1000 3000 6000)
 *
 * --merge-links first merges the page's link paths back into one path per style (what the page
 * drew before links were also split by vertical strip), for an A/B of that choice.
 *
 * Prints, per tree size: the first draw (layout + DOM build), the frame intervals while zooming
 * and panning (median, 95th percentile, share of frames within 20 ms ≈ one 60 Hz frame plus
 * slack), and the settle time: the one sharp repaint at the new scale once a gesture stops.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { chromium } from 'playwright-core';
import { allocate } from '../src/allocate/allocate.js';
import { scoreCpu } from '../src/score/cpu.js';
import { generateForest } from '../src/synth/generate.js';
import { writeTreeView } from '../src/viz/write.js';

const FRAME_PROBE = `(async () => {
  const view = window.traceAllocView;
  const frame = () => new Promise((done) => requestAnimationFrame(done));
  const run = async (steps, change) => {
    const gaps = [];
    let last = await frame();
    for (let i = 0; i < steps; i++) {
      change(i);
      const now = await frame();
      gaps.push(now - last);
      last = now;
    }
    return gaps;
  };
  const zoom = await run(140, () => view.zoomAt(700, 400, Math.pow(4, 1 / 140)));
  const pan = await run(140, (i) => view.panBy(i < 70 ? -8 : 8, 0));
  // Settling: the sharp repaint once a gesture stops (commit, then the frame after its paint).
  const settle = [];
  for (let i = 0; i < 8; i++) {
    view.zoomAt(700, 400, i % 2 ? 1 / 1.5 : 1.5);
    await frame();
    const t = performance.now();
    view.commit();
    await frame();
    await frame();
    settle.push(performance.now() - t);
  }
  return { zoom, pan, settle };
})()`;

// Joins the strip paths of each style into one, in the page.
const MERGE_LINKS = `(() => {
  const groups = new Map();
  for (const p of Array.from(document.querySelectorAll('#links path'))) {
    const key = p.getAttribute('class') + '|' + p.getAttribute('style');
    if (!groups.has(key)) groups.set(key, []);
    groups.get(key).push(p);
  }
  for (const paths of groups.values()) {
    paths[0].setAttribute('d', paths.map((p) => p.getAttribute('d')).join(''));
    for (const p of paths.slice(1)) p.remove();
  }
})()`;

const mergeLinks = process.argv.includes('--merge-links');
const sizes = process.argv.slice(2).map(Number).filter((n) => n > 0);
const dir = mkdtempSync(join(tmpdir(), 'trace-alloc-viz-frames-'));
const browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking'] });
try {
  if (mergeLinks) console.log('links merged into one path per style (the A side)');
  console.log('nodes   first draw ms   zoom: median p95 ≤20ms   pan: median p95 ≤20ms   settle: median p95 (ms)');
  for (const n of sizes.length > 0 ? sizes : [1000, 3000, 6000]) {
    const forest = generateForest({ trees: 1, dim: 8, seed: 5, minNodes: n, maxNodes: n });
    const scores = scoreCpu(forest);
    const file = join(dir, `tree-${n}.html`);
    writeTreeView(forest, scores, allocate(forest, scores), { outFile: file });
    const page = await browser.newPage({ viewport: { width: 1400, height: 860 } });
    const t0 = Date.now();
    await page.goto(pathToFileURL(file).href);
    await page.waitForSelector('body[data-tree]');
    if (mergeLinks) await page.evaluate(MERGE_LINKS);
    // Until the first frame after the draw is painted.
    await page.evaluate('new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done)))');
    const firstDraw = Date.now() - t0;
    // A string, not a closure: tsx's name-keeping helpers do not exist inside the page.
    const result = (await page.evaluate(FRAME_PROBE)) as { zoom: number[]; pan: number[]; settle: number[] };
    const stats = (gaps: number[]) => {
      const s = [...gaps].sort((a, b) => a - b);
      const q = (p: number) => s[Math.min(s.length - 1, Math.floor(p * s.length))];
      return `${q(0.5).toFixed(1).padStart(6)} ${q(0.95).toFixed(1).padStart(6)} ${((100 * s.filter((g) => g <= 20).length) / s.length).toFixed(0).padStart(4)}%`;
    };
    console.log(`${String(n).padStart(5)}   ${String(firstDraw).padStart(13)}   ${stats(result.zoom)}   ${stats(result.pan)}   ${stats(result.settle).slice(0, 13)}`);
    await page.close();
  }
} finally {
  await browser.close();
  rmSync(dir, { recursive: true, force: true });
}
