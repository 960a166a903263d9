// `extend`: a round's new nodes (as columns), updates and finished rollouts in one change, all
// or none — the same forest and plans as the one-by-one operations it replaces.
import { describe, expect, it } from 'vitest';
import { Bool, Field, FixedSizeList, Float32, makeData, makeVector, Table, tableToIPC, Utf8, vectorFromArray } from 'apache-arrow';
import type { NdArray } from '../src/forest/columnar.js';
import { encodeNpz } from '../src/forest/npz.js';
import type { PackedForest } from '../src/forest/packed.js';
import { encodeArrow } from '../src/forest/arrow-write.js';
import { createLiveForest } from '../src/live/create.js';
import type { RolloutInput } from '../src/live/extend.js';
import { LiveSession } from '../src/live/protocol.js';
import { snapshotLive } from '../src/live/snapshot.js';
import { generateForest } from '../src/synth/generate.js';
import { Rng } from '../src/util/random.js';

type Reply = { id: unknown; ok: boolean; result?: any; error?: { code: string; message: string; tree?: string; node?: number; field?: string } };

/** A round for `forest`: 1–3 new nodes under random nodes of some trees, a rollout down each new node, an update or two. */
function round(forest: PackedForest, seed: number) {
  const rng = new Rng(seed);
  const dim = forest.dim;
  const treeIds: string[] = [], parent: number[] = [], reward: number[] = [], visits: number[] = [], terminal: number[] = [];
  const embedding: number[] = [];
  const rollouts: RolloutInput[] = [];
  const sizes = new Map<string, number>();
  for (let t = 0; t < forest.treeCount; t++) sizes.set(forest.treeIds[t], forest.treeOffset[t + 1] - forest.treeOffset[t]);
  for (let t = 0; t < forest.treeCount; t++) {
    if (!rng.bernoulli(0.4)) continue;
    const id = forest.treeIds[t];
    for (let k = rng.int(1, 3); k > 0; k--) {
      const size = sizes.get(id)!;
      const p = rng.int(0, size - 1); // an existing node, or one added just before
      treeIds.push(id); parent.push(p); reward.push(rng.next()); visits.push(rng.int(0, 3)); terminal.push(rng.bernoulli(0.2) ? 1 : 0);
      for (let d = 0; d < dim; d++) embedding.push(rng.normal());
      rollouts.push({ tree: id, leaf: size, reward: rng.bernoulli(0.5) ? 1 : 0 });
      sizes.set(id, size + 1);
    }
  }
  const updates = [{ tree: forest.treeIds[0], node: 0, uncertainty: 0.25 }, { tree: forest.treeIds[1], node: 1, terminal: true }];
  const rows = {
    dim, treeIds, parent: Int32Array.from(parent), reward: Float64Array.from(reward), visits: Float64Array.from(visits),
    uncertainty: new Float64Array(parent.length), terminal: Uint8Array.from(terminal), embedding: Float32Array.from(embedding),
  };
  return { rows, updates, rollouts };
}

/** The round's columns as named arrays (copies, so a test may spoil them), for a payload. */
function rowArrays(rows: ReturnType<typeof round>['rows']): Map<string, NdArray> {
  const n = rows.treeIds.length;
  return new Map<string, NdArray>([
    ['tree_id', { kind: 'string', dtype: '<U8', shape: [n], data: [...rows.treeIds] }],
    ['parent', { kind: 'numeric', dtype: 'int32', shape: [n], data: rows.parent.slice() }],
    ['reward', { kind: 'numeric', dtype: 'float64', shape: [n], data: rows.reward.slice() }],
    ['visits', { kind: 'numeric', dtype: 'float64', shape: [n], data: rows.visits.slice() }],
    ['terminal', { kind: 'numeric', dtype: 'bool', shape: [n], data: rows.terminal.slice() }],
    ['embedding', { kind: 'numeric', dtype: 'float32', shape: [n, rows.dim], data: rows.embedding.slice() }],
  ]);
}

