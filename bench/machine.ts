import os from 'node:os';

/** Where a run happened: enough to judge whether two results files are comparable. */
export interface MachineInfo {
  cpuModel: string;
  cores: number;
  memoryGiB: number;
  platform: string;
  arch: string;
  node: string;
  v8: string;
  /** 1-minute load average when the run started and ended: other work competing for the cores. */
  loadStart: number;
  loadEnd?: number;
  /** True when the load suggests other processes shared the cores during the run. */
  shared?: boolean;
}

export function machineInfo(): MachineInfo {
  const cpus = os.cpus();
  return {
    cpuModel: cpus[0]?.model.trim() ?? 'unknown',
    cores: cpus.length,
    memoryGiB: Number((os.totalmem() / 2 ** 30).toFixed(1)),
    platform: `${os.type()} ${os.release()}`,
    arch: process.arch,
    node: process.version,
    v8: process.versions.v8,
    loadStart: Number((os.loadavg()[0] ?? 0).toFixed(2)),
  };
}

/**
 * Marks the run as shared when the load average, beyond the one core this benchmark keeps
 * busy, ever reached a quarter of the machine. Sampled at the start, between workloads and at the end.
 */
export function finishMachineInfo(m: MachineInfo, loadSamples: number[]): MachineInfo {
  const loadEnd = Number((os.loadavg()[0] ?? 0).toFixed(2));
  const peak = Math.max(m.loadStart, loadEnd, ...loadSamples);
  return { ...m, loadEnd, shared: peak - 1 >= m.cores / 4 };
}

export interface AdapterInfo {
  available: boolean;
  /** Why there is no adapter, when there is none. */
  reason?: string;
  name?: string;
  vendor?: string;
  architecture?: string;
  device?: string;
  description?: string;
  /** A software rasteriser (lavapipe/llvmpipe, SwiftShader, WARP): GPU figures are CPU-emulated. */
  emulated?: boolean;
  features?: string[];
  maxStorageBufferBindingSize?: number;
  timestampQuery?: boolean;
  shaderF16?: boolean;
}

const SOFTWARE = /llvmpipe|lavapipe|swiftshader|warp|software|cpu/i;

export function isEmulated(info: Pick<AdapterInfo, 'vendor' | 'architecture' | 'device' | 'description'>): boolean {
  return [info.vendor, info.architecture, info.device, info.description].some((s) => s !== undefined && SOFTWARE.test(s));
}

/** A short file-name-safe adapter name: "llvmpipe", "nvidia-h200", "cpu-only". */
export function adapterSlug(a: AdapterInfo): string {
  if (!a.available) return 'cpu-only';
  const text = [a.device, a.description, a.architecture, a.vendor].find((s) => s && s.trim()) ?? 'gpu';
  const known = /llvmpipe|swiftshader|h100|h200|a100|l4|t4|rtx ?\d+/i.exec(text);
  const base = known ? known[0] : text;
  const vendor = /nvidia/i.test(`${a.vendor} ${text}`) && !/nvidia/i.test(base) ? 'nvidia-' : '';
  return (vendor + base).toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-|-$/g, '').slice(0, 40) || 'gpu';
}
