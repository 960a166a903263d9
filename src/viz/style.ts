/** The page's stylesheet, inlined. `--k` is the current zoom, so in-tree text keeps its screen size. */
export const PAGE_CSS = `
:root { --ink: #1d2430; --muted: #5d6676; --line: #e3e6ea; --accent: #1f5fbf; --panel: rgba(255,255,255,0.94); }
* { box-sizing: border-box; }
html, body { margin: 0; height: 100%; overflow: hidden; background: #fff; color: var(--ink);
  font: 13px/1.4 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif; }
body { display: flex; flex-direction: column; }
header { display: flex; flex-wrap: wrap; align-items: center; gap: 8px 18px; padding: 8px 14px;
  border-bottom: 1px solid var(--line); background: #fafbfc; }
header h1 { font-size: 16px; margin: 0; font-weight: 650; white-space: nowrap; }
header .sub { color: var(--muted); font-size: 12px; white-space: nowrap; }
.group { display: flex; align-items: center; gap: 6px; }
select, button { font: inherit; color: var(--ink); background: #fff; border: 1px solid #c8ced6; border-radius: 5px; padding: 3px 8px; }
select { max-width: 340px; }
button { cursor: pointer; min-width: 28px; }
button:disabled { opacity: 0.4; cursor: default; }
.seg { display: inline-flex; border: 1px solid #c8ced6; border-radius: 5px; overflow: hidden; }
.seg label { padding: 3px 9px; cursor: pointer; border-left: 1px solid #c8ced6; user-select: none; }
.seg label:first-child { border-left: 0; }
.seg input { display: none; }
.seg label:has(input:checked) { background: var(--accent); color: #fff; }
#stats { display: flex; flex-wrap: wrap; gap: 4px 14px; color: var(--muted); font-size: 12px; }
#stats b { color: var(--ink); font-weight: 600; font-variant-numeric: tabular-nums; }
main { position: relative; flex: 1; min-height: 0; overflow: hidden; cursor: grab; touch-action: none; }
main.dragging { cursor: grabbing; }
#stage { position: absolute; inset: 0; transform-origin: 0 0; will-change: transform; }
#view { width: 100%; height: 100%; overflow: visible; }
#links, #labels { --k: 1; }
/* Link widths are screen pixels divided by the zoom; each path carries its width class in --w.
   Butt caps: round caps on thousands of sub-paths roughly doubled the repaint (bench/viz-frames.ts). */
.link { fill: none; stroke-linecap: butt; stroke-width: calc(var(--w) / var(--k)); }
.link.idle { stroke: #a3acb9; }
.link.flow { stroke: #34507a; }
.link.pruned { stroke: #d4d7dc; stroke-dasharray: 4 3; }
/* Node outlines and sizes change in steps (--sw, --grow on #nodes, set when the zoom crosses a
   power of two), not with every zoom: restyling thousands of nodes per zoom tripled the repaint.
   Zoomed far out, nodes grow (2, 4, … 64×) to keep about a 2.5 px screen radius, so a big tree
   still reads as a heatmap. */
#nodes { --sw: 1px; --grow: 1; }
.node { stroke: #3a3f47; stroke-width: var(--sw); cursor: pointer;
  transform-box: fill-box; transform-origin: center; transform: scale(var(--grow)); }
.node.root { stroke-width: calc(2 * var(--sw)); }
.node.pruned { stroke: #aeb3ba; opacity: 0.75; }
.node.hover { stroke: var(--accent); stroke-width: calc(3 * var(--sw)); }
#labels text { font-size: calc(11px / var(--k)); paint-order: stroke; stroke: #fff; stroke-width: calc(5px / var(--k));
  stroke-linejoin: round; text-anchor: middle; pointer-events: none; font-variant-numeric: tabular-nums; }
/* Offsets: the node radius (5 tree units, scaled) plus a constant screen gap. */
#labels .ilabel { fill: #6b3a12; transform: translateY(calc(5px + 13px / var(--k))); }
#labels .badge { transform: translateY(calc(-7px - 5px / var(--k))); }
#labels .ilabel.pruned { fill: #a6abb2; }
/* A wider halo: a badge sits on its node's incoming link, which can be 5 px wide. */
#labels .badge { fill: var(--accent); font-weight: 700; stroke-width: calc(8px / var(--k)); }
#view.far #labels .ilabel { display: none; }
.panel { position: absolute; background: var(--panel); border: 1px solid var(--line); border-radius: 8px;
  box-shadow: 0 1px 4px rgba(0,0,0,0.08); padding: 8px 10px; font-size: 12px; cursor: default; }
#legend { left: 12px; bottom: 12px; width: 270px; }
#legend-title { font-weight: 600; margin-bottom: 4px; }
#legend-bar { height: 10px; border-radius: 3px; border: 1px solid #d0d4da; }
.ticks { display: flex; justify-content: space-between; color: var(--muted); font-variant-numeric: tabular-nums; margin-top: 2px; }
.key { display: grid; grid-template-columns: 26px 1fr; gap: 3px 6px; align-items: center; margin-top: 8px; color: var(--muted); }
.key svg { overflow: visible; }
#note { right: 12px; bottom: 12px; max-width: 380px; color: var(--muted); }
#note:empty { display: none; }
#help { right: 12px; top: 12px; color: var(--muted); }
#tip { position: fixed; display: none; z-index: 10; pointer-events: none; background: #fff; border: 1px solid #c8ced6;
  border-radius: 7px; box-shadow: 0 3px 12px rgba(0,0,0,0.15); padding: 7px 9px; font-size: 12px; max-width: 460px; }
#tip .tip-head { font-weight: 650; }
#tip .tip-status { color: var(--muted); margin-bottom: 4px; }
#tip table { border-collapse: collapse; }
#tip td { padding: 1px 6px 1px 0; vertical-align: baseline; white-space: nowrap; }
#tip td.num { text-align: right; font-variant-numeric: tabular-nums; font-family: ui-monospace, "SFMono-Regular", Menlo, Consolas, monospace; }
#tip td.hint { color: var(--muted); font-size: 11px; }
noscript { display: block; padding: 20px; }
`;