describe('extend: a round in one change', () => {
  it('equals the one-by-one operations it replaces: same forest, same plans, same first indices', async () => {
    const forest = generateForest({ trees: 12, dim: 5, seed: 3, minNodes: 3, maxNodes: 12 });
    const { rows, updates, rollouts } = round(forest, 7);
    const bulk = await createLiveForest({ dim: 5, backend: 'cpu', threads: 1 });
    const single = await createLiveForest({ dim: 5, backend: 'cpu', threads: 1 });
    try {
      bulk.addForest(forest);
      single.addForest(forest);
      await bulk.plan({ budget: 8 });
      await single.plan({ budget: 8 });
      const result = bulk.extend({ rows, updates, rollouts });

      single.update(updates);
      const first: Record<string, number> = {};
      for (let r = 0; r < rows.treeIds.length; r++) {
        const id = rows.treeIds[r];
        const v = single.addNodes(id, [{ parent: rows.parent[r], reward: rows.reward[r], visits: rows.visits[r], uncertainty: 0, terminal: rows.terminal[r] === 1, embedding: Array.from(rows.embedding.subarray(r * 5, r * 5 + 5)) }]);
        first[id] ??= v;
      }
      for (const r of rollouts) single.finishRollout(r.tree, { leaf: r.leaf! }, r.reward);

      expect(result).toEqual({ added: rows.treeIds.length, first, updated: 2, rollouts: rollouts.length });
      expect(snapshotLive(bulk)).toEqual(snapshotLive(single));
      const a = await bulk.plan({ budget: 8 }), b = await single.plan({ budget: 8 });
      expect(a.replanned).toEqual(b.replanned);
      expect(bulk.planJson({ trees: a.replanned })).toEqual(single.planJson({ trees: b.replanned }));
    } finally {
      bulk.destroy();
      single.destroy();
    }
  });

  it('serve: the new nodes as an Arrow stream or an .npz, rollouts through them; a bad round changes nothing', async () => {
    const forest = generateForest({ trees: 8, dim: 4, seed: 11, minNodes: 3, maxNodes: 9 });
    const { rows, rollouts } = round(forest, 5);
    const plans: unknown[] = [];
    for (const container of ['arrow', 'npz'] as const) {
      const s = new LiveSession({ backend: 'cpu', threads: 1 });
      const send = async (request: unknown) => JSON.parse((await s.handleLine(JSON.stringify(request)))!) as Reply;
      const sendFrame = async (header: Record<string, unknown>, payload: Uint8Array) => {
        const frame = s.binaryFrame(JSON.stringify({ ...header, bytes: payload.length }))!;
        expect(frame).toBeDefined();
        return JSON.parse(await frame.complete(payload.slice())) as Reply; // handed over: a misaligned .npz array moves within it
      };
      try {
        expect((await sendFrame({ op: 'add-columns' }, encodeArrow(forest, 'stream'))).ok).toBe(true);
        const payload = container === 'arrow' ? rowsArrow(rows) : encodeNpz(rowArrays(rows));
        const before = (await send({ op: 'stats' })).result;

        // All or none: a rollout whose leaf is past the round's nodes, a bad row, an unknown tree, a bad update.
        const badRollout = await sendFrame({ id: 1, op: 'extend', rollouts: [...rollouts, { tree: rows.treeIds[0], leaf: 999, reward: 1 }] }, payload);
        expect(badRollout.error).toMatchObject({ code: 'unknown_node', tree: rows.treeIds[0], field: `rollouts[${rollouts.length}].leaf` });
        const nan = rowArrays(rows);
        (nan.get('embedding')!.data as Float32Array)[rows.dim * (rows.treeIds.length - 1) + 2] = NaN;
        const badRow = await sendFrame({ id: 2, op: 'extend', rollouts }, encodeNpz(nan));
        expect(badRow.error).toMatchObject({ code: 'invalid_value', tree: rows.treeIds.at(-1), field: 'embedding[2]' });
        const stranger = rowArrays(rows);
        (stranger.get('tree_id')!.data as string[])[0] = 'nope';
        expect((await sendFrame({ id: 3, op: 'extend' }, encodeNpz(stranger))).error).toMatchObject({ code: 'unknown_tree', field: 'tree_id' });
        expect((await sendFrame({ id: 4, op: 'extend', updates: [{ tree: forest.treeIds[0], node: 99, reward: 1 }] }, payload)).error?.code).toBe('unknown_node');
        expect((await send({ id: 5, op: 'extend', rollouts: [{ tree: forest.treeIds[0], leaf: 0, reward: 1, extra: 1 }] })).error?.code).toBe('invalid_request');
        expect((await send({ op: 'stats' })).result).toEqual(before);

        const ok = await sendFrame({ id: 6, op: 'extend', rollouts }, payload);
        expect(ok.result).toMatchObject({ added: rows.treeIds.length, updated: 0, rollouts: rollouts.length });
        expect((await send({ op: 'stats' })).result).toMatchObject({ nodes: forest.nodeCount + rows.treeIds.length });
        // Updates and rollouts alone need no payload.
        expect((await send({ id: 7, op: 'extend', updates: [{ tree: forest.treeIds[0], node: 0, reward: 0.5 }], rollouts: [{ tree: forest.treeIds[0], path: [0], reward: 1 }] })).result)
          .toEqual({ added: 0, first: {}, updated: 1, rollouts: 1 });
        const { replanned: _r, ...plan } = (await send({ op: 'plan', budget: 6 })).result;
        plans.push(plan);
      } finally {
        s.destroy();
      }
    }
    expect(plans[1]).toEqual(plans[0]);
  });
});

/** The round's columns as an Arrow IPC stream (what pyarrow writes for `Service.extend`). */
function rowsArrow(rows: ReturnType<typeof round>['rows']): Uint8Array {
  const n = rows.treeIds.length;
  const bits = new Uint8Array((n + 7) >> 3);
  rows.terminal.forEach((t, r) => { if (t) bits[r >> 3] |= 1 << (r & 7); });
  const item = new Float32();
  return tableToIPC(new Table({
    tree_id: vectorFromArray(rows.treeIds, new Utf8()),
    parent: makeVector(rows.parent),
    reward: makeVector(rows.reward),
    visits: makeVector(rows.visits),
    terminal: makeVector(makeData({ type: new Bool(), length: n, nullCount: 0, data: bits })),
    embedding: makeVector(makeData({ type: new FixedSizeList(rows.dim, new Field('item', item, false)), length: n, nullCount: 0, child: makeData({ type: item, length: n * rows.dim, nullCount: 0, data: rows.embedding }) })),
  }), 'stream');
}
