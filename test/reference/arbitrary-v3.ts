/**
 * fast-check forests and settings that reach the regimes where rule v3 decides something
 * (docs/ALGORITHM.md, "v3: a fresh share, and forks that earn their budget by contest"):
 * contested forks (near-duplicate siblings with different outcomes), unvisited children, chains
 * below forks (regions of several nodes), terminal nodes that head groups (the root included),
 * all-equal rewards, rewards outside [0, 1] and near ±10³⁰⁸, embeddings near 10⁻¹⁷⁰ and 10²⁰⁰,
 * deep paths of contested forks whose ψ leaves the float64 range either way, weights that
 * underflow, both budget modes, and every v3 setting away from its default.
 */
import fc from 'fast-check';
import type { SpecForest, SpecNode, SpecTree } from './spec.js';
import { liveness, type V3Budget, type V3Params } from './v3.js';
import { siblingGroups } from './v3-scores.js';

type RewardStyle = 'binary' | 'equal' | 'wide' | 'extreme' | 'mixed';
type UncertaintyStyle = 'zero' | 'equal' | 'mixed' | 'extreme';
type EmbeddingStyle = 'duplicates' | 'near' | 'random' | 'tiny' | 'huge' | 'zeros';
type TerminalStyle = 'none' | 'leaves' | 'heads' | 'root' | 'random';

/** One tree, grown breadth first: node q (in index order) gets `childCounts[q]` children until `size`. */
interface TreeDraft {
  size: number;
  childCounts: number[];
  rewardStyle: RewardStyle;
  uncertaintyStyle: UncertaintyStyle;
  embeddingStyle: EmbeddingStyle;
  terminalStyle: TerminalStyle;
  picks: { visits: number; reward: number; uncertainty: number; terminal: number; embedding: number }[];
  /** Per node, dim entries in [−1, 1]: the offset of a sibling from its group's base vector. */
  noise: number[][];
  /** Base vectors of the sibling groups (a group of parent p uses bases[p mod length]). */
  bases: number[][];
  equalReward: number;
  /** Leave default-valued fields out of the JSON (section 1 defaults). */
  omitDefaults: boolean;
}

const f32 = (min: number, max: number) => fc.float({ min: Math.fround(min), max: Math.fround(max), noNaN: true, noDefaultInfinity: true });

const childCount = fc.oneof(
  { arbitrary: fc.constant(0), weight: 3 },
  { arbitrary: fc.constant(1), weight: 3 }, // chains: regions of several nodes
  { arbitrary: fc.integer({ min: 2, max: 4 }), weight: 4 },
  { arbitrary: fc.integer({ min: 5, max: 9 }), weight: 1 },
);

const pick = fc.record({ visits: fc.nat(19), reward: fc.nat(999), uncertainty: fc.nat(999), terminal: fc.nat(11), embedding: fc.nat(11) });

function treeDraftArb(dim: number): fc.Arbitrary<TreeDraft> {
  const size = fc.oneof(fc.integer({ min: 1, max: 8 }), fc.integer({ min: 1, max: 40 }));
  return size.chain((n) => fc.record({
    size: fc.constant(n),
    childCounts: fc.array(childCount, { minLength: n, maxLength: n }),
    rewardStyle: fc.constantFrom<RewardStyle>('binary', 'binary', 'binary', 'equal', 'wide', 'extreme', 'mixed'),
    uncertaintyStyle: fc.constantFrom<UncertaintyStyle>('zero', 'zero', 'equal', 'mixed', 'mixed', 'extreme'),
    embeddingStyle: fc.constantFrom<EmbeddingStyle>('near', 'near', 'near', 'duplicates', 'random', 'tiny', 'huge', 'zeros'),
    terminalStyle: fc.constantFrom<TerminalStyle>('none', 'leaves', 'leaves', 'heads', 'root', 'random'),
    picks: fc.array(pick, { minLength: n, maxLength: n }),
    noise: fc.array(fc.array(f32(-1, 1), { minLength: dim, maxLength: dim }), { minLength: n, maxLength: n }),
    bases: fc.array(fc.array(fc.oneof(fc.constantFrom(0, 1, -1, 0.5), f32(-3, 3)), { minLength: dim, maxLength: dim }), { minLength: 1, maxLength: 3 }),
    equalReward: fc.constantFrom(0, 1, 0.5, -2, 7),
    omitDefaults: fc.boolean(),
  }));
}

