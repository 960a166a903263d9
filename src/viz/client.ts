/**
 * The page's script, inlined into the HTML after d3-hierarchy's UMD build (which defines
 * `window.d3`). Plain ES2017 with no imports so the file works from disk with the network off.
 * It mirrors `layout.ts` (same d3 tree, same spacing), `palette.ts` (same interpolation) and
 * `format.ts` (same number printing); the browser test checks the page against them.
 *
 * Drawing: SVG, one element per node (so hover, counting and recolouring are per node), links
 * batched into a handful of <path>s by style, texts (badges, fork intensities) kept at a
 * constant screen size through a CSS variable. Pan and zoom move one <g> per animation frame.
 */
export const CLIENT_SCRIPT = String.raw`(function () {
  'use strict';
  var data = JSON.parse(document.getElementById('trace-alloc-data').textContent);
  var d3 = window.d3;
  var L = data.layout;
  var $ = function (id) { return document.getElementById(id); };
  var area = $('area'), stage = $('stage'), svg = $('view'), viewport = $('viewport'), linkLayer = $('links'), nodeLayer = $('nodes'), labelLayer = $('labels');
  var tip = $('tip');
  var state = { pos: -1, metric: 'weight', k: 1, x: 0, y: 0, tree: null, geo: null };

  function fmt(x) {
    if (Number.isInteger(x)) return String(x);
    var a = Math.abs(x);
    if (a >= 1e-3 && a < 1e4) return x.toFixed(4);
    return x.toExponential(3);
  }
  function short(x) { return x.toFixed(2); }

  function hex(h) { return [parseInt(h.slice(1, 3), 16), parseInt(h.slice(3, 5), 16), parseInt(h.slice(5, 7), 16)]; }
  var stops = data.palette.map(hex);
  function colorAt(t) {
    t = Math.min(1, Math.max(0, isFinite(t) ? t : 0)) * (stops.length - 1);
    var i = Math.min(stops.length - 2, Math.floor(t)), f = t - i, a = stops[i], b = stops[i + 1], s = '#';
    for (var k = 0; k < 3; k++) s += ('0' + Math.round(a[k] + (b[k] - a[k]) * f).toString(16)).slice(-2);
    return s;
  }
  function metricValue(c, metric, v) {
    if (metric === 'weight') return v === 0 ? undefined : c.weight[v];
    if (metric === 'contrast') return v === 0 ? undefined : c.contrast[v];
    if (metric === 'reward') return c.visits[v] > 0 ? c.reward[v] : undefined;
    return c.uncertainty[v];
  }
  function fillOf(tree, v) {
    if (state.geo.greyed[v]) return data.prunedFill;
    var x = metricValue(tree.cols, state.metric, v);
    if (x === undefined) return data.noValueFill;
    var dom = tree.domains[state.metric];
    return colorAt((x - dom[0]) / (dom[1] - dom[0]));
  }

  function layout(tree) {
    var c = tree.cols, n = c.parent.length, v;
    var children = new Array(n);
    for (v = 0; v < n; v++) children[v] = [];
    for (v = 1; v < n; v++) children[c.parent[v]].push(v);
    // d3.hierarchy() sets heights by walking up from every node: quadratic on a deep chain. The
    // same nodes (d3's own constructor) are built in one pass here, heights in one reverse pass
    // (as hierarchyOf in layout.ts), so tree() places them exactly as it places hierarchy()'s.
    var Node = d3.hierarchy(0).constructor, nodes = new Array(n);
    for (v = 0; v < n; v++) nodes[v] = new Node(v);
    for (v = 1; v < n; v++) {
      var up = nodes[c.parent[v]];
      nodes[v].parent = up;
      nodes[v].depth = up.depth + 1;
      (up.children || (up.children = [])).push(nodes[v]);
    }
    for (v = n - 1; v > 0; v--) if (nodes[c.parent[v]].height < nodes[v].height + 1) nodes[c.parent[v]].height = nodes[v].height + 1;
    var root = nodes[0];
    d3.tree().nodeSize([L.dx, 1]).separation(function (a, b) {
      return (a.parent === b.parent ? 1 : L.cousinGap) + (c.branches[a.data] > 0 || c.branches[b.data] > 0 ? L.badgeGap : 0);
    })(root);
    var x = new Float64Array(n), level = new Int32Array(n), minX = 0, maxX = 0, maxLevel = 0;
    root.each(function (d) {
      x[d.data] = d.x; level[d.data] = d.depth;
      if (d.x < minX) minX = d.x;
      if (d.x > maxX) maxX = d.x;
      if (d.depth > maxLevel) maxLevel = d.depth;
    });
    // Deep, narrow trees keep the standard level gap; wide, shallow ones stretch toward the
    // window's shape so a fitted view uses the height as well as the width.
    var box = area.getBoundingClientRect();
    var wanted = maxLevel > 0 ? (maxX - minX + 2 * L.dx) * (box.height / Math.max(1, box.width)) / maxLevel : L.dy;
    var dy = Math.max(L.dy, Math.min(2.5 * L.dy, wanted));
    var y = new Float64Array(n);
    for (v = 0; v < n; v++) y[v] = level[v] * dy;
    var greyed = new Uint8Array(n), flow = new Uint8Array(n);
    for (v = 0; v < n; v++) greyed[v] = c.pruned[v] || (v > 0 && greyed[c.parent[v]]) ? 1 : 0;
    for (v = n - 1; v >= 0; v--) {
      if (c.branches[v] > 0) flow[v] = 1;
      if (flow[v] && v > 0) flow[c.parent[v]] = 1;
    }
    return { x: x, y: y, level: level, children: children, greyed: greyed, flow: flow, minX: minX, maxX: maxX, maxY: maxLevel * dy };
  }

  function draw(tree) {
    var c = tree.cols, g = state.geo, n = c.parent.length, v;
    // Links batched into paths by style — (pruned | on the budget path | idle) × fork-intensity
    // width class — and by vertical strip of the tree (the parent's), so that zoomed in, the
    // browser skips the strips off screen instead of stroking every link of the tree.
    var batches = {};
    var strip = Math.max(8 * L.dx, (g.maxX - g.minX) / 48);
    for (v = 1; v < n; v++) {
      var p = c.parent[v];
      var kind = g.greyed[v] ? 'pruned' : g.flow[v] ? 'flow' : 'idle';
      var widthClass = Math.round(Math.min(1, c.intensity[p]) * 8);
      var key = kind + ' ' + widthClass + ' ' + Math.floor((g.x[p] - g.minX) / strip);
      var my = (g.y[p] + g.y[v]) / 2;
      var seg = 'M' + g.x[p] + ',' + g.y[p] + 'C' + g.x[p] + ',' + my + ' ' + g.x[v] + ',' + my + ' ' + g.x[v] + ',' + g.y[v];
      (batches[key] || (batches[key] = [])).push(seg);
    }
    var html = '';
    Object.keys(batches).sort().forEach(function (key) {
      var parts = key.split(' ');
      html += '<path class="link ' + parts[0] + '" style="--w:' + (1 + 0.5 * Number(parts[1])) + 'px" d="' + batches[key].join('') + '"/>';
    });
    linkLayer.innerHTML = html;

    var r = L.radius;
    html = '';
    for (v = 0; v < n; v++) {
      var cls = 'node' + (g.greyed[v] ? ' pruned' : '') + (v === 0 ? ' root' : '') + (c.branches[v] > 0 ? ' alloc' : '');
      var fill = fillOf(tree, v);
      var rr = v === 0 ? r * 1.4 : r;
      if (c.terminal[v]) {
        html += '<rect class="' + cls + ' terminal" data-node="' + v + '" x="' + (g.x[v] - rr) + '" y="' + (g.y[v] - rr) + '" width="' + 2 * rr + '" height="' + 2 * rr + '" fill="' + fill + '"/>';
      } else {
        html += '<circle class="' + cls + '" data-node="' + v + '" cx="' + g.x[v] + '" cy="' + g.y[v] + '" r="' + rr + '" fill="' + fill + '"/>';
      }
    }
    nodeLayer.innerHTML = html;

    html = '';
    for (v = 0; v < n; v++) {
      if (g.children[v].length >= 2) {
        html += '<text class="ilabel' + (g.greyed[v] ? ' pruned' : '') + '" x="' + g.x[v] + '" y="' + g.y[v] + '">I ' + short(c.intensity[v]) + '</text>';
      }
      if (c.branches[v] > 0) {
        html += '<text class="badge" data-badge="' + v + '" x="' + g.x[v] + '" y="' + g.y[v] + '">+' + c.branches[v] + ' \u00b7 d' + c.depth[v] + '</text>';
      }
    }
    labelLayer.innerHTML = html;
  }

  function recolor() {
    var tree = state.tree, nodes = nodeLayer.children;
    for (var i = 0; i < nodes.length; i++) nodes[i].setAttribute('fill', fillOf(tree, Number(nodes[i].getAttribute('data-node'))));
    drawLegend();
  }

  function drawLegend() {
    var tree = state.tree, dom = tree.domains[state.metric];
    $('legend-title').textContent = data.metricLabels[state.metric];
    $('legend-bar').style.background = 'linear-gradient(to right, ' + data.palette.join(', ') + ')';
    $('legend-lo').textContent = short(dom[0]);
    $('legend-mid').textContent = short((dom[0] + dom[1]) / 2);
    $('legend-hi').textContent = short(dom[1]);
    var none = state.metric === 'reward' ? 'no visits yet' : state.metric === 'uncertainty' ? '' : 'root (in no sibling group)';
    $('legend-none').style.display = none ? '' : 'none';
    $('legend-none-text').textContent = none;
  }

  function summary(tree) {
    var c = tree.cols, n = c.parent.length, forks = 0, placed = 0, starts = 0, pruned = 0;
    for (var v = 0; v < n; v++) {
      if (state.geo.children[v].length >= 2) forks++;
      if (c.branches[v] > 0) { placed += c.branches[v]; starts++; }
      if (c.pruned[v]) pruned++;
    }
    return [
      ['nodes', String(n)], ['forks', String(forks)], ['mean intensity', fmt(tree.meanIntensity)],
      ['budget', String(tree.budget)], ['placed', placed + ' at ' + starts + (starts === 1 ? ' node' : ' nodes')],
      ['unallocated', String(tree.unallocated)], ['pruned', String(pruned)],
    ];
  }

  function show(pos) {
    pos = Math.max(0, Math.min(data.trees.length - 1, pos));
    var tree = data.trees[pos];
    state.pos = pos; state.tree = tree;
    state.geo = layout(tree);
    hideTip();
    draw(tree);
    drawLegend();
    $('picker').value = String(pos);
    $('tree-title').textContent = 'tree ' + tree.id;
    $('tree-index').textContent = '#' + tree.index + ' in the forest \u00b7 rank ' + (pos + 1) + ' of ' + data.trees.length + ' here';
    var stats = $('stats');
    stats.textContent = '';
    summary(tree).forEach(function (kv) {
      var s = document.createElement('span');
      var b = document.createElement('b');
      b.textContent = kv[1];
      s.appendChild(document.createTextNode(kv[0] + ' '));
      s.appendChild(b);
      stats.appendChild(s);
    });
    $('prev').disabled = pos === 0;
    $('next').disabled = pos === data.trees.length - 1;
    fit();
    try { history.replaceState(null, '', '#tree=' + encodeURIComponent(tree.id)); } catch (e) { /* file: URLs may refuse */ }
    document.body.setAttribute('data-tree', tree.id);
    document.body.setAttribute('data-nodes', String(tree.cols.parent.length));
  }

  // Pan and zoom: state.k, state.x, state.y map tree units to screen pixels. While the view
  // moves, only the CSS transform of #stage (its own compositor layer) changes, so a frame costs
  // no repaint of the tree however big it is; once the view rests for a moment the transform is
  // committed into the SVG and the tree is painted sharp at the new scale.
  var frame = 0, settle = 0, shown = { k: 1, x: 0, y: 0 }, nodeStep = NaN;
  function schedule() { if (!frame) frame = requestAnimationFrame(applyView); }
  function applyView() {
    frame = 0;
    var s = state.k / shown.k;
    stage.style.transform = 'translate(' + (state.x - s * shown.x) + 'px,' + (state.y - s * shown.y) + 'px) scale(' + s + ')';
    clearTimeout(settle);
    settle = setTimeout(commitView, 140);
  }
  function commitView() {
    clearTimeout(settle);
    if (frame) { cancelAnimationFrame(frame); frame = 0; }
    shown = { k: state.k, x: state.x, y: state.y };
    viewport.setAttribute('transform', 'translate(' + state.x + ',' + state.y + ') scale(' + state.k + ')');
    linkLayer.style.setProperty('--k', String(state.k));
    labelLayer.style.setProperty('--k', String(state.k));
    var step = Math.round(Math.log2(state.k));
    if (step !== nodeStep) {
      nodeStep = step;
      var grow = Math.min(64, Math.max(1, Math.pow(2, Math.ceil(Math.log2(0.5 / state.k)))));
      nodeLayer.style.setProperty('--grow', String(grow));
      nodeLayer.style.setProperty('--sw', (Math.pow(2, -step) / grow) + 'px');
    }
    svg.classList.toggle('far', L.dx * state.k < 26);
    stage.style.transform = '';
  }
  function fit() {
    var g = state.geo, box = area.getBoundingClientRect(), m = 36;
    var w = g.maxX - g.minX + 2 * L.dx, h = g.maxY + 2 * L.dx;
    var k = Math.min((box.width - 2 * m) / w, (box.height - 2 * m - 24) / h, 2);
    state.kMin = Math.min(k / 4, 0.05);
    state.k = k;
    state.x = box.width / 2 - k * (g.minX + g.maxX) / 2;
    state.y = (box.height + 24) / 2 - k * g.maxY / 2;
    commitView();
  }
  function zoomAt(px, py, factor) {
    var k = Math.max(state.kMin || 0.01, Math.min(12, state.k * factor));
    var f = k / state.k;
    state.x = px - (px - state.x) * f;
    state.y = py - (py - state.y) * f;
    state.k = k;
    schedule();
  }
  function local(e) { var b = area.getBoundingClientRect(); return [e.clientX - b.left, e.clientY - b.top]; }
  function onPanel(e) { return e.target && e.target.closest && e.target.closest('.panel'); }
  area.addEventListener('wheel', function (e) {
    if (onPanel(e)) return;
    e.preventDefault();
    var p = local(e), unit = e.deltaMode === 1 ? 0.05 : e.deltaMode === 2 ? 1 : 0.0015;
    zoomAt(p[0], p[1], Math.exp(-e.deltaY * unit));
  }, { passive: false });
  var drag = null;
  area.addEventListener('pointerdown', function (e) {
    if (e.button !== 0 || onPanel(e)) return;
    drag = { id: e.pointerId, sx: e.clientX, sy: e.clientY, x: state.x, y: state.y, moved: false };
  });
  window.addEventListener('pointermove', function (e) {
    if (!drag || e.pointerId !== drag.id) return;
    var dx = e.clientX - drag.sx, dy = e.clientY - drag.sy;
    if (!drag.moved && dx * dx + dy * dy < 9) return;
    if (!drag.moved) { drag.moved = true; area.classList.add('dragging'); hideTip(); }
    state.x = drag.x + dx; state.y = drag.y + dy;
    schedule();
  });
  function endDrag(e) { if (drag && e.pointerId === drag.id) { drag = null; area.classList.remove('dragging'); } }
  window.addEventListener('pointerup', endDrag);
  window.addEventListener('pointercancel', endDrag);
  area.addEventListener('dblclick', function (e) { if (onPanel(e)) return; var p = local(e); zoomAt(p[0], p[1], e.shiftKey ? 0.5 : 2); });

  // Tooltip: every number of the hovered node.
  var hovered = null;
  function row(table, label, value, hint) {
    var tr = document.createElement('tr');
    [label, value, hint || ''].forEach(function (text, i) {
      var td = document.createElement('td');
      td.textContent = text;
      if (i === 1) td.className = 'num';
      if (i === 2) td.className = 'hint';
      tr.appendChild(td);
    });
    table.appendChild(tr);
  }
  function showTip(el, e) {
    var v = Number(el.getAttribute('data-node')), tree = state.tree, c = tree.cols, g = state.geo;
    if (hovered) hovered.classList.remove('hover');
    hovered = el; el.classList.add('hover');
    var head = 'node ' + v + (v === 0 ? ' (root)' : ' \u00b7 child of ' + c.parent[v]) + ' \u00b7 level ' + g.level[v];
    var status = [];
    if (c.terminal[v]) status.push('terminal');
    status.push(c.live[v] ? 'live' : 'closed');
    if (c.pruned[v]) status.push('pruned here');
    else if (g.greyed[v]) status.push('in a pruned branch');
    tip.textContent = '';
    var h = document.createElement('div'); h.className = 'tip-head'; h.textContent = head; tip.appendChild(h);
    var s = document.createElement('div'); s.className = 'tip-status'; s.textContent = status.join(' \u00b7 '); tip.appendChild(s);
    var t = document.createElement('table');
    row(t, 'reward', fmt(c.reward[v]), c.visits[v] > 0 ? 'mean of finished rollouts' : 'no visits: not compared');
    row(t, 'visits', fmt(c.visits[v]));
    row(t, 'uncertainty', fmt(c.uncertainty[v]));
    row(t, 'C', fmt(c.contrast[v]), v === 0 ? 'root: no siblings' : 'contrast vs siblings');
    row(t, 'w', fmt(c.weight[v]), v === 0 ? 'root' : 'priority weight (of ' + g.children[c.parent[v]].length + ')');
    row(t, 'gA', fmt(c.gradAlpha[v]), '\u2202 ln w / \u2202 ln \u03b1');
    row(t, 'gB', fmt(c.gradTau[v]), '\u2202 ln w / \u2202 ln \u03c4');
    row(t, 'branches', fmt(c.branches[v]), 'new rollouts from here (x = ' + fmt(c.mass[v]) + ')');
    row(t, 'depth', fmt(c.depth[v]), c.branches[v] > 0 ? data.depthMeaning : 'none started here');
    row(t, '\u03c8', fmt(c.priority[v]), 'priority vs uniform split');
    var kids = g.children[v].length;
    if (kids > 0) row(t, 'fork I', fmt(c.intensity[v]), kids === 1 ? '1 child: no contrast' : kids + ' children');
    tip.appendChild(t);
    tip.style.display = 'block';
    moveTip(e);
  }
  function moveTip(e) {
    // Above and to the right of the pointer first: trees widen downward, so that corner is
    // usually empty; flip where the window ends.
    var w = tip.offsetWidth, h = tip.offsetHeight, x = e.clientX + 16, y = e.clientY - h - 30;
    if (x + w > window.innerWidth - 4) x = Math.max(4, e.clientX - w - 16);
    if (y < 4) y = Math.min(e.clientY + 16, window.innerHeight - h - 4);
    tip.style.left = x + 'px'; tip.style.top = y + 'px';
  }
  function hideTip() {
    tip.style.display = 'none';
    if (hovered) { hovered.classList.remove('hover'); hovered = null; }
  }
  nodeLayer.addEventListener('pointerover', function (e) {
    if (drag && drag.moved) return;
    var el = e.target.closest('[data-node]');
    if (el) showTip(el, e);
  });
  nodeLayer.addEventListener('pointermove', function (e) { if (hovered) moveTip(e); });
  nodeLayer.addEventListener('pointerout', function (e) {
    if (!e.relatedTarget || !e.relatedTarget.closest || !e.relatedTarget.closest('[data-node]')) hideTip();
  });

  // Controls.
  var picker = $('picker');
  data.trees.forEach(function (tree, i) {
    var o = document.createElement('option');
    o.value = String(i);
    o.textContent = (i + 1) + '. ' + tree.id + ' \u2014 \u012a ' + short(tree.meanIntensity) + ' \u00b7 ' + tree.cols.parent.length + ' nodes';
    picker.appendChild(o);
  });
  picker.addEventListener('change', function () { show(Number(picker.value)); });
  $('prev').addEventListener('click', function () { show(state.pos - 1); });
  $('next').addEventListener('click', function () { show(state.pos + 1); });
  $('fit').addEventListener('click', fit);
  $('zoom-in').addEventListener('click', function () { var b = area.getBoundingClientRect(); zoomAt(b.width / 2, b.height / 2, 1.5); });
  $('zoom-out').addEventListener('click', function () { var b = area.getBoundingClientRect(); zoomAt(b.width / 2, b.height / 2, 1 / 1.5); });
  Array.prototype.forEach.call(document.querySelectorAll('input[name="metric"]'), function (input) {
    input.addEventListener('change', function () { if (input.checked) { state.metric = input.value; recolor(); } });
  });
  function setMetric(m) {
    var input = document.querySelector('input[name="metric"][value="' + m + '"]');
    input.checked = true; state.metric = m; recolor();
  }
  window.addEventListener('keydown', function (e) {
    if (e.target && (e.target.tagName === 'SELECT' || e.target.tagName === 'INPUT') && e.key !== 'Escape') return;
    var b = area.getBoundingClientRect(), step = 80;
    switch (e.key) {
      case '+': case '=': zoomAt(b.width / 2, b.height / 2, 1.5); break;
      case '-': case '_': zoomAt(b.width / 2, b.height / 2, 1 / 1.5); break;
      case '0': fit(); break;
      case 'ArrowLeft': panBy(step, 0); break;
      case 'ArrowRight': panBy(-step, 0); break;
      case 'ArrowUp': panBy(0, step); break;
      case 'ArrowDown': panBy(0, -step); break;
      case '[': show(state.pos - 1); break;
      case ']': show(state.pos + 1); break;
      case 'w': setMetric('weight'); break;
      case 'c': setMetric('contrast'); break;
      case 'r': setMetric('reward'); break;
      case 'u': setMetric('uncertainty'); break;
      case 'Escape': hideTip(); break;
      default: return;
    }
    e.preventDefault();
  });
  window.addEventListener('resize', function () { if (state.geo) fit(); });

  var start = data.initial, hash = /^#tree=(.*)$/.exec(location.hash);
  if (hash) {
    var wanted = decodeURIComponent(hash[1]);
    data.trees.forEach(function (tree, i) { if (tree.id === wanted) start = i; });
  }
  show(start);
  function panBy(dx, dy) { state.x += dx; state.y += dy; schedule(); }
  // For scripted checks (tests, the frame benchmark) and the browser console.
  window.traceAllocView = { show: show, setMetric: setMetric, state: state, zoomAt: zoomAt, panBy: panBy, fit: fit, commit: commitView };
})();
`;
