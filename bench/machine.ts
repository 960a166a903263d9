import { readFileSync } from 'node:fs';
import os from 'node:os';
import { cpuEmulationReason } from '../src/gpu/adapter.js';

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
  /**
   * Share of the machine's CPU capacity (all cores × wall time) used by other processes during
   * the run: busy time of all cores minus this process's (and its children's) CPU time.
   */
  otherCpuShare?: number;
  /** True when other processes used more than 10 % of the machine's CPU capacity during the run. */
  shared?: boolean;
}

/** Busy CPU milliseconds of all cores together, and of this process plus its waited-for children. */
export interface CpuMark {
  wallMs: number;
  machineBusyMs: number;
  ownMs: number;
}

function ownCpuMs(): number {
  const u = process.cpuUsage(); // every thread of this process, lavapipe's workers included
  let children = 0;
  try {
    // Linux: cutime and cstime (fields 16, 17) count children we waited for (the numpy peer).
    const stat = readFileSync('/proc/self/stat', 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const ticks = Number(fields[13]) + Number(fields[14]);
    if (Number.isFinite(ticks)) children = ticks * 10; // USER_HZ is 100 on Linux
  } catch {
    // not Linux: children's time is unknown and counted as other processes'
  }
  return (u.user + u.system) / 1000 + children;
}

export function cpuMark(): CpuMark {
  let busy = 0;
  for (const c of os.cpus()) busy += c.times.user + c.times.nice + c.times.sys + c.times.irq;
  return { wallMs: performance.now(), machineBusyMs: busy, ownMs: ownCpuMs() };
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
 * Marks the run as shared when other processes used more than 10 % of the machine's CPU
 * capacity between `start` and now (or, given load-average samples instead, by the load). (The load average cannot tell: lavapipe's worker threads
 * alone raise it by the number of cores.)
 */
export function finishMachineInfo(m: MachineInfo, start: CpuMark | number[]): MachineInfo {
  if (Array.isArray(start)) {
    // Load-average samples only (callers without a CpuMark): shared when, beyond the one core
    // the benchmark keeps busy, the load ever reached a quarter of the machine.
    const loadEnd = Number((os.loadavg()[0] ?? 0).toFixed(2));
    return { ...m, loadEnd, shared: Math.max(m.loadStart, loadEnd, ...start) - 1 >= m.cores / 4 };
  }
  const end = cpuMark();
  const capacity = (end.wallMs - start.wallMs) * m.cores;
  const other = Math.max(0, end.machineBusyMs - start.machineBusyMs - (end.ownMs - start.ownMs));
  const otherCpuShare = capacity > 0 ? Number((other / capacity).toFixed(3)) : 0;
  return { ...m, loadEnd: Number((os.loadavg()[0] ?? 0).toFixed(2)), otherCpuShare, shared: otherCpuShare > 0.1 };
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

/** A software rasteriser (lavapipe/llvmpipe, SwiftShader, WARP): the same rule `auto` uses. */
export function isEmulated(info: Pick<AdapterInfo, 'vendor' | 'architecture' | 'device' | 'description'>): boolean {
  return cpuEmulationReason(info) !== undefined;
}

/**
 * What `backend: 'auto'` picks for this adapter, by the rule `chooseAutoBackend` applies
 * (described from the adapter the benchmark opened: a second adapter request in one process
 * once crashed lavapipe).
 */
export function autoChoiceOf(a: AdapterInfo): { backend: 'cpu' | 'gpu'; why: string } {
  if (!a.available) return { backend: 'cpu', why: `no WebGPU adapter (${a.reason ?? 'none found'})` };
  const emulated = cpuEmulationReason(a);
  if (emulated !== undefined) return { backend: 'cpu', why: `the adapter "${a.name}" is CPU-emulated (${emulated}) and slower than the cpu backend` };
  return { backend: 'gpu', why: `a hardware adapter, ${a.name}` };
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
