/**
 * Where a process's time went, by phase, from V8 CPU profiles (`node --cpu-prof`): each
 * sample is charged to the innermost frame on its stack that names a phase (so the CRC-32
 * inside the .npz reader counts as CRC, not as reading), else to "other JS" or V8's own
 * buckets (GC, idle, program). docs/BENCHMARKS.md ("Where each input path's time goes") is made
 * from its output.
 *
 *   node --cpu-prof --cpu-prof-dir=/tmp/prof dist/cli/main.js score w1.npz --backend cpu
 *   npx tsx bench/profile-phases.ts /tmp/prof            # one table per profile (main thread, workers)
 *   npx tsx bench/profile-phases.ts /tmp/prof --json     # the same as JSON
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

interface ProfileNode { id: number; callFrame: { functionName: string; url: string }; children?: number[] }
interface Profile { nodes: ProfileNode[]; samples: number[]; timeDeltas: number[]; startTime: number; endTime: number }

/** Phases by the functions (or, with a `/`, the source files) whose frames belong to them; the first match from the leaf up wins. */
export const PHASES: [string, RegExp][] = [
  ['CRC-32', /^(crc32|tableCrc32)$/],
  ['inflate (compressed .npz)', /fflate/],
  ['read the file', /^(readSync|readFileSync|readFileShared|withFileSource)$|forest\/source\.(ts|js)$/],
  ['pipe input (service)', /^(readBytes|take|skipBytes|nextLine|onStreamRead|readableAddChunk|addChunk)$|lines\.(ts|js)$/],
  ['decode containers', /zip\.(ts|js)$|npz\.(ts|js)$|npy\.(ts|js)$|arrow(-ipc)?\.(ts|js)$|flatbuffers\.(ts|js)$/],
  ['validate and pack', /^(packColumns|packNdArrays|columnsFromNdArrays|firstNonFinite|packForest)$|columnar\.(ts|js)$|packed\.(ts|js)$/],
  ['live store (copy into slabs)', /store\.(ts|js)$|slab\.(ts|js)$/],
  ['score', /^(scoreGroupsCpu|scoreGroup\w*)$|score\/(cpu|cpu-worker)\.(ts|js)$|score-cpu\.(ts|js)$/],
  ['thread hand-off', /threads\.(ts|js)$|^(postMessage|Atomics\.\w+)$/],
  ['allocate', /allocate\/\w+\.(ts|js)$/],
  ['plan JSON', /^(planToJson|planJson|treePlanJson|stringify|JSON\.stringify)$|plan\.(ts|js)$/],
  ['request JSON (service)', /^(parse|JSON\.parse|handleLine|dispatch)$|protocol\.(ts|js)$/],
  ['write the result', /output\.(ts|js)$|^(writeResult|writeSync|write|writeOrBuffer|_write|writeGeneric)$/],
  ['module loading', /node:internal\/modules|^(compileFunction|compileSourceTextModule|link|instantiate|evaluate)$/],
  ['worker start', /node:internal\/worker|^(Worker)$/],
];

export interface PhaseTable { file: string; totalMs: number; phases: { phase: string; ms: number; share: number }[] }

/**
 * The phase table of one profile; `fromUs` (a CLOCK_MONOTONIC time in microseconds, the clock
 * V8 stamps profiles with) counts only the samples from then on, e.g. one warm round of a service.
 */
export function phaseTable(profile: Profile, file = '', fromUs = 0): PhaseTable {
  const byId = new Map<number, ProfileNode>();
  const parent = new Map<number, number>();
  for (const n of profile.nodes) byId.set(n.id, n);
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const phaseOf = new Map<number, string>();
  const classify = (id: number): string => {
    const known = phaseOf.get(id);
    if (known !== undefined) return known;
    const frame = byId.get(id)!.callFrame;
    let phase: string | undefined;
    if (frame.functionName === '(garbage collector)') phase = 'GC';
    else if (frame.functionName === '(idle)') phase = 'idle (waiting: I/O, other threads)';
    else if (frame.functionName === '(program)') phase = 'V8 and Node internals';
    else {
      for (const [name, pattern] of PHASES) if (pattern.test(frame.functionName) || (frame.url !== '' && pattern.test(frame.url))) { phase = name; break; }
    }
    if (phase === undefined) {
      const up = parent.get(id);
      phase = up === undefined || byId.get(up)!.callFrame.functionName === '(root)' ? 'other JS' : classify(up);
    }
    phaseOf.set(id, phase);
    return phase;
  };
  const ms = new Map<string, number>();
  let at = profile.startTime;
  for (let i = 0; i < profile.samples.length; i++) {
    at += profile.timeDeltas[i] ?? 0;
    if (at < fromUs) continue;
    const phase = classify(profile.samples[i]);
    ms.set(phase, (ms.get(phase) ?? 0) + (profile.timeDeltas[i] ?? 0) / 1000);
  }
  const totalMs = (profile.endTime - Math.max(profile.startTime, fromUs)) / 1000;
  const phases = [...ms].map(([phase, t]) => ({ phase, ms: t, share: t / totalMs })).sort((a, b) => b.ms - a.ms);
  return { file, totalMs, phases };
}

function main(): void {
  const dir = process.argv[2];
  if (!dir) throw new Error('usage: npx tsx bench/profile-phases.ts DIR [--json]');
  const tables = readdirSync(dir).filter((f) => f.endsWith('.cpuprofile')).sort().map((f) => phaseTable(JSON.parse(readFileSync(join(dir, f), 'utf8')) as Profile, f));
  if (process.argv.includes('--json')) { process.stdout.write(`${JSON.stringify(tables, null, 2)}\n`); return; }
  for (const t of tables) {
    process.stdout.write(`\n${t.file}: ${t.totalMs.toFixed(0)} ms\n`);
    for (const p of t.phases) if (p.ms >= 0.5) process.stdout.write(`  ${p.phase.padEnd(36)} ${p.ms.toFixed(0).padStart(7)} ms  ${(p.share * 100).toFixed(1).padStart(5)} %\n`);
  }
}

if (process.argv[1]?.endsWith('profile-phases.ts')) main();
