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
  override readonly name = 'GpuValidationError';
  constructor(readonly during: string, message: string) {
    super(`WebGPU error while ${during}: ${message}`);
  }
}