const WIDE_REWARDS = [-5, -1, 0, 0.25, 1, 3, 10];
const EXTREME_REWARDS = [1e308, -1e308, 1.7e308, -1.7e308, 0, 1, 1e-300, -5e-324];
const MIXED_UNCERTAINTY = [0, 0.1, 0.3, 1, 2.5];
const EXTREME_UNCERTAINTY = [0, 1e308, 1.7e308, 1e-300, 5e-324, 0.5];

function rewardFor(d: TreeDraft, v: number): number {
  const r = d.picks[v].reward;
  switch (d.rewardStyle) {
    case 'binary': return r % 10 === 0 ? 0.5 : r % 2;
    case 'equal': return d.equalReward;
    case 'wide': return WIDE_REWARDS[r % WIDE_REWARDS.length];
    case 'extreme': return EXTREME_REWARDS[r % EXTREME_REWARDS.length];
    default: return Math.fround((r - 500) / 250);
  }
}

function uncertaintyFor(d: TreeDraft, v: number): number {
  const u = d.picks[v].uncertainty;
  switch (d.uncertaintyStyle) {
    case 'zero': return 0;
    case 'equal': return 0.2;
    case 'mixed': return MIXED_UNCERTAINTY[u % MIXED_UNCERTAINTY.length];
    default: return EXTREME_UNCERTAINTY[u % EXTREME_UNCERTAINTY.length];
  }
}

function embeddingFor(d: TreeDraft, v: number, parent: number): number[] {
  const base = d.bases[Math.max(parent, 0) % d.bases.length];
  const noise = d.noise[v];
  const offset = (scale: number) => base.map((b, i) => b + scale * noise[i]);
  const p = d.picks[v].embedding;
  switch (d.embeddingStyle) {
    case 'duplicates': return p % 3 === 0 ? offset(1) : base.slice();
    case 'near': return offset(1e-3);
    case 'random': return offset(1);
    case 'tiny': return offset(1e-2).map((x) => x * 1e-170);
    case 'huge': return offset(1e-2).map((x) => x * 1e200);
    default: return p % 4 === 0 ? base.map(() => 0) : offset(1e-3);
  }
}

function terminalFor(d: TreeDraft, v: number, isLeaf: boolean): boolean {
  const t = d.picks[v].terminal;
  switch (d.terminalStyle) {
    case 'none': return false;
    case 'leaves': return isLeaf && t % 3 !== 0;
    case 'heads': return t % 4 === 0;
    case 'root': return v === 0 || (isLeaf && t % 2 === 0);
    default: return t % 3 === 0;
  }
}

function buildTree(d: TreeDraft, dim: number, id: string | undefined): SpecTree {
  const parents = [-1];
  for (let q = 0; q < parents.length && parents.length < d.size; q++) {
    for (let i = 0; i < d.childCounts[q] && parents.length < d.size; i++) parents.push(q);
  }
  const hasChild = parents.map(() => false);
  for (const p of parents) if (p >= 0) hasChild[p] = true;
  const nodes = parents.map((parent, v): SpecNode => {
    const visitPick = d.picks[v].visits;
    const node: SpecNode = { parent };
    const visits = visitPick < 6 ? 0 : 1 + (visitPick % 6);
    const reward = rewardFor(d, v);
    const uncertainty = uncertaintyFor(d, v);
    const terminal = terminalFor(d, v, !hasChild[v]);
    if (visits !== 0 || !d.omitDefaults) node.visits = visits;
    if (reward !== 0 || !d.omitDefaults) node.reward = reward;
    if (uncertainty !== 0 || !d.omitDefaults) node.uncertainty = uncertainty;
    if (terminal || !d.omitDefaults) node.terminal = terminal;
    if (dim > 0) node.embedding = embeddingFor(d, v, parent);
    else if (!d.omitDefaults) node.embedding = [];
    return node;
  });
  return id === undefined ? { nodes } : { id, nodes };
}

/**
 * A chain of `levels` contested forks, each `width` wide with the same near-duplicate siblings,
 * continued below one child: ln ψ changes by ln(width·w) per level, w the continued child's
 * weight, so a few hundred levels take ψ past 10³⁰⁸ and a few at small τ take it below 10⁻³⁰⁸.
 *  - `grow`: the continued child alone succeeded and is the least settled: at small τ it takes
 *    nearly all the weight, so ψ grows by about `width` per level;
 *  - `decay`: the continued child is unvisited and settled (never pruned, the smallest weight),
 *    its siblings disagree: ψ falls by a factor e^{−ΔC/τ} per level;
 *  - `random`: any pattern of outcomes, visits and uncertainties.
 */
