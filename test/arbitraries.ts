import fc from 'fast-check';
import type { ForestInput, NodeInput, TreeInput } from '../src/forest/input.js';

/** Random valid forests for property tests: small trees with every edge case of SPEC §1–§2 reachable. */
export interface ForestArbOptions {
  maxTrees?: number;
  maxNodes?: number;
  maxDim?: number;
}

const embeddingValue = fc.oneof(
  { weight: 6, arbitrary: fc.double({ min: -4, max: 4, noNaN: true }) },
  { weight: 1, arbitrary: fc.constant(0) },
);

function nodeArb(dim: number, parentMax: number, pool: number[][]): fc.Arbitrary<NodeInput> {
  return fc.record({
    parent: parentMax < 0 ? fc.constant(-1) : fc.integer({ min: 0, max: parentMax }),
    reward: fc.oneof(fc.constantFrom(0, 0.5, 1), fc.double({ min: -2, max: 2, noNaN: true })),
    visits: fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 20 })),
    uncertainty: fc.oneof(fc.constant(0), fc.double({ min: 0, max: 3, noNaN: true })),
    terminal: fc.boolean(),
    embedding: fc.oneof(
      { weight: 5, arbitrary: fc.array(embeddingValue, { minLength: dim, maxLength: dim }) },
      // Duplicates and zero vectors: the near-duplicate and zero-norm paths of SPEC §2.
      { weight: 1, arbitrary: fc.constantFrom(...pool) },
      { weight: 1, arbitrary: fc.constant(new Array<number>(dim).fill(0)) },
    ),
  });
}

export function forestArb(options: ForestArbOptions = {}): fc.Arbitrary<ForestInput> {
  const { maxTrees = 4, maxNodes = 14, maxDim = 6 } = options;
  return fc.integer({ min: 0, max: maxDim }).chain((dim) =>
    fc.array(fc.array(embeddingValue, { minLength: dim, maxLength: dim }), { minLength: 1, maxLength: 2 }).chain((pool) =>
      fc.array(
        fc.integer({ min: 1, max: maxNodes }).chain((n) =>
          fc.tuple(...Array.from({ length: n }, (_, v) => nodeArb(dim, v - 1, pool))).map((nodes): TreeInput => ({ nodes })),
        ),
        { minLength: 1, maxLength: maxTrees },
      ).map((trees): ForestInput => ({ dim, trees: trees.map((t, i) => ({ id: `tree-${i}`, nodes: t.nodes })) })),
    ),
  );
}
