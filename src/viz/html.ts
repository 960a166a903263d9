import { OptionError } from '../util/errors.js';
import type { Allocation } from '../allocate/allocate.js';
import type { PackedForest } from '../forest/packed.js';
import type { Scores } from '../score/types.js';
import { CLIENT_SCRIPT } from './client.js';
import { d3HierarchySource } from './d3source.js';
import { depthMeaning } from './depth.js';
import { escapeXml } from './format.js';
import { LAYOUT } from './layout.js';
import { extractTree, selectTrees, type SelectOptions, type TreeColumns, type TreeSelection } from './model.js';
import { COLOR_METRICS, METRIC_LABEL, metricDomain, NO_VALUE_FILL, PALETTE, PRUNED_FILL, type ColorMetric } from './palette.js';
import { PAGE_CSS } from './style.js';

export interface TreeViewOptions extends SelectOptions {
  /** Page title; default "trace-alloc · priority heatmap". */
  title?: string;
  /** Colour shown first. Default `weight`. */
  metric?: ColorMetric;
}

export interface TreeViewPage {
  html: string;
  selection: TreeSelection;
}

const COLUMNS = ['parent', 'reward', 'visits', 'uncertainty', 'terminal', 'contrast', 'weight', 'gradAlpha', 'gradTau',
  'intensity', 'branches', 'depth', 'priority', 'mass', 'pruned', 'live'] as const satisfies readonly (keyof TreeColumns)[];

/**
 * One self-contained HTML page (styles, d3-hierarchy and the script inline; nothing is fetched)
 * showing a bounded set of the forest's trees, most contested first.
 */
