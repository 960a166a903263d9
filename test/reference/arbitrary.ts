/**
 * fast-check arbitraries for the conformance tests: random forests in the plain JSON form of
 * SPEC §5 with the awkward cases the spec singles out (zero-norm and duplicate embeddings,
 * unvisited and terminal nodes, dead trees, wide groups, concentrated weights) and random
 * §4 parameters in both budget modes.
 */
import fc from 'fast-check';
import { childrenOf, liveness, type BudgetMode, type SpecForest, type SpecNode, type SpecParams, type SpecTree } from './spec.js';
import type { V2Params } from './v2.js';

const f32 = (min: number, max: number) => fc.float({ min, max, noNaN: true, noDefaultInfinity: true });

function vector(dim: number): fc.Arbitrary<number[]> {
  const entry = fc.oneof(fc.constantFrom(0, 1, -1, 2, 0.5), f32(-4, 4));
  return fc.oneof(
    { arbitrary: fc.array(entry, { minLength: dim, maxLength: dim }), weight: 4 },
    { arbitrary: fc.constant(new Array<number>(dim).fill(0)), weight: 1 }, // zero norm
  );
}

type Shape = 'random' | 'star' | 'bushy' | 'chain';
type TerminalMode = 'none' | 'some' | 'leaves' | 'all';

interface TreeDraft {
  n: number;
  shape: Shape;
  terminalMode: TerminalMode;
  parentPicks: number[];
  features: Omit<SpecNode, 'parent' | 'embedding'>[];
  terminalPicks: boolean[];
  palette: number[][];
  embeddingPicks: (number | number[])[];
  omitEmptyEmbedding: boolean;
  /** Most siblings alike and a few outliers: concentrated weights, so ψ_v reaches far above 1. */
  spiky: boolean;
}

const featureArb = fc.record(
  {
    reward: fc.oneof(fc.constantFrom(0, 0.5, 1, -1), f32(-2, 2)),
    visits: fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 6 })),
    uncertainty: fc.oneof(fc.constantFrom(0, 0.25, 1), f32(0, 3)),
  },
  { requiredKeys: [] }, // missing fields take the §1 defaults
);

export function treeArb(dim: number): fc.Arbitrary<TreeDraft> {
  const size = fc.oneof(fc.integer({ min: 1, max: 6 }), fc.integer({ min: 1, max: 40 }));
  const shape = fc.constantFrom<Shape>('random', 'star', 'bushy', 'chain');
  const terminalMode = fc.constantFrom<TerminalMode>('none', 'some', 'some', 'leaves', 'all');
  return fc.tuple(size, shape, terminalMode).chain(([n, sh, tm]) =>
    fc.record({
      n: fc.constant(n),
      shape: fc.constant(sh),
      terminalMode: fc.constant(tm),
      parentPicks: fc.array(fc.nat(), { minLength: n, maxLength: n }),
      features: fc.array(featureArb, { minLength: n, maxLength: n }),
      terminalPicks: fc.array(fc.boolean(), { minLength: n, maxLength: n }),
      palette: fc.array(vector(dim), { minLength: 1, maxLength: 3 }),
      // a palette index repeats an embedding exactly (duplicates); an array is a fresh one
      embeddingPicks: fc.array(fc.oneof(fc.integer({ min: 0, max: 2 }), vector(dim)), { minLength: n, maxLength: n }),
      omitEmptyEmbedding: fc.boolean(),
      spiky: fc.boolean(),
    }),
  );
}

function parentFor(shape: Shape, v: number, pick: number): number {
  switch (shape) {
    case 'star': return pick % 5 === 0 ? pick % v : 0; // wide root groups, k up to ~40
    case 'bushy': return pick % Math.min(v, 3);
    case 'chain': return v - 1 - (pick % Math.min(v, 2));
    default: return pick % v;
  }
}

