import { describe, expect, it } from 'vitest';
import { allocate } from '../src/allocate/allocate.js';
import { planToJson } from '../src/allocate/plan.js';
import { packForest } from '../src/forest/packed.js';
import { scoreCpu } from '../src/score/cpu.js';
import { LiveSession } from '../src/live/protocol.js';

type Reply = { id: unknown; ok: boolean; result?: any; error?: { code: string; message: string; tree?: string; node?: number; field?: string } };

async function send(session: LiveSession, request: unknown): Promise<Reply> {
  const line = typeof request === 'string' ? request : JSON.stringify(request);
  const out = await session.handleLine(line);
  expect(out).toBeDefined();
  expect(out).not.toContain('\n');
  return JSON.parse(out!) as Reply;
}

/** What a client receives: JSON has no -0. */
const viaJson = (x: unknown) => JSON.parse(JSON.stringify(x));

const trees = [
  { id: 'q1', nodes: [{ embedding: [1, 0] }, { parent: 0, embedding: [1, 0.01], visits: 2, reward: 1 }, { parent: 0, embedding: [1, 0.02], visits: 2, reward: 0 }, { parent: 0, embedding: [0, 1], visits: 1, reward: 0.5, uncertainty: 0.3 }] },
  { id: 'q2', nodes: [{ embedding: [0, 1] }, { parent: 0, embedding: [0.5, 1] }, { parent: 1, embedding: [0.4, 1], terminal: true }, { parent: 1, embedding: [0.6, 1] }] },
];

describe('serve protocol (in process)', () => {
  it('drives a live forest and plans exactly what `score` would on the same forest', async () => {
    const s = new LiveSession({ backend: 'cpu' });
    expect(await send(s, { id: 1, op: 'add-tree', tree: trees[0] })).toEqual({ id: 1, ok: true, result: { tree: 'q1', nodes: 4, trees: 1 } });
    expect((await send(s, { id: 'b', op: 'add-tree', trees: [trees[1]] })).result).toEqual({ trees: 2, added: ['q2'] });
    const added = await send(s, { id: 3, op: 'add-nodes', tree: 'q2', nodes: [{ parent: 3, embedding: [0.6, 0.9] }, { parent: 3, embedding: [0.7, 0.9] }] });
    expect(added.result).toEqual({ tree: 'q2', first: 4, nodes: 6 });
    expect((await send(s, { id: 4, op: 'finish-rollout', tree: 'q2', leaf: 5, reward: 1 })).result).toEqual({ tree: 'q2', path: [0, 1, 3, 5] });
    expect((await send(s, { id: 5, op: 'update', updates: [{ tree: 'q1', node: 3, visits: 4, reward: 0.25 }, { tree: 'q2', node: 4, terminal: true }] })).result).toEqual({ updated: 2 });

    const plan = await send(s, { id: 6, op: 'plan', totalBudget: 20, scores: true });
    expect(plan.ok).toBe(true);
    // The same forest, as a file would hold it after these changes, through score + allocate.
    const q2 = structuredClone(trees[1]) as any;
    q2.nodes.push({ parent: 3, embedding: [0.6, 0.9], terminal: true }, { parent: 3, embedding: [0.7, 0.9], visits: 1, reward: 1 });
    for (const v of [0, 1, 3]) { q2.nodes[v].visits = 1; q2.nodes[v].reward = 1; }
    const q1 = structuredClone(trees[0]) as any;
    q1.nodes[3].visits = 4; q1.nodes[3].reward = 0.25;
    const forest = packForest({ trees: [q1, q2] });
    const scores = scoreCpu(forest);
    const expected = viaJson(planToJson(forest, scores, allocate(forest, scores, { totalBudget: 20 }), { includeScores: true }));
    const { replanned, ...got } = plan.result;
    expect(got).toEqual(expected);
    expect(replanned).toEqual(['q1', 'q2']);

    // Only the tree that changed is re-planned; `changed` returns just its plan.
    await send(s, { id: 7, op: 'update', tree: 'q1', node: 1, reward: 0.5 });
    const again = await send(s, { id: 8, op: 'plan', totalBudget: 20, changed: true });
    expect(again.result.replanned.length).toBeGreaterThanOrEqual(1);
    expect(again.result.trees.map((t: { id: string }) => t.id)).toEqual(again.result.replanned);

    const stats = await send(s, { id: 9, op: 'stats' });
    expect(stats.result).toMatchObject({ backend: 'cpu', dim: 2, trees: 2, nodes: 10, groups: 4, dirtyGroups: 0 });
    expect((await send(s, { id: 10, op: 'remove-tree', tree: 'q1' })).result).toEqual({ removed: 1, trees: 1 });
    const sc = await send(s, { id: 11, op: 'scores' });
    expect(sc.result.trees.map((t: { id: string }) => t.id)).toEqual(['q2']);
    s.destroy();
  });

  it('answers every bad request with an error response and keeps the forest', async () => {
    const s = new LiveSession({ backend: 'cpu' });
    await send(s, { id: 1, op: 'add-tree', tree: trees[0] });
    const cases: [unknown, string, Partial<Reply['error']>?][] = [
      ['{"id": 2, "op": "plan"', 'parse_error'],
      ['[1, 2]', 'invalid_request'],
      [{ id: 3 }, 'invalid_request'],
      [{ id: 4, op: 'explode' }, 'unknown_op'],
      [{ id: 5, op: 'plan', total_budget: 3 }, 'invalid_request'],
      [{ id: 6, op: 'update', tree: 'nope', node: 0, reward: 1 }, 'unknown_tree', { field: 'tree' }],
      [{ id: 7, op: 'update', tree: 'q1', node: 9, reward: 1 }, 'unknown_node', { tree: 'q1', node: 9, field: 'node' }],
      [{ id: 8, op: 'update', tree: 'q1', node: 1, visits: 1.5 }, 'invalid_value', { tree: 'q1', node: 1, field: 'visits' }],
      [{ id: 9, op: 'add-nodes', tree: 'q1', nodes: [{ parent: 0, embedding: [1] }] }, 'invalid_value', { tree: 'q1', node: 4, field: 'embedding' }],
      [{ id: 10, op: 'add-tree', tree: trees[0] }, 'duplicate_tree', { tree: 'q1', field: 'id' }],
      [{ id: 11, op: 'finish-rollout', tree: 'q1', path: [0, 2, 1], reward: 1 }, 'invalid_value', { tree: 'q1', node: 1, field: 'path[2]' }],
      [{ id: 12, op: 'finish-rollout', tree: 'q1', leaf: 1, reward: 'yes' }, 'invalid_value', { field: 'reward' }],
      [{ id: 13, op: 'plan', totalBudget: -1 }, 'invalid_options'],
      [{ id: 14, op: 'plan', budget: { q1: 2.5 } }, 'invalid_options'],
      [{ id: 15, op: 'set-params', tau: 0 }, 'invalid_options'],
      [{ id: 16, op: 'remove-tree', trees: ['q1', 'zz'] }, 'unknown_tree'],
      [{ id: 17, op: 'update', updates: [{ tree: 'q1', node: 1, reward: 0 }, { tree: 'q1', node: 2, rewad: 1 }] }, 'invalid_request'],
    ];
    for (const [request, code, where] of cases) {
      const reply = await send(s, request);
      expect(reply.ok, JSON.stringify(request)).toBe(false);
      expect(reply.error!.code, JSON.stringify(request)).toBe(code);
      expect(reply.error!.message.length).toBeGreaterThan(0);
      if (where) expect(reply.error).toMatchObject(where);
      expect(reply.id).toEqual(typeof request === 'object' && request !== null && 'id' in request ? (request as { id: unknown }).id : null);
    }
    // Nothing above changed the forest.
    const plan = await send(s, { id: 99, op: 'plan', budget: 8, scores: true });
    const forest = packForest({ trees: [trees[0]] });
    const scores = scoreCpu(forest);
    const { replanned, ...got } = plan.result;
    expect(got).toEqual(viaJson(planToJson(forest, scores, allocate(forest, scores, { budget: 8 }), { includeScores: true })));
    expect(replanned).toEqual(['q1']);
    s.destroy();
  });

  it('takes the dimension from the first good tree, and a bad first tree creates no forest', async () => {
    const s = new LiveSession({ backend: 'cpu' });
    expect((await send(s, { id: 1, op: 'plan' })).result).toEqual({ params: { alpha: 1, tau: 0.5, rule: 'v5' }, trees: [], replanned: [] });
    const bad = await send(s, { id: 2, op: 'add-tree', tree: { id: 'x', nodes: [{ embedding: [1, 2, 3] }, { parent: 0, embedding: [1, 2] }] } });
    expect(bad.error).toMatchObject({ code: 'invalid_value', tree: 'x', node: 1, field: 'embedding' });
    expect((await send(s, { id: 3, op: 'stats' })).result.trees).toBe(0);
    await send(s, { id: 4, op: 'add-tree', tree: { id: 'y', nodes: [{ embedding: [1, 2] }] } });
    expect((await send(s, { id: 5, op: 'stats' })).result).toMatchObject({ dim: 2, trees: 1 });
    s.destroy();
  });
});