interface DeepDraft {
  mode: 'grow' | 'decay' | 'random';
  levels: number;
  width: number;
  follow: number;
  /** Per sibling position (random mode): reward, visits, uncertainty, terminal (the continued child never is). */
  pattern: { reward: number; visits: number; uncertainty: number; terminal: boolean }[];
  /** A finished leaf under the continued child at every `leafEvery`-th level (0: never). */
  leafEvery: number;
}

const deepDraftArb: fc.Arbitrary<DeepDraft> = fc.record({
  mode: fc.constantFrom<DeepDraft['mode']>('grow', 'grow', 'decay', 'random'),
  levels: fc.oneof(fc.integer({ min: 1, max: 40 }), fc.integer({ min: 450, max: 700 })),
  width: fc.integer({ min: 2, max: 4 }),
  follow: fc.nat(3),
  pattern: fc.array(fc.record({
    reward: fc.constantFrom(0, 1, 0.5),
    visits: fc.constantFrom(0, 1, 2),
    uncertainty: fc.constantFrom(0, 0.1, 0.3),
    terminal: fc.boolean(),
  }), { minLength: 4, maxLength: 4 }),
  leafEvery: fc.constantFrom(0, 0, 3, 7),
});

function deepSibling(d: DeepDraft, i: number, follow: number): { reward: number; visits: number; uncertainty: number; terminal: boolean } {
  const continued = i === follow;
  if (d.mode === 'grow') return continued ? { reward: 1, visits: 1, uncertainty: 0.3, terminal: false } : { reward: 0, visits: 1, uncertainty: 0, terminal: i % 2 === 1 };
  if (d.mode === 'decay') return continued ? { reward: 0, visits: 0, uncertainty: 0, terminal: false } : { reward: i % 2, visits: 1, uncertainty: 0.3, terminal: false };
  return { ...d.pattern[i], terminal: !continued && d.pattern[i].terminal };
}

function buildDeepTree(d: DeepDraft, id: string): SpecTree {
  const nodes: SpecNode[] = [{ parent: -1, reward: 0.5, visits: 4, embedding: [1, 1] }];
  const follow = d.follow % d.width;
  let head = 0;
  for (let level = 0; level < d.levels; level++) {
    const first = nodes.length;
    for (let i = 0; i < d.width; i++) nodes.push({ parent: head, ...deepSibling(d, i, follow), embedding: [1, 1e-3 * i] });
    head = first + follow;
    if (d.leafEvery > 0 && level % d.leafEvery === 0) {
      // a finished episode right below the continued child: its group grows to two
      nodes.push({ parent: head, reward: 1, visits: 1, terminal: true, embedding: [1, 0.5] });
    }
  }
  return { id, nodes };
}

export interface V3Case {
  forest: SpecForest;
  format: 'json' | 'jsonl';
  params: V3Params;
  explicit: boolean;
  rule: 'default' | 'spaced' | 'joined';
  /** A --widen to pass as well (v3 must accept and ignore it), or none. */
  widen?: number;
}

const pow10 = (min: number, max: number) => fc.double({ min, max, noNaN: true }).map((e) => 10 ** e);

