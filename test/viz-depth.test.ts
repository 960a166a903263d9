import { describe, expect, it } from 'vitest';
import { allocate } from '../src/allocate/allocate.js';
import { scoreCpu } from '../src/score/cpu.js';
import { generateForest } from '../src/synth/generate.js';
import { renderTreeView } from '../src/viz/html.js';
import { renderTreeSvg } from '../src/viz/svg.js';

/** The plan's `depth` has one meaning per rule, and the view says which (docs/ALGORITHM.md, "Depth"). */
describe('what the view says depth is', () => {
  const forest = generateForest({ trees: 3, dim: 4, seed: 7, minNodes: 6, maxNodes: 20 });
  for (const [rule, says, never] of [[undefined, /fork horizon/, /steps deep/], ['v1', /d steps deep/, /fork horizon/]] as const) {
    it(`under ${rule ?? 'the default rule'}: the legend, the tooltip text and the SVG key`, () => {
      const params = rule ? { rule } : {};
      const scores = scoreCpu(forest, params);
      const allocation = allocate(forest, scores, { budget: 8, ...params });
      const { html } = renderTreeView(forest, scores, allocation);
      const data = JSON.parse(/<script type="application\/json" id="trace-alloc-data">(.*?)<\/script>/s.exec(html)![1]) as { depthMeaning: string };
      const legend = /<div class="key">(.*?)<\/div>/s.exec(html)![1];
      expect(legend).toMatch(says);
      expect(legend).not.toMatch(never);
      expect(data.depthMeaning).toMatch(rule === 'v1' ? /steps per new rollout/ : /fork horizon/);
      const svg = renderTreeSvg(forest, scores, allocation, 0);
      expect(svg).toMatch(rule === 'v1' ? /d steps deep/ : /d: fork horizon/);
    });
  }
});
