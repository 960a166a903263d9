import type { PackedForest } from '../src/forest/packed.js';
import { packColumns } from '../src/forest/packed.js';
import { generateRegularForest } from '../src/synth/generate.js';
import { sharedArray } from '../src/util/shared.js';

/**
 * The benchmark workloads: seeded, generated on the spot (never stored). A workload may sit
 * on several sweeps (W1 is both "the standard step" and the 4096 point of the tree sweep);
 * it is generated and timed once.
 */
export type Sweep = 'w1' | 'trees' | 'group' | 'dim' | 'precision' | 'chunked';
export type Precision = 'f32' | 'f16';

export interface Workload {
  id: string;
  label: string;
  sweeps: Sweep[];
  trees: number;
  branching: number;
  depth: number;
  dim: number;
  /** How the GPU path stores embeddings; the CPU paths always read the float32 matrix. */
  precision: Precision;
  seed: number;
  /** Time the peers (nested-object JS, TensorFlow.js, numpy) on this workload too. */
  peers: boolean;
  /** Time score + allocate end to end on this workload too. */
  allocate: boolean;
  /** May be built by repeating the previous (smaller, same-shape) batch; see `buildForest`. */
  tile?: boolean;
}

export const SEED = 20260401;
export const W1 = { trees: 4096, branching: 4, depth: 3, dim: 128 } as const;

export interface PlanOptions {
  quick: boolean;
  /** The GPU's largest storage binding in bytes, to size the chunked batch; undefined without a GPU. */
  maxBindingBytes?: number;
  /** Largest embedding matrix the chunked workload may allocate on the host. */
  maxHostEmbeddingBytes?: number;
}

/** Nodes per regular tree: 1 + b + b² + … + b^depth. */
export function nodesPerTree(branching: number, depth: number): number {
  let n = 1;
  let level = 1;
  for (let d = 0; d < depth; d++) {
    level *= branching;
    n += level;
  }
  return n;
}

/** Sibling groups per regular tree: every node above the last level. */
export function groupsPerTree(branching: number, depth: number): number {
  return nodesPerTree(branching, depth - 1);
}

function shapeKey(w: Pick<Workload, 'trees' | 'branching' | 'depth' | 'dim' | 'precision'>): string {
  return `${w.trees}x${w.branching}^${w.depth}/d${w.dim}/${w.precision}`;
}

/** The list of workloads of a run, duplicates merged (their sweep tags are united). */
export function planWorkloads(o: PlanOptions): { workloads: Workload[]; notes: string[] } {
  const notes: string[] = [];
  const list: Workload[] = [];
  const add = (w: Omit<Workload, 'seed' | 'label'> & { label?: string }) => {
    const key = shapeKey(w);
    const twin = list.find((x) => shapeKey(x) === key);
    if (twin) {
      for (const s of w.sweeps) if (!twin.sweeps.includes(s)) twin.sweeps.push(s);
      twin.peers ||= w.peers;
      twin.allocate ||= w.allocate;
      return;
    }
    const label = w.label ?? `${w.trees} trees, k=${w.branching}, depth ${w.depth}, dim ${w.dim}${w.precision === 'f16' ? ', f16' : ''}`;
    list.push({ ...w, label, seed: SEED });
  };
  const base = { branching: W1.branching, depth: W1.depth, precision: 'f32' as Precision };

  add({ id: 'W1', label: 'W1: 4096 trees × 85 nodes, dim 128', sweeps: ['w1', 'trees'], trees: W1.trees, dim: W1.dim, ...base, peers: true, allocate: true });
  // Quick mode keeps the full tree range (the scaling check needs it) but times the peers and
  // score + allocate only where they are cheap or the headline (W1).
  for (const trees of [64, 256, 1024, 16384]) {
    add({ id: `trees-${trees}`, sweeps: ['trees'], trees, dim: W1.dim, ...base, peers: !o.quick || trees <= 1024, allocate: !o.quick, tile: o.quick && trees > W1.trees });
  }
  // Group size sweep: one fork per tree (depth 1), the same number of children rows for every k.
  const rows = o.quick ? 8192 : 65536;
  for (const k of [2, 8, 32, 256]) {
    add({ id: `group-${k}`, label: `group size ${k}: ${rows / k} trees × 1 fork, dim 128`, sweeps: ['group'], trees: rows / k, branching: k, depth: 1, dim: W1.dim, precision: 'f32', peers: true, allocate: false });
  }
  const dimTrees = o.quick ? 256 : 2048;
  for (const dim of [0, 16, 128, 1024]) {
    add({ id: `dim-${dim}`, label: `dim ${dim}: ${dimTrees} trees × 85 nodes`, sweeps: ['dim'], trees: dimTrees, dim, ...base, peers: true, allocate: false });
  }
  add({ id: 'W1-f16', label: 'W1 with f16 embeddings on the GPU', sweeps: ['precision'], trees: W1.trees, dim: W1.dim, ...base, precision: 'f16', peers: false, allocate: false });

  if (o.maxBindingBytes === undefined) {
    notes.push('chunked workload skipped: no WebGPU adapter, so no storage-binding limit to exceed');
  } else {
    // The smallest tree count whose dim-1024 embedding matrix is 1.25 × the binding limit.
    const dim = 1024;
    const perTree = nodesPerTree(W1.branching, W1.depth) * dim * 4;
    const trees = Math.ceil((o.maxBindingBytes * 1.25) / perTree);
    const bytes = trees * perTree;
    const cap = o.maxHostEmbeddingBytes ?? 2 * 1024 ** 3;
    if (bytes > cap) {
      notes.push(`chunked workload skipped: exceeding the ${o.maxBindingBytes} B binding needs a ${bytes} B embedding matrix, over the ${cap} B host cap`);
    } else {
      add({ id: 'chunked', label: `chunked: ${trees} trees, dim 1024 (${(bytes / 2 ** 20).toFixed(0)} MiB > ${(o.maxBindingBytes / 2 ** 20).toFixed(0)} MiB binding)`, sweeps: ['chunked'], trees, dim, ...base, peers: false, allocate: false });
    }
  }
  return { workloads: list, notes };
}

