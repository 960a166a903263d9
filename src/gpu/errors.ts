import { ForestError, type ForestErrorLocation } from '../forest/errors.js';
import { OptionError } from '../util/errors.js';

/** Thrown when no WebGPU adapter can be found; the message says how to get one. */
export class GpuUnavailableError extends Error {
  override readonly name = 'GpuUnavailableError';
  constructor(detail?: string) {
    super(
      'no WebGPU adapter found' + (detail ? ` (${detail})` : '') + '. The gpu backend needs a GPU driver with Vulkan, Metal or D3D12 ' +
        'support. On a Linux machine without a GPU, install Mesa\'s software Vulkan driver lavapipe, version 24 or newer ' +
        '(Debian bookworm: `apt-get install -t bookworm-backports mesa-vulkan-drivers libvulkan1`; Ubuntu 24.04: ' +
        '`apt-get install mesa-vulkan-drivers libvulkan1`), or use `--backend cpu` / `backend: \'cpu\'` (or `auto`, which falls back to the CPU).',
    );
  }
}

/** The device was lost (driver reset, out of memory, destroyed) while or before scoring. */
export class GpuDeviceLostError extends Error {
  override readonly name = 'GpuDeviceLostError';
  constructor(readonly reason: string, message: string) {
    super(`the WebGPU device was lost (${reason}): ${message || 'no message'}; results of the interrupted call were discarded`);
  }
}

/** A WebGPU validation or out-of-memory error, caught through an error scope. */
export class GpuValidationError extends Error {
  override readonly name: string = 'GpuValidationError';
  constructor(readonly during: string, message: string) {
    super(`WebGPU error while ${during}: ${message}`);
  }
}

/**
 * A valid forest the float32 kernels cannot score faithfully: a sibling group with a reward or
 * uncertainty beyond ±`GPU_FEATURE_LIMIT` whose values are not all exact float64 differences
 * within that limit of the group's midpoint. Names the tree, the parent node and the field.
 * `backend: 'auto'` scores such a forest on the CPU instead.
 */
export class GpuInputRangeError extends ForestError {
  constructor(location: ForestErrorLocation, reason: string) {
    super(location, reason);
    this.name = 'GpuInputRangeError';
  }
}

/**
 * α or τ outside what the float32 kernels can use (an `OptionError`, so a RangeError and, in
 * the CLI, a bad-flag exit 2); `backend: 'auto'` scores on the CPU instead.
 */
export class GpuParamRangeError extends OptionError {
  override name = 'GpuParamRangeError';
}

/**
 * The GPU returned a non-finite score (found by the O(n) scan after every readback): an
 * internal error, never returned silently. `backend: 'auto'` redoes that call on the CPU.
 */
export class GpuNonFiniteError extends GpuValidationError {
  override readonly name = 'GpuNonFiniteError';
  constructor(readonly where: string) {
    super('checking the results', `a non-finite value came back (${where}); the results were discarded`);
  }
}

/** Errors after which `backend: 'auto'` scores that call on the CPU (the device stays in use). */
export function isCpuFallbackError(err: unknown): err is GpuInputRangeError | GpuParamRangeError | GpuNonFiniteError {
  return err instanceof GpuInputRangeError || err instanceof GpuParamRangeError || err instanceof GpuNonFiniteError;
}
