import { OptionError } from '../util/errors.js';
import type { Allocation } from '../allocate/allocate.js';
import type { PackedForest } from '../forest/packed.js';
import type { Scores } from '../score/types.js';
import { depthMeaning } from './depth.js';
import { escapeXml, formatShort } from './format.js';
import { budgetPath, childLists, greyedNodes, LAYOUT, layoutTree } from './layout.js';
import { extractTree } from './model.js';
import { COLOR_METRICS, METRIC_LABEL, metricDomain, nodeFill, PALETTE, PRUNED_FILL, type ColorMetric } from './palette.js';

export interface TreeSvgOptions {
  /** Node colour. Default `weight`. */
  metric?: ColorMetric;
  /** Draw the legend and title above the tree. Default true. */
  legend?: boolean;
}

const FONT = 'Helvetica, Arial, sans-serif';
const LINK = { idle: '#a3acb9', flow: '#34507a', pruned: '#d4d7dc' } as const;

/**
 * A static SVG of one tree for papers: the page's drawing at a fixed scale, with presentation
 * attributes only (no CSS, no script) so LaTeX and vector editors read it as is.
 */
export function renderTreeSvg(forest: PackedForest, scores: Scores, allocation: Allocation, treeIndex: number, options: TreeSvgOptions = {}): string {
  const metric = options.metric ?? 'weight';
  if (!COLOR_METRICS.includes(metric)) throw new OptionError(`metric must be one of ${COLOR_METRICS.join(', ')}, got ${String(metric)}`);
  const tree = extractTree(forest, scores, allocation, treeIndex);
  const geo = layoutTree(tree.parent, { dx: 20, dy: 64, badged: tree.branches });
  const children = childLists(tree.parent);
  const greyed = greyedNodes(tree);
  const flow = budgetPath(tree);
  const domain = metricDomain(tree, metric);
  const n = tree.parent.length;
  const r = LAYOUT.radius;

  const margin = 24;
  const legendHeight = options.legend === false ? 0 : 78;
  const treeWidth = geo.maxX - geo.minX;
  const width = Math.ceil(Math.max(treeWidth + 2 * margin + 40, options.legend === false ? 0 : 560));
  const height = Math.ceil(legendHeight + geo.maxY + 2 * margin + 24);
  const ox = (width - treeWidth) / 2 - geo.minX;
  const oy = legendHeight + margin + 14;
  const px = (v: number) => round(ox + geo.x[v]);
  const py = (v: number) => round(oy + geo.y[v]);

  const out: string[] = [];
  out.push(`<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="${FONT}">`);
  out.push(`<rect width="${width}" height="${height}" fill="#ffffff"/>`);
  if (options.legend !== false) out.push(legend(tree.id, tree.index, metric, domain, margin, allocation.options.rule));

  out.push('<g class="links" fill="none" stroke-linecap="butt">');
  for (let v = 1; v < n; v++) {
    const p = tree.parent[v];
    const kind = greyed[v] ? 'pruned' : flow[v] ? 'flow' : 'idle';
    const w = 1 + 0.375 * Math.round(Math.min(1, tree.intensity[p]) * 8);
    const my = round((py(p) + py(v)) / 2);
    out.push(`<path d="M${px(p)},${py(p)}C${px(p)},${my} ${px(v)},${my} ${px(v)},${py(v)}" stroke="${LINK[kind]}" stroke-width="${w}"${kind === 'pruned' ? ' stroke-dasharray="4 3"' : ''}/>`);
  }
  out.push('</g>');

  out.push('<g class="nodes" stroke-width="1">');
  for (let v = 0; v < n; v++) {
    const fill = nodeFill(tree, metric, domain, v, greyed[v] === 1);
    const stroke = greyed[v] ? '#aeb3ba' : '#3a3f47';
    const rr = v === 0 ? r * 1.4 : r;
    if (tree.terminal[v]) {
      out.push(`<rect x="${round(px(v) - rr)}" y="${round(py(v) - rr)}" width="${2 * rr}" height="${2 * rr}" fill="${fill}" stroke="${stroke}"/>`);
    } else {
      out.push(`<circle cx="${px(v)}" cy="${py(v)}" r="${rr}" fill="${fill}" stroke="${stroke}"${v === 0 ? ' stroke-width="2"' : ''}/>`);
    }
  }
  out.push('</g>');

  out.push('<g class="labels" font-size="9" text-anchor="middle" paint-order="stroke" stroke="#ffffff" stroke-width="3" stroke-linejoin="round">');
  for (let v = 0; v < n; v++) {
    if (children[v].length >= 2) {
      out.push(`<text x="${px(v)}" y="${py(v) + 17}" fill="${greyed[v] ? '#a6abb2' : '#6b3a12'}">I ${formatShort(tree.intensity[v])}</text>`);
    }
    if (tree.branches[v] > 0) {
      out.push(`<text x="${px(v)}" y="${py(v) - (v === 0 ? 11 : 9)}" fill="#1f5fbf" font-weight="700" stroke-width="6">+${tree.branches[v]} \u00b7 d${tree.depth[v]}</text>`);
    }
  }
  out.push('</g>');
  out.push('</svg>');
  return `${out.join('\n')}\n`;
}

function legend(id: string, index: number, metric: ColorMetric, domain: [number, number], x: number, rule: string | undefined): string {
  const barW = 200;
  const stops = PALETTE.map((c, i) => `<stop offset="${round((100 * i) / (PALETTE.length - 1))}%" stop-color="${c}"/>`).join('');
  const ticks = [domain[0], (domain[0] + domain[1]) / 2, domain[1]]
    .map((t, i) => `<text x="${x + (barW * i) / 2}" y="52" text-anchor="${['start', 'middle', 'end'][i]}">${formatShort(t)}</text>`).join('');
  const keyX = x + barW + 36;
  return [
    `<defs><linearGradient id="heat">${stops}</linearGradient></defs>`,
    `<text x="${x}" y="20" font-size="13" font-weight="700" fill="#1d2430">tree ${escapeXml(id)} (#${index}) \u00b7 ${escapeXml(METRIC_LABEL[metric])}</text>`,
    `<rect x="${x}" y="30" width="${barW}" height="10" fill="url(#heat)" stroke="#d0d4da"/>`,
    `<g font-size="9" fill="#5d6676">${ticks}`,
    `<rect x="${keyX}" y="27" width="9" height="9" fill="#f9a64a" stroke="#3a3f47"/><text x="${keyX + 16}" y="35">terminal</text>`,
    `<circle cx="${keyX + 4.5}" cy="48" r="4.5" fill="${PRUNED_FILL}" stroke="#aeb3ba"/><text x="${keyX + 16}" y="52">pruned branch</text>`,
    `<line x1="${keyX + 100}" y1="31" x2="${keyX + 124}" y2="31" stroke="${LINK.flow}" stroke-width="2"/><text x="${keyX + 130}" y="35">path to new rollouts</text>`,
    `<text x="${keyX + 112}" y="52" font-weight="700" fill="#1f5fbf" text-anchor="middle">+b\u00b7d</text><text x="${keyX + 130}" y="52">${escapeXml(depthMeaning(rule).badge)}</text>`,
    `<text x="${x}" y="68">link width and label I: fork intensity</text>`,
    '</g>',
  ].join('\n');
}

function round(x: number): number {
  return Math.round(x * 10) / 10;
}