/** The generator inputs; workloads that differ only in GPU precision share one forest. */
export function forestKey(w: Pick<Workload, 'trees' | 'branching' | 'depth' | 'dim' | 'seed'>): string {
  return `${w.trees}x${w.branching}^${w.depth}/d${w.dim}/s${w.seed}`;
}

/**
 * Generates the workload's forest. With `tileFrom`, a batch that is a whole multiple of the
 * previous one (same shape, dim and seed) is built by repeating it instead: per-group work
 * does not depend on which values repeat, and generating 16384 trees at dim 128 (178 M
 * normal draws) would cost quick mode ~20 s of its 3 minutes.
 */
export function buildForest(w: Workload, tileFrom?: { key: string; forest: PackedForest }): PackedForest {
  const f = tileFrom?.forest;
  if (w.tile && f && f.dim === w.dim && w.trees % f.treeCount === 0 && tileFrom.key === forestKey({ ...w, trees: f.treeCount })) {
    return tileForest(f, w.trees / f.treeCount);
  }
  return generateRegularForest({ trees: w.trees, branching: w.branching, depth: w.depth, dim: w.dim, seed: w.seed });
}

/** `times` copies of a forest's trees, renamed `<id>#<copy>`. */
export function tileForest(f: PackedForest, times: number): PackedForest {
  const n = f.nodeCount;
  const T = f.treeCount;
  const treeOffset = sharedArray(Int32Array, T * times + 1);
  const parent = sharedArray(Int32Array, n * times);
  const localParent = new Int32Array(n);
  for (let row = 0; row < n; row++) {
    const p = f.parentRow[row] as number;
    localParent[row] = p < 0 ? -1 : p - (f.treeOffset[f.nodeTree[row] as number] as number);
  }
  const treeIds: string[] = [];
  for (let c = 0; c < times; c++) {
    for (let t = 0; t < T; t++) {
      treeIds.push(`${f.treeIds[t]}#${c}`);
      treeOffset[c * T + t + 1] = c * n + (f.treeOffset[t + 1] as number);
    }
    parent.set(localParent, c * n);
  }
  const rep = <A extends Float64Array | Float32Array | Uint8Array>(a: A): A => {
    // Shared memory like every packed forest, so the threaded CPU path reads it in place.
    const out = sharedArray(a.constructor as unknown as Parameters<typeof sharedArray<A>>[0], a.length * times);
    for (let c = 0; c < times; c++) out.set(a, c * a.length);
    return out;
  };
  return packColumns({
    dim: f.dim, treeIds, treeOffset, parent,
    reward: rep(f.reward),
    visits: rep(f.visits),
    uncertainty: rep(f.uncertainty),
    terminal: rep(f.terminal),
    embedding: rep(f.embedding),
  });
}

/** Host bytes of the packed forest's arrays (what a batch costs before any backend copies it). */
export function packedBytes(f: PackedForest): number {
  let total = 0;
  for (const v of Object.values(f)) if (ArrayBuffer.isView(v)) total += v.byteLength;
  return total;
}
