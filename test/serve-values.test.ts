import { describe, expect, it } from 'vitest';
import { LiveSession } from '../src/live/protocol.js';

type Reply = { id: unknown; ok: boolean; result?: any; error?: { code: string; message: string; tree?: string; node?: number; field?: string } };

async function send(session: LiveSession, request: unknown): Promise<Reply> {
  return JSON.parse((await session.handleLine(JSON.stringify(request)))!) as Reply;
}

/** `values`: a tree's backed-up values and visits read back, so a trainer keeps no second copy. */
describe('serve protocol: values', () => {
  it('reads back every node field but the embedding, as finish-rollout and update left them', async () => {
    const s = new LiveSession({ backend: 'cpu' });
    await send(s, { id: 1, op: 'add-tree', trees: [
      { id: 'q1', nodes: [{ embedding: [1, 0] }, { parent: 0, embedding: [1, 0.1], uncertainty: 0.25 }, { parent: 0, embedding: [0, 1] }] },
      { id: 'q2', nodes: [{ embedding: [0, 1] }] },
    ] });
    expect((await send(s, { id: 2, op: 'add-nodes', tree: 'q1', nodes: [{ parent: 1, embedding: [1, 0.2], terminal: true }, { parent: 3, embedding: [1, 0.3] }] })).ok).toBe(true);
    await send(s, { id: 3, op: 'finish-rollout', tree: 'q1', leaf: 3, reward: 1 });
    await send(s, { id: 4, op: 'finish-rollout', tree: 'q1', leaf: 2, reward: 0 });
    await send(s, { id: 5, op: 'finish-rollout', tree: 'q1', path: [0, 1], reward: 0.5 });
    await send(s, { id: 6, op: 'update', tree: 'q1', node: 4, reward: 0.75, visits: 3 });

    const all = await send(s, { id: 7, op: 'values' });
    expect(all).toEqual({ id: 7, ok: true, result: { trees: [
      { id: 'q1', parent: [-1, 0, 0, 1, 3], reward: [0.5, 0.75, 0, 1, 0.75], visits: [3, 2, 1, 1, 3], uncertainty: [0, 0.25, 0, 0, 0], terminal: [false, false, false, true, false] },
      { id: 'q2', parent: [-1], reward: [0], visits: [0], uncertainty: [0], terminal: [false] },
    ] } });
    // The mean moves as `r ← r + (reward − r)/n`: the root saw 1, 0, 0.5.
    expect((await send(s, { id: 8, op: 'values', trees: ['q2'] })).result.trees.map((t: { id: string }) => t.id)).toEqual(['q2']);
    expect((await send(s, { id: 9, op: 'values', trees: [] })).result).toEqual({ trees: [] });
    s.destroy();
  });

  it('refuses an unknown tree and unknown fields, and answers an empty forest with no trees', async () => {
    const s = new LiveSession({ backend: 'cpu' });
    expect((await send(s, { id: 1, op: 'values' })).result).toEqual({ trees: [] });
    expect((await send(s, { id: 2, op: 'values', trees: ['nope'] })).error).toMatchObject({ code: 'unknown_tree', field: 'tree' });
    await send(s, { id: 3, op: 'add-tree', tree: { id: 'a', nodes: [{ embedding: [1] }] } });
    expect((await send(s, { id: 4, op: 'values', trees: ['a', 'b'] })).error).toMatchObject({ code: 'unknown_tree' });
    expect((await send(s, { id: 5, op: 'values', tree: 'a' })).error).toMatchObject({ code: 'invalid_request' });
    expect((await send(s, { id: 6, op: 'values', trees: 'a' })).error).toMatchObject({ code: 'invalid_request' });
    // Integer ids name the tree whose id is their decimal string, as everywhere else.
    await send(s, { id: 7, op: 'add-tree', tree: { id: 7, nodes: [{ embedding: [1] }] } });
    expect((await send(s, { id: 8, op: 'values', trees: [7] })).result.trees[0].id).toBe('7');
    s.destroy();
  });
});