function buildTree(d: TreeDraft, dim: number, id: string | undefined): SpecTree {
  const nodes: SpecNode[] = [];
  const parents = d.parentPicks.map((pick, v) => (v === 0 ? -1 : parentFor(d.shape, v, pick)));
  const hasChild = new Array<boolean>(d.n).fill(false);
  parents.forEach((p) => { if (p >= 0) hasChild[p] = true; });
  for (let v = 0; v < d.n; v++) {
    const outlier = !d.spiky || d.parentPicks[v] % 7 === 0;
    const node: SpecNode = { parent: parents[v], ...d.features[outlier ? v : 0] };
    const terminal =
      d.terminalMode === 'all' ? true
      : d.terminalMode === 'leaves' ? !hasChild[v] && d.terminalPicks[v]
      : d.terminalMode === 'some' ? d.terminalPicks[v] && d.parentPicks[v] % 3 === 0
      : false;
    if (terminal || d.parentPicks[v] % 2 === 0) node.terminal = terminal;
    const pick = d.embeddingPicks[outlier ? v : 0];
    const e = typeof pick === 'number' ? d.palette[pick % d.palette.length] : pick;
    if (dim > 0 || !d.omitEmptyEmbedding) node.embedding = e;
    nodes.push(node);
  }
  return id === undefined ? { nodes } : { id, nodes };
}

export interface Case {
  forest: SpecForest;
  format: 'json' | 'jsonl';
  params: SpecParams;
  /** Spell default-valued flags out on the command line. */
  explicit: boolean;
}

export const paramsArb = fc.record({
  alpha: fc.oneof(fc.constant(1), fc.double({ min: -3, max: 3, noNaN: true }).map((e) => 10 ** e)),
  // small τ concentrates the weights, so ψ_v = Π k·w climbs well above 1 and depths reach maxDepth
  tau: fc.oneof(fc.constant(0.5), fc.double({ min: -2, max: 2, noNaN: true }).map((e) => 10 ** e), fc.double({ min: -2, max: -0.7, noNaN: true }).map((e) => 10 ** e)),
  pruneRatio: fc.oneof(fc.constant(0.5), fc.constant(0), fc.double({ min: 0, max: 0.99, noNaN: true })),
  widen: fc.oneof(fc.constant(0.5), fc.constantFrom(0, 1), fc.double({ min: 0, max: 1, noNaN: true })),
  baseDepth: fc.oneof(fc.constant(4), fc.integer({ min: 1, max: 8 })),
  depthGain: fc.oneof(fc.constant(1), fc.constant(0), fc.double({ min: 0, max: 3, noNaN: true })),
  maxDepth: fc.option(fc.integer({ min: 1, max: 40 }), { nil: undefined }),
  budget: fc.oneof(
    fc.record({ kind: fc.constant('perTree' as const), budget: fc.oneof(fc.constant(16), fc.integer({ min: 0, max: 200 }), fc.constant(1000)) }),
    fc.record({ kind: fc.constant('global' as const), total: fc.integer({ min: 0, max: 600 }), minPerTree: fc.oneof(fc.constant(1), fc.integer({ min: 0, max: 3 })) }),
  ),
});

export const caseArb: fc.Arbitrary<Case> = fc.integer({ min: 0, max: 16 }).chain((dim) =>
  fc.record({
    dim: fc.constant(dim),
    drafts: fc.array(treeArb(dim), { minLength: 1, maxLength: 6 }),
    ids: fc.array(fc.option(fc.stringMatching(/^[a-z][a-z0-9-]{0,7}$/), { nil: undefined }), { minLength: 6, maxLength: 6 }),
    format: fc.constantFrom<'json' | 'jsonl'>('json', 'json', 'jsonl'),
    params: paramsArb,
    explicit: fc.boolean(),
  }).map(({ dim, drafts, ids, format, params, explicit }) => {
    // explicit ids are made unique and never collide with a defaulted positional id
    const trees = drafts.map((d, t) => buildTree(d, dim, ids[t] === undefined ? undefined : `${ids[t]}.${t}`));
    const forest: SpecForest = { dim, trees };
    let budget: BudgetMode = params.budget;
    if (budget.kind === 'global') {
      // the spare part of the total is what was drawn; the floor μ·|L| comes on top (§4 error otherwise)
      const liveTrees = trees.filter((t) => liveness(t, childrenOf(t))[0]).length;
      budget = { ...budget, total: budget.minPerTree * liveTrees + budget.total };
    }
    return { forest, format, params: { ...params, budget }, explicit };
  }),
);

