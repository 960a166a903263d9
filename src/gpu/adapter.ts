import { GpuUnavailableError } from './errors.js';

/** The fields of `GPUAdapterInfo` that say what an adapter is (all optional: implementations differ). */
export interface AdapterIdentity {
  vendor?: string;
  architecture?: string;
  device?: string;
  description?: string;
  /** `GPUAdapterInfo.isFallbackAdapter` (or the older `GPUAdapter.isFallbackAdapter`). */
  isFallbackAdapter?: boolean;
}

/**
 * Drivers that run "GPU" work on the host CPU: Mesa's llvmpipe / lavapipe / softpipe, Google's
 * SwiftShader, Microsoft's WARP ("Microsoft Basic Render Driver"). Matched as words so that a
 * real device whose name merely contains the letters is not caught.
 */
const CPU_EMULATED = /\b(llvmpipe|lavapipe|softpipe|swiftshader|warp|microsoft basic render driver)\b/i;

/**
 * Why an adapter is a CPU emulation of a GPU, or `undefined` for a real GPU. Scoring there
 * competes with the CPU reference for the same cores and loses, so `auto` never picks it
 * (`--backend gpu` still does: CI tests the kernels that way).
 */
export function cpuEmulationReason(info: AdapterIdentity): string | undefined {
  for (const field of ['device', 'description', 'architecture', 'vendor'] as const) {
    const m = CPU_EMULATED.exec(info[field] ?? '');
    if (m) return `${m[1]} runs on the CPU`;
  }
  if (info.isFallbackAdapter === true) return 'it is a fallback (software) adapter';
  if (/^software$/i.test(info.architecture ?? '')) return 'its architecture is "software"';
  return undefined;
}

/** The adapter's identity as one object, whichever spec revision the implementation follows. */
export function adapterIdentity(adapter: GPUAdapter): AdapterIdentity {
  const info = (adapter as { info?: Partial<GPUAdapterInfo> & { isFallbackAdapter?: boolean } }).info ?? {};
  const legacyFallback = (adapter as { isFallbackAdapter?: boolean }).isFallbackAdapter;
  return {
    vendor: info.vendor, architecture: info.architecture, device: info.device, description: info.description,
    isFallbackAdapter: info.isFallbackAdapter ?? legacyFallback,
  };
}

/** A readable adapter name: its description, else vendor, architecture and device. */
export function adapterName(info: AdapterIdentity): string {
  return info.description || [info.vendor, info.architecture, info.device].filter((s) => s).join(' ') || 'unknown adapter';
}

let dawn: GPU | undefined;

/**
 * The `navigator.gpu` to use: Dawn's (the `webgpu` package) in Node, or the global one where it
 * exists (browsers, Deno).
 */
export async function defaultGpu(): Promise<GPU> {
  if (dawn) return dawn;
  const nav = (globalThis as { navigator?: { gpu?: GPU } }).navigator;
  if (nav?.gpu) return nav.gpu;
  let mod: { create: (flags: string[]) => GPU; globals: object };
  try {
    mod = (await import('webgpu')) as unknown as typeof mod;
  } catch (err) {
    throw new GpuUnavailableError(`the "webgpu" package (Dawn for Node) could not be loaded: ${(err as Error).message}`);
  }
  // Dawn's classes (GPUBufferUsage, …) must be globals for code written against the web API.
  for (const [k, v] of Object.entries(mod.globals)) if (!(k in globalThis)) (globalThis as Record<string, unknown>)[k] = v;
  dawn = mod.create([]);
  return dawn;
}

/** WebGPU's `GPUPowerPreference`, spelled out so the public declarations need no WebGPU type alias. */
export type PowerPreference = 'low-power' | 'high-performance';

/** Requests an adapter; `GpuUnavailableError` when there is none. */
export async function requestGpuAdapter(gpu?: GPU, powerPreference: PowerPreference = 'high-performance'): Promise<GPUAdapter> {
  const nav = gpu ?? (await defaultGpu());
  let adapter: GPUAdapter | null;
  try {
    adapter = await nav.requestAdapter({ powerPreference });
  } catch (err) {
    throw new GpuUnavailableError((err as Error).message);
  }
  if (!adapter) throw new GpuUnavailableError();
  return adapter;
}
