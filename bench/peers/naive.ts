import type { PackedForest } from '../../src/forest/packed.js';

/**
 * Peer (a): the straightforward JavaScript a user would write over nested node objects — the
 * shape rollout trees usually have in a training loop before anyone packs them. Cosine
 * similarity the textbook way, every ordered pair, arrays and `map`/`reduce`; outputs are
 * written onto the nodes. It is honest code, not a strawman: float64, no needless copies.
 */
export interface NaiveNode {
  reward: number;
  visits: number;
  uncertainty: number;
  terminal: boolean;
  embedding: number[];
  children: NaiveNode[];
  contrast?: number;
  weight?: number;
  gradAlpha?: number;
  gradTau?: number;
  /** Set on parents: the group's intensity. */
  intensity?: number;
}

/** Builds the nested trees from a packed forest; `byRow[row]` is the node object of each row. */
export function toNested(forest: PackedForest): { roots: NaiveNode[]; byRow: NaiveNode[] } {
  const byRow: NaiveNode[] = new Array(forest.nodeCount);
  const roots: NaiveNode[] = [];
  for (let row = 0; row < forest.nodeCount; row++) {
    const e = forest.embedding.subarray(row * forest.dim, (row + 1) * forest.dim);
    const node: NaiveNode = {
      reward: forest.reward[row] as number,
      visits: forest.visits[row] as number,
      uncertainty: forest.uncertainty[row] as number,
      terminal: forest.terminal[row] === 1,
      embedding: Array.from(e),
      children: [],
    };
    byRow[row] = node;
    const p = forest.parentRow[row] as number;
    if (p < 0) roots.push(node);
    else (byRow[p] as NaiveNode).children.push(node);
  }
  return { roots, byRow };
}

function cosine(a: number[], b: number[]): number {
  let dot = 0;
  let na = 0;
  let nb = 0;
  for (let i = 0; i < a.length; i++) {
    dot += a[i]! * b[i]!;
    na += a[i]! * a[i]!;
    nb += b[i]! * b[i]!;
  }
  if (na === 0 || nb === 0) return 0;
  return Math.min(1, Math.max(-1, dot / (Math.sqrt(na) * Math.sqrt(nb))));
}

function scoreChildren(parent: NaiveNode, alpha: number, tau: number): void {
  const kids = parent.children;
  const k = kids.length;
  if (k === 1) {
    Object.assign(kids[0]!, { contrast: 0, weight: 1, gradAlpha: 0, gradTau: 0 });
    parent.intensity = 0;
    return;
  }
  const C: number[] = [];
  const dC: number[] = [];
  for (let i = 0; i < k; i++) {
    let c = 0;
    let dc = 0;
    for (let j = 0; j < k; j++) {
      if (i === j) continue;
      const a = kids[i]!;
      const b = kids[j]!;
      const dist = (1 - cosine(a.embedding, b.embedding)) / 2;
      const dr = a.visits > 0 && b.visits > 0 ? Math.abs(a.reward - b.reward) : 0;
      const delta = dr + Math.abs(a.uncertainty - b.uncertainty);
      const den = delta + alpha * dist + 1e-6;
      c += delta / den;
      dc += (-alpha * delta * dist) / (den * den);
    }
    C.push(c / (k - 1));
    dC.push(dc / (k - 1));
  }
  const max = Math.max(...C);
  const exps = C.map((c) => Math.exp((c - max) / tau));
  const sum = exps.reduce((a, b) => a + b, 0);
  const w = exps.map((x) => x / sum);
  const meanC = w.reduce((acc, wi, i) => acc + wi * C[i]!, 0);
  const meanDC = w.reduce((acc, wi, i) => acc + wi * dC[i]!, 0);
  kids.forEach((kid, i) => {
    kid.contrast = C[i];
    kid.weight = w[i];
    kid.gradAlpha = (dC[i]! - meanDC) / tau;
    kid.gradTau = -(C[i]! - meanC) / tau;
  });
  parent.intensity = C.reduce((a, b) => a + b, 0) / k;
}

/** Scores every sibling group of every tree, depth first, writing the outputs onto the nodes. */
export function scoreNaive(roots: NaiveNode[], alpha = 1, tau = 0.5): void {
  const visit = (node: NaiveNode): void => {
    if (node.children.length === 0) return;
    scoreChildren(node, alpha, tau);
    node.children.forEach(visit);
  };
  for (const root of roots) {
    Object.assign(root, { contrast: 0, weight: 1, gradAlpha: 0, gradTau: 0 });
    visit(root);
  }
}

/** Reads the outputs back off the nodes into the reference's row/group layout (for checking). */
export function naiveToArrays(forest: PackedForest, byRow: NaiveNode[]): { contrast: Float64Array; weight: Float64Array; gradAlpha: Float64Array; gradTau: Float64Array; intensity: Float64Array } {
  const n = forest.nodeCount;
  const out = { contrast: new Float64Array(n), weight: new Float64Array(n), gradAlpha: new Float64Array(n), gradTau: new Float64Array(n), intensity: new Float64Array(forest.groupCount) };
  byRow.forEach((node, row) => {
    out.contrast[row] = node.contrast ?? Number.NaN;
    out.weight[row] = node.weight ?? Number.NaN;
    out.gradAlpha[row] = node.gradAlpha ?? Number.NaN;
    out.gradTau[row] = node.gradTau ?? Number.NaN;
  });
  for (let g = 0; g < forest.groupCount; g++) out.intensity[g] = byRow[forest.groupParent[g] as number]?.intensity ?? Number.NaN;
  return out;
}