/**
 * Forests of one-level trees whose siblings cannot be told apart (same features, same
 * embedding): every c is 0, every weight exactly 1/k, so every tie in the real-valued plan is
 * an exact tie in any implementation, and the spec's tie rules (smaller node, smaller tree)
 * decide it.
 */
export const indistinguishableCaseArb: fc.Arbitrary<Case> = fc.record({
  dim: fc.integer({ min: 0, max: 4 }),
  shared: featureArb,
  sharedVector: fc.array(fc.constantFrom(0, 1, -2, 0.5), { minLength: 4, maxLength: 4 }),
  trees: fc.array(fc.array(fc.boolean(), { minLength: 0, maxLength: 12 }), { minLength: 1, maxLength: 6 }),
  rootTerminal: fc.array(fc.boolean(), { minLength: 6, maxLength: 6 }),
  format: fc.constantFrom<'json' | 'jsonl'>('json', 'jsonl'),
  params: paramsArb,
}).map(({ dim, shared, sharedVector, trees, rootTerminal, format, params }) => {
  const embedding = sharedVector.slice(0, dim);
  const node = (parent: number, terminal: boolean): SpecNode => ({ parent, ...shared, terminal, embedding });
  const forest: SpecForest = {
    dim,
    trees: trees.map((leafTerminal, t) => ({
      nodes: [node(-1, rootTerminal[t]), ...leafTerminal.map((term) => node(0, term))],
    })),
  };
  let budget: BudgetMode = params.budget;
  if (budget.kind === 'global') {
    const liveTrees = forest.trees.filter((t) => liveness(t, childrenOf(t))[0]).length;
    budget = { ...budget, total: budget.minPerTree * liveTrees + budget.total };
  }
  return { forest, format, params: { ...params, budget }, explicit: false };
});

/** A v2 case: the v1 forest and settings plus v2's own, and how the command line spells them. */
export interface V2Case {
  forest: SpecForest;
  format: 'json' | 'jsonl';
  params: V2Params;
  /** Spell default-valued flags out on the command line. */
  explicit: boolean;
  /** `default`: no --rule flag; `v2`: `--rule v2`. */
  rule: 'spaced' | 'joined';
  /** A --widen to pass as well (v2 must accept and ignore it), or none. */
  widen?: number;
}

const v2ExtrasArb = fc.record({
  contestGain: fc.oneof(fc.constant(4), fc.constant(0), fc.double({ min: 0, max: 20, noNaN: true }), fc.constant(1e6)),
  treeFloor: fc.oneof(fc.constant(0.25), fc.double({ min: -3, max: 1, noNaN: true }).map((e) => 10 ** e), fc.constantFrom(1e-6, 1e6)),
  rule: fc.constantFrom<'spaced' | 'joined'>('spaced', 'joined'),
  passWiden: fc.boolean(),
});

/** The v1 random forests (caseArb) under random v2 settings, in both budget modes. */
export const v2CaseArb: fc.Arbitrary<V2Case> = fc.tuple(caseArb, v2ExtrasArb).map(([c, x]) => {
  const { widen, ...shared } = c.params;
  return {
    forest: c.forest,
    format: c.format,
    params: { ...shared, contestGain: x.contestGain, treeFloor: x.treeFloor, minDepth: 1 },
    explicit: c.explicit,
    rule: x.rule,
    widen: x.passWiden ? widen : undefined,
  };
});
