import { describe, expect, it } from 'vitest';
import { ForestError } from '../src/forest/errors.js';
import type { ForestInput } from '../src/forest/input.js';
import { parseForest } from '../src/forest/load.js';
import { packForest } from '../src/forest/packed.js';

const good = (): ForestInput => ({
  dim: 2,
  trees: [
    { id: 'a', nodes: [{ parent: -1, embedding: [1, 0] }, { parent: 0, embedding: [0, 1] }] },
    { id: 'b', nodes: [{ parent: -1, embedding: [1, 1] }, { parent: 0, embedding: [1, 2] }, { parent: 0, embedding: [2, 1] }] },
  ],
});

function rejection(mutate: (f: ForestInput) => void): ForestError {
  const forest = good();
  mutate(forest);
  try {
    packForest(forest);
  } catch (err) {
    expect(err).toBeInstanceOf(ForestError);
    return err as ForestError;
  }
  throw new Error('expected the forest to be rejected');
}

describe('forest validation names the tree, the node and the field', () => {
  const cases: Array<[string, (f: ForestInput) => void, { tree?: number; treeId?: string; node?: number; field: string }]> = [
    ['parent out of range', (f) => { f.trees[1].nodes[2].parent = 7; }, { tree: 1, treeId: 'b', node: 2, field: 'parent' }],
    ['parent not before the child', (f) => { f.trees[1].nodes[1].parent = 1; }, { tree: 1, node: 1, field: 'parent' }],
    ['root with a parent', (f) => { f.trees[0].nodes[0].parent = 0; }, { tree: 0, node: 0, field: 'parent' }],
    ['missing parent', (f) => { delete f.trees[0].nodes[1].parent; }, { tree: 0, node: 1, field: 'parent' }],
    ['fractional parent', (f) => { f.trees[0].nodes[1].parent = 0.5; }, { tree: 0, node: 1, field: 'parent' }],
    ['NaN reward', (f) => { f.trees[1].nodes[1].reward = NaN; }, { tree: 1, node: 1, field: 'reward' }],
    ['infinite reward', (f) => { f.trees[1].nodes[1].reward = Infinity; }, { tree: 1, node: 1, field: 'reward' }],
    ['string reward', (f) => { (f.trees[1].nodes[1] as Record<string, unknown>).reward = '0.5'; }, { tree: 1, node: 1, field: 'reward' }],
    ['negative visits', (f) => { f.trees[0].nodes[1].visits = -1; }, { tree: 0, node: 1, field: 'visits' }],
    ['fractional visits', (f) => { f.trees[0].nodes[1].visits = 1.5; }, { tree: 0, node: 1, field: 'visits' }],
    ['negative uncertainty', (f) => { f.trees[1].nodes[2].uncertainty = -0.1; }, { tree: 1, node: 2, field: 'uncertainty' }],
    ['NaN uncertainty', (f) => { f.trees[1].nodes[2].uncertainty = NaN; }, { tree: 1, node: 2, field: 'uncertainty' }],
    ['non-boolean terminal', (f) => { (f.trees[1].nodes[2] as Record<string, unknown>).terminal = 1; }, { tree: 1, node: 2, field: 'terminal' }],
    ['short embedding', (f) => { f.trees[1].nodes[2].embedding = [1]; }, { tree: 1, node: 2, field: 'embedding' }],
    ['missing embedding with dim > 0', (f) => { delete f.trees[0].nodes[1].embedding; }, { tree: 0, node: 1, field: 'embedding' }],
    ['NaN inside an embedding', (f) => { f.trees[1].nodes[0].embedding = [1, NaN]; }, { tree: 1, node: 0, field: 'embedding[1]' }],
    ['Infinity inside an embedding', (f) => { f.trees[1].nodes[0].embedding = [-Infinity, 1]; }, { tree: 1, node: 0, field: 'embedding[0]' }],
    ['duplicate tree ids', (f) => { f.trees[1].id = 'a'; }, { tree: 1, treeId: 'a', field: 'id' }],
    ['a defaulted id colliding with an explicit one', (f) => { f.trees[0].id = '1'; delete f.trees[1].id; }, { tree: 1, treeId: '1', field: 'id' }],
    ['a tree without nodes', (f) => { f.trees[1].nodes = []; }, { tree: 1, field: 'nodes' }],
  ];
  for (const [name, mutate, where] of cases) {
    it(`rejects ${name}`, () => {
      const err = rejection(mutate);
      expect(err.location).toMatchObject(where);
      expect(err.message).toContain(`field ${JSON.stringify(where.field)}`);
      if (where.node !== undefined) expect(err.message).toContain(`node ${where.node}`);
      if (where.tree !== undefined) expect(err.message).toContain(`#${where.tree}`);
    });
  }

  it('rejects a negative or fractional dim', () => {
    expect(() => packForest({ dim: -1, trees: [] })).toThrow(/field "dim"/);
    expect(() => packForest({ dim: 1.5, trees: [] })).toThrow(/field "dim"/);
  });

  it('accepts an empty forest and fills defaults', () => {
    expect(packForest({ dim: 3, trees: [] }).treeCount).toBe(0);
    const f = packForest({ trees: [{ nodes: [{}, { parent: 0 }] }] });
    expect(f.dim).toBe(0);
    expect(f.treeIds).toEqual(['0']);
    expect(Array.from(f.visits)).toEqual([0, 0]);
    expect(Array.from(f.terminal)).toEqual([0, 0]);
  });
});