/** v3 settings away from their defaults, and per-tree or global budgets (the spare part of the total). */
export const v3SettingsArb = fc.record({
  alpha: fc.oneof({ arbitrary: fc.constant(1), weight: 3 }, { arbitrary: pow10(-3, 3), weight: 2 }, { arbitrary: fc.constantFrom(1e-300, 1e300), weight: 1 }),
  tau: fc.oneof(fc.constant(0.5), fc.constant(0.01), pow10(-2, 2), pow10(-4, -1.5)),
  pruneRatio: fc.oneof(fc.constant(0.5), fc.constant(0), fc.double({ min: 0, max: 0.99, noNaN: true })),
  contestGain: fc.oneof(fc.constant(4), fc.constant(0), fc.double({ min: 0, max: 20, noNaN: true }), fc.constantFrom(1e6, 1e-6)),
  forkKeep: fc.oneof(fc.constant(0.25), fc.constantFrom(0, 1), fc.double({ min: 0, max: 1, noNaN: true })),
  treeFloor: fc.oneof(fc.constant(1), pow10(-6, 6), fc.constantFrom(1e6, 1e-300)),
  baseDepth: fc.oneof(fc.constant(4), fc.integer({ min: 1, max: 8 })),
  depthGain: fc.oneof(fc.constant(1), fc.constant(0), fc.double({ min: 0, max: 3, noNaN: true }), pow10(-3, -1)),
  maxDepth: fc.option(fc.integer({ min: 1, max: 40 }), { nil: undefined }),
  budget: fc.oneof(
    { arbitrary: fc.record({ kind: fc.constant('perTree' as const), budget: fc.oneof(fc.constant(16), fc.integer({ min: 0, max: 200 }), fc.constant(1000)) }), weight: 5 },
    { arbitrary: fc.constant({ kind: 'perTree' as const, budget: 2 ** 31 - 1 }), weight: 1 },
    { arbitrary: fc.record({ kind: fc.constant('global' as const), total: fc.integer({ min: 0, max: 600 }), minPerTree: fc.oneof(fc.constant(1), fc.integer({ min: 0, max: 3 })) }), weight: 5 },
    { arbitrary: fc.record({ kind: fc.constant('global' as const), total: fc.integer({ min: 2 ** 30, max: 2 ** 31 - 100 }), minPerTree: fc.constantFrom(0, 1) }), weight: 1 },
  ),
  explicit: fc.boolean(),
  rule: fc.constantFrom<'default' | 'spaced' | 'joined'>('default', 'default', 'spaced', 'joined'),
  widen: fc.oneof({ arbitrary: fc.constant(undefined), weight: 3 }, { arbitrary: fc.double({ min: 0, max: 1, noNaN: true }), weight: 1 }),
  format: fc.constantFrom<'json' | 'jsonl'>('json', 'json', 'jsonl'),
});

type Settings = typeof v3SettingsArb extends fc.Arbitrary<infer S> ? S : never;

function toCase(forest: SpecForest, s: Settings): V3Case {
  let budget: V3Budget = s.budget;
  if (budget.kind === 'global') {
    // the drawn total is the spare part: the floor μ·|L| comes on top (the CLI refuses less)
    const liveTrees = forest.trees.filter((t) => liveness(t, siblingGroups(t))[0]).length;
    budget = { ...budget, total: Math.min(2 ** 31 - 1, budget.minPerTree * liveTrees + budget.total) };
  }
  const { explicit, rule, widen, format, ...p } = s;
  return { forest, format, params: { ...p, minDepth: 1, budget }, explicit, rule, widen };
}

/** Several random trees (1–6) of one dimension (0–8), in either file format. */
export const mixedCaseArb: fc.Arbitrary<V3Case> = fc.integer({ min: 0, max: 8 }).chain((dim) => fc.record({
  dim: fc.constant(dim),
  drafts: fc.array(treeDraftArb(dim), { minLength: 1, maxLength: 6 }),
  ids: fc.array(fc.option(fc.stringMatching(/^[a-z][a-z0-9-]{0,7}$/), { nil: undefined }), { minLength: 6, maxLength: 6 }),
  settings: v3SettingsArb,
})).map(({ dim, drafts, ids, settings }) => {
  // explicit ids are made unique and never collide with a defaulted positional id
  const trees = drafts.map((d, t) => buildTree(d, dim, ids[t] === undefined ? undefined : `${ids[t]}.${t}`));
  return toCase({ dim, trees }, settings);
});

/** One or two deep chains of contested forks (dim 2) beside a small ordinary tree, at small τ more often. */
export const deepCaseArb: fc.Arbitrary<V3Case> = fc.record({
  deep: fc.array(deepDraftArb, { minLength: 1, maxLength: 2 }),
  small: treeDraftArb(2),
  settings: v3SettingsArb,
  tau: fc.constantFrom(0.01, 0.01, 0.002, 0.05, 0.5),
}).map(({ deep, small, settings, tau }) => {
  const trees = [...deep.map((d, i) => buildDeepTree(d, `deep${i}`)), buildTree(small, 2, 'small')];
  return toCase({ dim: 2, trees }, { ...settings, tau });
});

/** The conformance mix: mostly ordinary forests, one in five deep. */
export const v3CaseArb: fc.Arbitrary<V3Case> = fc.oneof({ arbitrary: mixedCaseArb, weight: 4 }, { arbitrary: deepCaseArb, weight: 1 });