export function renderTreeView(forest: PackedForest, scores: Scores, allocation: Allocation, options: TreeViewOptions = {}): TreeViewPage {
  const selection = selectTrees(forest, scores, options);
  const metric = options.metric ?? 'weight';
  if (!COLOR_METRICS.includes(metric)) throw new OptionError(`metric must be one of ${COLOR_METRICS.join(', ')}, got ${String(metric)}`);
  const trees = selection.trees.map((t) => pageTree(extractTree(forest, scores, allocation, t)));
  const opts = allocation.options;
  const data = {
    version: 1,
    params: { alpha: scores.params.alpha, tau: scores.params.tau, rule: opts.rule },
    depthMeaning: depthMeaning(opts.rule).tooltip,
    backend: scores.backend,
    allocation: {
      budget: opts.totalBudget === undefined ? 'per tree' : `total ${opts.totalBudget} (min ${opts.minPerTree} per live tree)`,
      rule: opts.rule, pruneRatio: opts.pruneRatio, widen: opts.widen, contestGain: opts.contestGain, forkKeep: opts.forkKeep, treeFloor: opts.treeFloor, baseDepth: opts.baseDepth, depthGain: opts.depthGain, maxDepth: opts.maxDepth,
    },
    forestTrees: selection.forestTrees,
    note: selection.note,
    initial: selection.trees.indexOf(selection.initialTree),
    palette: PALETTE,
    prunedFill: PRUNED_FILL,
    noValueFill: NO_VALUE_FILL,
    metricLabels: METRIC_LABEL,
    layout: LAYOUT,
    trees,
  };
  const title = options.title ?? 'trace-alloc \u00b7 priority heatmap';
  const o = data.allocation;
  const ruleSetting = o.rule === 'v1' ? `\u03bb ${o.widen}` : o.rule === 'v3' || o.rule === 'v4' || o.rule === 'v5' ? `\u03ba ${o.contestGain} \u00b7 \u03b7 ${o.forkKeep}` : `\u03ba ${o.contestGain}`;
  const settings = `rule ${o.rule} \u00b7 \u03b1 ${scores.params.alpha} \u00b7 \u03c4 ${scores.params.tau} \u00b7 ${scores.backend} scores \u00b7 budget ${o.budget} \u00b7 `
    + `\u03c1 ${o.pruneRatio} \u00b7 ${ruleSetting} \u00b7 D0 ${o.baseDepth} \u00b7 \u03b3 ${o.depthGain}`;
  const radios = COLOR_METRICS.map((m) => `<label title="${escapeXml(METRIC_LABEL[m])} (key ${m[0]})"><input type="radio" name="metric" value="${m}"${m === metric ? ' checked' : ''}>${m}</label>`).join('');
  const html = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:">
<title>${escapeXml(title)}</title>
<style>${PAGE_CSS}</style>
</head>
<body>
<header>
  <div><h1 id="tree-title">tree</h1><div class="sub" id="tree-index"></div></div>
  <div class="group"><button id="prev" title="previous tree (key [)">\u2039</button>
    <select id="picker" aria-label="tree, most contested first"></select>
    <button id="next" title="next tree (key ])">\u203a</button></div>
  <div class="group"><span class="sub">colour</span><div class="seg" role="radiogroup">${radios}</div></div>
  <div class="group"><button id="zoom-out" title="zoom out (key -)">\u2212</button><button id="fit" title="fit the tree (key 0)">fit</button><button id="zoom-in" title="zoom in (key +)">+</button></div>
  <div id="stats"></div>
</header>
<main id="area">
  <div id="stage"><svg id="view" xmlns="http://www.w3.org/2000/svg" role="img" aria-label="rollout tree">
    <g id="viewport"><g id="links"></g><g id="nodes"></g><g id="labels"></g></g>
  </svg></div>
  <div class="panel" id="legend">
    <div id="legend-title"></div>
    <div id="legend-bar"></div>
    <div class="ticks"><span id="legend-lo"></span><span id="legend-mid"></span><span id="legend-hi"></span></div>
    <div class="key">
      <svg width="26" height="14" id="legend-none"><circle cx="13" cy="7" r="5" fill="${NO_VALUE_FILL}" stroke="#3a3f47"/></svg><span id="legend-none-text"></span>
      <svg width="26" height="14"><rect x="8" y="2" width="10" height="10" fill="#f9a64a" stroke="#3a3f47"/></svg><span>terminal step (episode ended)</span>
      <svg width="26" height="14"><line x1="1" y1="7" x2="25" y2="7" stroke="#d4d7dc" stroke-width="2" stroke-dasharray="4 3"/><circle cx="13" cy="7" r="5" fill="${PRUNED_FILL}" stroke="#aeb3ba"/></svg><span>pruned branch (stopped early this step)</span>
      <svg width="26" height="14"><line x1="1" y1="4" x2="25" y2="4" stroke="#a3acb9" stroke-width="1"/><line x1="1" y1="10" x2="25" y2="10" stroke="#a3acb9" stroke-width="4"/></svg><span>link width: intensity I of the fork (label I under a fork)</span>
      <svg width="26" height="14"><line x1="1" y1="7" x2="25" y2="7" stroke="#34507a" stroke-width="2"/></svg><span>path to new rollouts</span>
      <svg width="26" height="14"><text x="13" y="11" font-size="10" font-weight="700" fill="#1f5fbf" text-anchor="middle">+b\u00b7d</text></svg><span>${escapeXml(depthMeaning(opts.rule).legend)}</span>
    </div>
  </div>
  <div class="panel" id="help">drag to pan \u00b7 wheel or double-click to zoom \u00b7 hover a node for its numbers</div>
  <div class="panel" id="note">${escapeXml(selection.note)}<div class="sub">${escapeXml(settings)}</div></div>
  <div id="tip" role="tooltip"></div>
</main>
<noscript>This view needs JavaScript (it runs from this file alone; nothing is downloaded).</noscript>
<script type="application/json" id="trace-alloc-data">${jsonForScript(data)}</script>
<script>${d3HierarchySource()}</script>
<script>${CLIENT_SCRIPT}</script>
</body>
</html>
`;
  return { html, selection };
}

interface PageTree {
  index: number;
  id: string;
  meanIntensity: number;
  budget: number;
  unallocated: number;
  domains: Record<ColorMetric, [number, number]>;
  cols: Record<(typeof COLUMNS)[number], number[]>;
}

function pageTree(tree: TreeColumns): PageTree {
  const domains = Object.fromEntries(COLOR_METRICS.map((m) => [m, metricDomain(tree, m)])) as Record<ColorMetric, [number, number]>;
  const cols = Object.fromEntries(COLUMNS.map((name) => [name, tree[name].map(compact)])) as PageTree['cols'];
  return { index: tree.index, id: tree.id, meanIntensity: tree.meanIntensity, budget: tree.budget, unallocated: tree.unallocated, domains, cols };
}

/** Eight significant digits: the page prints four decimals, and the file stays about half the size. */
function compact(x: number): number {
  return Number.isInteger(x) ? x : Number(x.toPrecision(8));
}

/** JSON that is safe inside a <script> element whatever the tree ids contain. */
export function jsonForScript(value: unknown): string {
  return JSON.stringify(value).replace(/</g, '\\u003c').replace(/\u2028/g, '\\u2028').replace(/\u2029/g, '\\u2029');
}
