import { describe, it } from 'vitest';
import { packColumns, type PackedForest } from '../src/forest/packed.js';
import { GpuContext } from '../src/gpu/context.js';
import { GpuUnavailableError } from '../src/gpu/errors.js';
import type { Scores } from '../src/score/types.js';

/**
 * GPU test suites: with an adapter they run; without one they skip with a visible warning,
 * unless TRACE_ALLOC_REQUIRE_GPU=1 (CI), where "no adapter" is a failing test.
 */
export const requireGpu = process.env.TRACE_ALLOC_REQUIRE_GPU === '1';

process.env.XDG_RUNTIME_DIR ??= '/tmp';

async function probe(): Promise<string | undefined> {
  try {
    const ctx = await GpuContext.create();
    ctx.destroy();
    return undefined;
  } catch (err) {
    if (err instanceof GpuUnavailableError) return err.message;
    return `adapter probe failed: ${(err as Error).message}`;
  }
}

const missing = await probe();

export function gpuDescribe(name: string, body: () => void): void {
  if (!missing) {
    describe(name, body);
    return;
  }
  if (requireGpu) {
    describe(name, () => {
      it('has a WebGPU adapter (TRACE_ALLOC_REQUIRE_GPU=1)', () => {
        throw new Error(missing);
      });
    });
    return;
  }
  console.warn(`[trace-alloc] skipping GPU tests "${name}": ${missing}`);
  describe.skip(name, body);
}

export interface Tolerance {
  contrast: number;
  weight: number;
  intensity: number;
  grad: number;
}

/** SPEC §2 tolerances. */
export const SPEC_TOLERANCE: Tolerance = { contrast: 1e-4, weight: 1e-4, intensity: 1e-4, grad: 1e-3 };

export interface Deviation {
  contrast: number;
  weight: number;
  intensity: number;
  /** max |Δg| / max(1, |g|) over gA and gB. */
  grad: number;
  worst: string;
}

/** Largest deviations of `got` from the reference `want`, with where the worst one is. */
export function deviation(forest: PackedForest, got: Scores, want: Scores): Deviation {
  const d: Deviation = { contrast: 0, weight: 0, intensity: 0, grad: 0, worst: '' };
  const note = (field: keyof Omit<Deviation, 'worst'>, value: number, where: string) => {
    if (!(value <= d[field])) {
      d[field] = Number.isNaN(value) ? Infinity : value;
      d.worst = `${field} at ${where}: |Δ| = ${value}`;
    }
  };
  for (let row = 0; row < forest.nodeCount; row++) {
    const at = `row ${row}`;
    note('contrast', Math.abs(got.contrast[row] - want.contrast[row]), at);
    note('weight', Math.abs(got.weight[row] - want.weight[row]), at);
    note('grad', Math.abs(got.gradAlpha[row] - want.gradAlpha[row]) / Math.max(1, Math.abs(want.gradAlpha[row])), at);
    note('grad', Math.abs(got.gradTau[row] - want.gradTau[row]) / Math.max(1, Math.abs(want.gradTau[row])), at);
  }
  for (let g = 0; g < forest.groupCount; g++) note('intensity', Math.abs(got.intensity[g] - want.intensity[g]), `group ${g}`);
  return d;
}

export function withinTolerance(d: Deviation, tol: Tolerance = SPEC_TOLERANCE): boolean {
  return d.contrast <= tol.contrast && d.weight <= tol.weight && d.intensity <= tol.intensity && d.grad <= tol.grad;
}

/** A forest from per-tree parent arrays and per-row features; embeddings row-major. */
export function forestOf(
  dim: number,
  parents: number[][],
  fill: (row: number) => { reward?: number; visits?: number; uncertainty?: number; terminal?: boolean },
  embedding: Float32Array | Float64Array,
): PackedForest {
  const treeOffset = new Int32Array(parents.length + 1);
  parents.forEach((p, t) => (treeOffset[t + 1] = treeOffset[t] + p.length));
  const n = treeOffset[parents.length];
  const parent = Int32Array.from(parents.flat());
  const reward = new Float64Array(n), visits = new Float64Array(n), uncertainty = new Float64Array(n);
  const terminal = new Uint8Array(n);
  for (let row = 0; row < n; row++) {
    const f = fill(row);
    reward[row] = f.reward ?? 0;
    visits[row] = f.visits ?? 0;
    uncertainty[row] = f.uncertainty ?? 0;
    terminal[row] = f.terminal ? 1 : 0;
  }
  return packColumns({ dim, treeIds: parents.map((_, t) => `t${t}`), treeOffset, parent, reward, visits, uncertainty, terminal, embedding });
}
