import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { PackedForest } from '../../src/forest/packed.js';

const SCRIPT = path.join(path.dirname(fileURLToPath(import.meta.url)), 'numpy_peer.py');

export interface NumpyProbe {
  available: boolean;
  /** Why it is unavailable, or the versions found. */
  note: string;
  numpy?: string;
  python?: string;
}

/** Is there a `python3` with numpy on this machine? */
export function probeNumpy(python = 'python3'): NumpyProbe {
  const r = spawnSync(python, ['-c', 'import sys, numpy; print(numpy.__version__, sys.version.split()[0])'], { encoding: 'utf8', timeout: 30_000 });
  if (r.error) return { available: false, note: `numpy peer skipped: ${python} could not be started (${r.error.message})` };
  if (r.status !== 0) return { available: false, note: `numpy peer skipped: ${python} has no numpy (${(r.stderr || '').trim().split('\n').pop()})` };
  const [numpy, py] = r.stdout.trim().split(/\s+/);
  return { available: true, note: `numpy ${numpy} on Python ${py}`, numpy, python: py };
}

export interface NumpyRun {
  outputs: { contrast: Float64Array; weight: Float64Array; gradAlpha: Float64Array; gradTau: Float64Array; intensity: Float64Array };
  samplesMs: number[];
}

function writeArray(dir: string, name: string, a: ArrayBufferView): void {
  writeFileSync(path.join(dir, `${name}.bin`), new Uint8Array(a.buffer, a.byteOffset, a.byteLength));
}

function readF64(dir: string, name: string): Float64Array {
  const b = readFileSync(path.join(dir, `out-${name}.bin`));
  return new Float64Array(b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength));
}

/**
 * Hands the packed forest to numpy_peer.py, which scores it once (outputs come back for the
 * check) and then times itself. Little-endian raw arrays: this machine and numpy agree on it.
 */
export function runNumpy(
  forest: PackedForest,
  o: { alpha: number; tau: number; minSamples: number; maxTime: number; python?: string; /** Take 3 samples when the first call is slower than this. */ fewSamplesAboveMs?: number },
): NumpyRun {
  const dir = mkdtempSync(path.join(tmpdir(), 'trace-bench-numpy-'));
  try {
    writeFileSync(path.join(dir, 'meta.json'), JSON.stringify({ nodeCount: forest.nodeCount, dim: forest.dim, embeddingDtype: forest.embedding instanceof Float64Array ? '<f8' : '<f4', alpha: o.alpha, tau: o.tau, minSamples: o.minSamples, maxTime: o.maxTime, fewSamplesAboveMs: o.fewSamplesAboveMs ?? null }));
    writeArray(dir, 'embedding', forest.embedding);
    writeArray(dir, 'reward', forest.reward);
    writeArray(dir, 'visits', forest.visits);
    writeArray(dir, 'uncertainty', forest.uncertainty);
    writeArray(dir, 'groupOffset', forest.groupOffset);
    writeArray(dir, 'groupChild', forest.groupChild);
    const r = spawnSync(o.python ?? 'python3', [SCRIPT, dir], { encoding: 'utf8', timeout: 600_000, env: { ...process.env, OMP_NUM_THREADS: process.env.OMP_NUM_THREADS ?? '1', OPENBLAS_NUM_THREADS: process.env.OPENBLAS_NUM_THREADS ?? '1' } });
    if (r.error) throw r.error;
    if (r.status !== 0) throw new Error(`numpy peer failed (exit ${r.status}): ${r.stderr.trim().split('\n').slice(-3).join(' | ')}`);
    const timing = JSON.parse(readFileSync(path.join(dir, 'timing.json'), 'utf8')) as { samplesMs: number[] };
    return {
      outputs: { contrast: readF64(dir, 'contrast'), weight: readF64(dir, 'weight'), gradAlpha: readF64(dir, 'gradAlpha'), gradTau: readF64(dir, 'gradTau'), intensity: readF64(dir, 'intensity') },
      samplesMs: timing.samplesMs,
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