describe('serve --stdio over a pipe', () => {
  it('answers every line when the client writes megabytes at once and closes its end', async () => {
    const { spawn } = await import('node:child_process');
    const { fileURLToPath } = await import('node:url');
    const cli = fileURLToPath(new URL('../dist/cli/main.js', import.meta.url));
    // Lines that arrive faster than they are answered fill the reader's queue, so the pipe is
    // throttled; it must be resumed (a throttled pipe left stopped ended the service at the next
    // empty event loop, exit 0, with hundreds of lines unanswered).
    // About 7 MB of lines: 60 trees of 300 nodes (embeddings as JSON numbers), each planned.
    let seed = 1;
    const rand = () => ((seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648);
    const requests: string[] = [];
    for (let t = 0; t < 60; t++) {
      const nodes = [{ embedding: Array.from({ length: 16 }, rand) }, ...Array.from({ length: 300 }, (_, j) => ({ parent: Math.floor(rand() * (j + 1)), embedding: Array.from({ length: 16 }, rand), visits: 1, reward: rand() }))];
      requests.push(JSON.stringify({ id: 2 * t, op: 'add-tree', tree: { id: `t${t}`, nodes } }), JSON.stringify({ id: 2 * t + 1, op: 'plan', budget: 8 }));
    }
    const child = spawn(process.execPath, [cli, 'serve', '--stdio', '--backend', 'cpu'], { stdio: ['pipe', 'pipe', 'pipe'] });
    const out: Buffer[] = [];
    child.stdout.on('data', (b: Buffer) => out.push(b));
    const exit = new Promise<number | null>((resolve) => child.on('close', resolve));
    child.stdin.end(requests.map((r) => `${r}\n`).join(''));
    expect(await exit).toBe(0);
    const lines = Buffer.concat(out).toString('utf8').trim().split('\n');
    expect(lines).toHaveLength(requests.length);
    expect(lines.map((l) => JSON.parse(l).id)).toEqual(requests.map((_, i) => i));
  }, 120_000);
});
