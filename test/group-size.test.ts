import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ForestError } from '../src/forest/errors.js';
import type { ForestInput } from '../src/forest/input.js';
import { checkGroupSizes, DEFAULT_MAX_GROUP_SIZE } from '../src/forest/limits.js';
import { packForest } from '../src/forest/packed.js';
import { createLiveForest } from '../src/live/create.js';
import { LiveSession } from '../src/live/protocol.js';
import { OptionError } from '../src/util/errors.js';
import { runCli } from './cli-helpers.js';

const dir = mkdtempSync(join(tmpdir(), 'trace-alloc-groups-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Tree "wide": root, one small fork under node 1, and `k` children under node 2. */
function wideForest(k: number): ForestInput {
  const nodes: ForestInput['trees'][number]['nodes'] = [{ embedding: [1, 0] }, { parent: 0, embedding: [1, 1], visits: 1 }, { parent: 0, embedding: [0, 1], visits: 1, reward: 1 }];
  for (let i = 0; i < k; i++) nodes.push({ parent: 2, embedding: [Math.cos(i), Math.sin(i)], visits: i % 3, reward: (i % 7) / 7 });
  return { dim: 2, trees: [{ id: 'small', nodes: [{ embedding: [1, 1] }, { parent: 0, embedding: [1, 0] }] }, { id: 'wide', nodes }] };
}

describe('maximum group size', () => {
  it('packForest refuses a node with more children than maxGroupSize, naming the tree, node and size; no cap by default', () => {
    const input = wideForest(DEFAULT_MAX_GROUP_SIZE + 1);
    expect(() => packForest(input)).not.toThrow();
    const err = (() => { try { packForest(input, { maxGroupSize: DEFAULT_MAX_GROUP_SIZE }); } catch (e) { return e; } })();
    expect(err).toBeInstanceOf(ForestError);
    expect((err as ForestError).location).toEqual({ tree: 1, treeId: 'wide', node: 2, field: 'children' });
    expect((err as Error).message).toBe('tree "wide" (#1), node 2, field "children": has 4097 children, more than the maximum group size 4096 (--max-group-size, maxGroupSize)');
    expect(() => packForest(wideForest(DEFAULT_MAX_GROUP_SIZE), { maxGroupSize: DEFAULT_MAX_GROUP_SIZE })).not.toThrow();
    expect(() => checkGroupSizes(packForest(wideForest(3)), 2)).toThrow(/node 2.*has 3 children/);
    for (const bad of [0, 1.5, NaN, -1]) expect(() => packForest(wideForest(1), { maxGroupSize: bad })).toThrow(OptionError);
  });

  it('the CLI refuses 5000 children by default (exit 2, one line naming tree, node and size) and accepts them with --max-group-size', () => {
    const file = join(dir, 'wide.json');
    writeFileSync(file, JSON.stringify(wideForest(5000)));
    for (const command of ['score', 'viz']) {
      const extra = command === 'viz' ? ['--out', join(dir, 'v.html')] : [];
      const r = runCli([command, file, '--backend', 'cpu', ...extra]);
      expect(r.code).toBe(2);
      expect(r.stdout).toBe('');
      expect(r.stderr).toBe('trace-alloc: tree "wide" (#1), node 2, field "children": has 5000 children, more than the maximum group size 4096 (--max-group-size, maxGroupSize)\n');
    }
    const lower = runCli(['score', file, '--backend', 'cpu', '--max-group-size', '10']);
    expect(lower.code).toBe(2);
    expect(lower.stderr).toMatch(/has 5000 children, more than the maximum group size 10/);
    expect(runCli(['score', file, '--backend', 'cpu', '--max-group-size', '0']).stderr).toMatch(/--max-group-size must be an integer >= 1, got 0/);
    const ok = runCli(['score', file, '--backend', 'cpu', '--max-group-size', '5000', '--budget', '4']);
    expect(ok.code).toBe(0);
    expect(JSON.parse(ok.stdout).trees).toHaveLength(2);
  });

  it('serve refuses an add-tree or add-nodes that would exceed the session cap and keeps its forest', async () => {
    const s = new LiveSession({ backend: 'cpu', maxGroupSize: 5 });
    const send = async (request: unknown) => JSON.parse((await s.handleLine(JSON.stringify(request)))!);
    const input = wideForest(5);
    expect((await send({ id: 1, op: 'add-tree', trees: input.trees })).ok).toBe(true);
    const tooWide = await send({ id: 2, op: 'add-tree', tree: { ...wideForest(6).trees[1], id: 'wider' } });
    expect(tooWide.ok).toBe(false);
    expect(tooWide.error).toMatchObject({ code: 'invalid_value', tree: 'wider', node: 2, field: 'children' });
    expect(tooWide.error.message).toMatch(/has 6 children, more than the maximum group size 5/);
    const batch = await send({ id: 3, op: 'add-tree', trees: [{ ...wideForest(6).trees[1], id: 'w2' }] });
    expect(batch.error).toMatchObject({ code: 'invalid_value', tree: 'w2', node: 2, field: 'children' });
    const grow = await send({ id: 4, op: 'add-nodes', tree: 'wide', nodes: [{ parent: 1, embedding: [0, 0] }, { parent: 2, embedding: [1, 2] }] });
    expect(grow.error).toMatchObject({ code: 'invalid_value', tree: 'wide', node: 2, field: 'children' });
    expect(grow.error.message).toMatch(/has 6 children/);
    // Nothing changed: still two trees, node 1 still childless, and the forest still plans.
    const stats = await send({ id: 5, op: 'stats' });
    expect(stats.result.trees).toBe(2);
    expect(stats.result.nodes).toBe(2 + 3 + 5);
    expect((await send({ id: 6, op: 'plan', budget: 4 })).ok).toBe(true);
    // The default session cap is 4096.
    const d = new LiveSession({ backend: 'cpu' });
    const reply = JSON.parse((await d.handleLine(JSON.stringify({ op: 'add-tree', trees: wideForest(4097).trees })))!);
    expect(reply.error).toMatchObject({ code: 'invalid_value', tree: 'wide', node: 2, field: 'children' });
    d.destroy();
    s.destroy();
  });

  it('serve --max-group-size sets the session cap', () => {
    const line = JSON.stringify({ id: 1, op: 'add-tree', tree: wideForest(3).trees[1] });
    const r = runCli(['serve', '--stdio', '--backend', 'cpu', '--max-group-size', '2'], `${line}\n`);
    expect(r.code).toBe(0);
    const reply = JSON.parse(r.stdout);
    expect(reply.error).toMatchObject({ code: 'invalid_value', tree: 'wide', node: 2, field: 'children' });
    expect(reply.error.message).toMatch(/has 3 children, more than the maximum group size 2/);
  });

  it('live forests take maxGroupSize (no cap by default)', async () => {
    const live = await createLiveForest({ dim: 2, backend: 'cpu', maxGroupSize: 3 });
    expect(() => live.addTree(wideForest(4).trees[1])).toThrow(/has 4 children, more than the maximum group size 3/);
    live.addTree(wideForest(3).trees[1]);
    expect(() => live.addNodes('wide', [{ parent: 2, embedding: [0, 1] }])).toThrow(/has 4 children/);
    live.destroy();
    await expect(createLiveForest({ dim: 2, backend: 'cpu', maxGroupSize: 0 })).rejects.toThrow(OptionError);
  });
});
