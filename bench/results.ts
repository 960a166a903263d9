import type { CheckResult } from './check.js';
import type { AdapterInfo, MachineInfo } from './machine.js';
import type { Figure } from './stats.js';
import type { Workload } from './workloads.js';

/** The paths timed side by side. Order here is the order of tables and legends. */
export const PATHS = ['cpu', 'cpu-threads', 'mem-floor', 'cpu+allocate', 'gpu', 'gpu-kernels', 'gpu+allocate', 'floor', 'naive', 'tfjs', 'numpy'] as const;
export type PathId = (typeof PATHS)[number];

export const PATH_LABEL: Record<PathId, string> = {
  cpu: 'CPU reference (float64)',
  'cpu-threads': 'CPU reference, all threads',
  'mem-floor': 'memory-pass floor, all threads',
  'cpu+allocate': 'CPU score + allocate',
  gpu: 'GPU end to end',
  'gpu-kernels': 'GPU kernels alone',
  'gpu+allocate': 'GPU score + allocate',
  floor: 'transfer floor (upload + readback)',
  naive: 'peer: JS over nested objects',
  tfjs: 'peer: TensorFlow.js wasm',
  numpy: 'peer: numpy',
};

/** Paths that compute no scores (data movement only): not a speed-up to chart. */
export const FLOOR_PATHS: ReadonlySet<PathId> = new Set(['floor', 'mem-floor']);

export const GPU_PATHS: ReadonlySet<PathId> = new Set(['gpu', 'gpu-kernels', 'gpu+allocate', 'floor']);

/** Per-call breakdown the GPU scorer reports (`lastTimings`), summarised over the timed calls. */
export interface GpuBreakdown {
  upload: Figure;
  /** GPU time of the compute passes (timestamp queries); absent without them. */
  kernels?: Figure;
  /** Last submit → last result mapped (GPU tail plus transfer back). */
  wait: Figure;
  /** Host copy-out and scatter. */
  readback: Figure;
  total: Figure;
}

export interface WorkloadResult extends Workload {
  nodes: number;
  groups: number;
  /** Host bytes of the packed forest. */
  packedBytes: number;
  generateMs: number;
  /** Process resident-set high-water mark after this workload, MiB (monotone over a run). */
  peakRssMiB: number;
  figures: Partial<Record<PathId, Figure>>;
  /** Agreement with the float64 reference, checked before timing. */
  checks: Partial<Record<PathId, CheckResult>>;
  /** Paths not timed here, and why. */
  skipped: Partial<Record<PathId, string>>;
  gpuBreakdown?: GpuBreakdown;
}

/**
 * Quick mode's exception to `sampling.minSamples`: a case whose first (untimed, checked) call
 * took longer than `aboveMs` is sampled `samples` times (the biggest batches and slowest paths).
 */
export const QUICK_FEW_SAMPLES = { samples: 3, aboveMs: 400 } as const;

export interface BenchResults {
  schema: 'trace-alloc-bench/1';
  mode: 'quick' | 'full';
  command: string;
  startedAt: string;
  finishedAt: string;
  durationS: number;
  machine: MachineInfo;
  adapter: AdapterInfo;
  peers: { tfjs: string; numpy: string };
  /** Benchmark.js options the benny cases ran with. */
  sampling: { minSamples: number; maxTime: number };
  notes: string[];
  /** Threads of the `cpu-threads` and `mem-floor` paths (absent in runs before they existed). */
  threads?: number;
  /** What `backend: 'auto'` chose on this machine, and its notice. */
  auto?: { backend: 'cpu' | 'gpu'; why: string };
  workloads: WorkloadResult[];
}
