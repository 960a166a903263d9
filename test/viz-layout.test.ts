// The tree layout behind `viz --svg` is linear in the tree's size (a deep chain was quadratic:
// d3's hierarchy() walked up from every node to set heights) and places every node exactly as
// d3's own hierarchy() + tree() do.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { hierarchy, tree as tidyTree } from 'd3-hierarchy';
import { describe, expect, it } from 'vitest';
import { childLists, LAYOUT, layoutTree } from '../src/viz/layout.js';
import { Rng } from '../src/util/random.js';
import { runCli } from './cli-helpers.js';

/** Counts every write of a d3 hierarchy node's `height` while `run` runs (an accessor on d3's node prototype). */
function heightWrites(run: () => void): number {
  const proto = Object.getPrototypeOf(hierarchy(0)) as object;
  const values = new WeakMap<object, number>();
  let writes = 0;
  Object.defineProperty(proto, 'height', {
    configurable: true,
    get(this: object) { return values.get(this) ?? 0; },
    set(this: object, v: number) { writes++; values.set(this, v); },
  });
  try {
    run();
  } finally {
    delete (proto as { height?: number }).height;
  }
  return writes;
}

function randomParents(rng: Rng, n: number): number[] {
  const parent = [-1];
  for (let v = 1; v < n; v++) parent.push(rng.bernoulli(0.6) ? v - 1 : rng.int(0, v - 1));
  return parent;
}

describe('tree layout', () => {
  it('sets node heights a linear number of times on a deep chain', () => {
    const n = 3000;
    const chain = Array.from({ length: n }, (_, v) => v - 1);
    const writes = heightWrites(() => layoutTree(chain, { dx: 20, dy: 64, badged: new Int32Array(n) }));
    expect(writes).toBeLessThanOrEqual(3 * n);
  });

  it('places every node where d3 hierarchy() + tree() place it (random trees, badges)', () => {
    const rng = new Rng(7);
    for (let run = 0; run < 40; run++) {
      const parent = randomParents(rng, rng.int(1, 300));
      const badged = Int32Array.from(parent, () => (rng.bernoulli(0.2) ? 1 : 0));
      const got = layoutTree(parent, { dx: 20, dy: 64, badged });
      const children = childLists(parent);
      const root = hierarchy(0, (v) => (children[v].length > 0 ? children[v] : null));
      tidyTree<number>().nodeSize([20, 64])
        .separation((a, b) => (a.parent === b.parent ? 1 : LAYOUT.cousinGap) + (badged[a.data] > 0 || badged[b.data] > 0 ? LAYOUT.badgeGap : 0))(root);
      root.each((d) => {
        expect(got.x[d.data]).toBe(d.x);
        expect(got.y[d.data]).toBe(d.y);
        expect(got.level[d.data]).toBe(d.depth);
      });
    }
  });

  it('viz --svg draws a 20,000-node chain', () => {
    const dir = mkdtempSync(join(tmpdir(), 'trace-alloc-chain-'));
    try {
      const n = 20000;
      const file = join(dir, 'chain.jsonl');
      writeFileSync(file, `${JSON.stringify({ id: 'chain', nodes: Array.from({ length: n }, (_, v) => (v === 0 ? {} : { parent: v - 1 })) })}\n`);
      const out = join(dir, 'chain.svg');
      const r = runCli(['viz', file, '--svg', '--out', out, '--backend', 'cpu']);
      expect(r.stderr).toBe('');
      expect(r.code).toBe(0);
      expect(r.stdout).toMatch(/20000 nodes/);
      expect(readFileSync(out, 'utf8').match(/<circle /g)?.length).toBe(n + 1); // and the legend's
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