describe('files', () => {
  it('reads NaN and Infinity tokens and rejects them by name', () => {
    const text = '{"dim":1,"trees":[{"id":"q","nodes":[{"parent":-1,"embedding":[0]},{"parent":0,"reward":NaN,"embedding":[1]}]}]}';
    expect(() => parseForest(text, 'json')).toThrow(/tree "q" \(#0\), node 1, field "reward": must be a finite number, got NaN/);
    const inf = '{"id":"z","nodes":[{"parent":-1,"embedding":[-Infinity]}]}\n';
    expect(() => parseForest(inf, 'jsonl')).toThrow(/tree "z" \(#0\), node 0, field "embedding\[0\]"/);
  });

  it('keeps NaN-looking text inside strings', () => {
    const f = parseForest('{"trees":[{"id":"NaN Infinity","nodes":[{"parent":-1}]}]}', 'json');
    expect(f.treeIds).toEqual(['NaN Infinity']);
  });

  it('names the line of a non-object JSON Lines entry', () => {
    const text = '{"nodes":[{"parent":-1}]}\n\n[1,2]\n';
    expect(() => parseForest(text, 'jsonl')).toThrow(/^line 3, tree #1: each line must be a tree object/);
    expect(() => parseForest('{"nodes":[{"parent":-1}]}\n{"nodes": [\n', 'jsonl')).toThrow(/^line 2, tree #1: not valid JSON/);
  });

  it('takes dim from the first embedding in JSON Lines and checks the rest against it', () => {
    const text = '{"nodes":[{"parent":-1,"embedding":[1,2,3]}]}\n{"nodes":[{"parent":-1,"embedding":[1,2]}]}\n';
    expect(() => parseForest(text, 'jsonl')).toThrow(/tree "1" \(#1\), node 0, field "embedding": must have 3 numbers/);
  });

  it('rejects an empty file', () => {
    expect(() => parseForest('', 'json')).toThrow(/empty/);
    expect(() => parseForest('  \n\n', 'jsonl')).toThrow(/empty/);
  });

  it('sniffs JSON and JSON Lines when no format is given', () => {
    expect(parseForest('{"dim":0,"trees":[{"nodes":[{}]}]}').treeCount).toBe(1);
    expect(parseForest('{"nodes":[{}]}\n{"nodes":[{},{"parent":0}]}\n').treeCount).toBe(2);
    expect(parseForest('{"nodes":[{}]}').treeCount).toBe(1);
  });
});
