/**
 * Input paths end to end (`npm run bench:io`): from numpy arrays in a Python process to a plan
 * back in that process, through (a) JSON over `serve --stdio`, (b) binary input over
 * `serve --stdio` (`add-columns`, as an Arrow stream and as an .npz), (c) the CLI on an .npz,
 * an .arrow and a JSON Lines file, and the floor: the same number of bytes piped into a Node
 * process that only counts them. Each is reported as a ratio to in-process score + allocate
 * (CPU) of the same forest, measured here. Workloads: W1 (4096 trees × 85 nodes, dim 128) and a
 * wide forest (1024 trees × 21 nodes, dim 4096), float32 embeddings, seeded.
 *
 *   npm run bench:io               # writes bench/results/io-latest.{json,md}, refreshes the section of docs/BENCHMARKS.md
 *   npm run bench:io -- --quick    # small forests, one sample, writes nothing (smoke test)
 *   npm run bench:io -- --report   # re-render io-latest.md and the docs/BENCHMARKS.md section from io-latest.json
 *
 * The Python side is bench/io_driver.py (the trace_alloc package from python/); the CLI is the
 * built one (npm run build first). Every path's plan is checked equal to the binary path's.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { allocate } from '../src/allocate/allocate.js';
import { loadForestFile } from '../src/forest/load.js';
import { scoreCpu } from '../src/score/cpu.js';
import { cpuMark, finishMachineInfo, machineInfo } from './machine.js';

const root = fileURLToPath(new URL('..', import.meta.url));
const quick = process.argv.includes('--quick');
const cli = `"${process.execPath}" "${join(root, 'dist/cli/main.js')}"`;

/** `skipJson`: the JSON paths are left out (why, in the report): their text is too big to time here. */
interface Shape { id: string; label: string; trees: number; branching: number; depth: number; dim: number; skipJson?: string }
const SHAPES: Shape[] = quick
  ? [{ id: 'w1-small', label: '256 trees × 85 nodes, dim 128', trees: 256, branching: 4, depth: 3, dim: 128 },
    { id: 'wide-small', label: '64 trees × 21 nodes, dim 4096', trees: 64, branching: 4, depth: 2, dim: 4096 }]
  : [{ id: 'w1', label: 'W1: 4096 trees × 85 nodes, dim 128', trees: 4096, branching: 4, depth: 3, dim: 128 },
    { id: 'wide', label: 'wide: 1024 trees × 21 nodes, dim 4096', trees: 1024, branching: 4, depth: 2, dim: 4096,
      skipJson: 'not run: 88 M floats as JSON text; one round took more than 10 minutes on the 2-core machine' }];
const SAMPLES = quick ? 1 : 5;
const JSON_SAMPLES = 1; // JSON paths take minutes per sample on W1-sized data

const PATH_LABELS: Record<string, string> = {
  'json-stdio': '(a) JSON over serve --stdio (add-tree, 64 trees per request)',
  'arrow-stdio': '(b) binary over serve --stdio: add-columns, Arrow IPC stream',
  'npz-stdio': '(b) binary over serve --stdio: add-columns, .npz',
  'cli-npz': '(c) trace-alloc score on .npz (write file + run CLI + read plan)',
  'cli-arrow': '(c) trace-alloc score on .arrow',
  'cli-jsonl': '(c) trace-alloc score on .jsonl',
  floor: 'floor: the Arrow stream\'s bytes piped to a Node process, no parsing',
};

const median = (xs: number[]) => { const s = [...xs].sort((a, b) => a - b); return s.length % 2 ? s[(s.length - 1) >> 1] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2; };

function inProcessSeconds(file: string): number[] {
  const forest = loadForestFile(file);
  const once = () => { const t = performance.now(); const s = scoreCpu(forest, { alpha: 1, tau: 0.5 }); allocate(forest, s, { budget: 16 }); return (performance.now() - t) / 1000; };
  once(); // warm-up
  return Array.from({ length: SAMPLES }, once);
}

async function measure() {
  const startMark = cpuMark();
  const machine = machineInfo();
  const started = new Date();
  const workloads = [];
  for (const shape of SHAPES) {
    const dir = mkdtempSync(join(tmpdir(), 'trace-alloc-io-'));
    try {
      process.stderr.write(`${shape.label}\n`);
      const run = spawnSync('python3', [join(root, 'bench/io_driver.py'), '--trees', String(shape.trees), '--branching', String(shape.branching), '--depth', String(shape.depth),
        '--dim', String(shape.dim), '--cli', cli, '--dir', dir, '--samples', String(SAMPLES), '--json-samples', String(JSON_SAMPLES),
        ...(shape.skipJson ? ['--paths', 'arrow-stdio,npz-stdio,cli-npz,cli-arrow,floor'] : [])], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'], maxBuffer: 1 << 24 });
      if (run.status !== 0) throw new Error(`bench/io_driver.py failed (exit ${run.status})`);
      const driver = JSON.parse(run.stdout) as { paths: Record<string, { seconds?: number[]; samePlan?: boolean; skipped?: string }>; embeddingBytes: number; [k: string]: unknown };
      const inProcess = inProcessSeconds(join(dir, 'in-process.npz'));
      const base = median(inProcess);
      process.stderr.write(`  in-process   ${inProcess.map((s) => s.toFixed(3)).join(' ')}\n`);
      if (shape.skipJson) for (const id of ['json-stdio', 'cli-jsonl']) driver.paths[id] = { skipped: shape.skipJson };
      const paths = Object.entries(driver.paths).map(([id, p]) => (p.seconds
        ? { id, label: PATH_LABELS[id] ?? id, seconds: p.seconds, medianSeconds: median(p.seconds), ratioToInProcess: median(p.seconds) / base, samePlan: p.samePlan }
        : { id, label: PATH_LABELS[id] ?? id, skipped: p.skipped }));
      const { paths: _paths, ...about } = driver;
      workloads.push({ ...shape, ...about, inProcess: { seconds: inProcess, medianSeconds: base }, paths });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }
  const result = { kind: 'io', quick, date: started.toISOString(), wallSeconds: (Date.now() - started.getTime()) / 1000, machine: finishMachineInfo(machine, startMark), workloads };
  return result;
}
type IoResult = Awaited<ReturnType<typeof measure>>;

const fmt = (x: number) => (x >= 100 ? x.toFixed(0) : x >= 10 ? x.toFixed(1) : x >= 1 ? x.toFixed(2) : x.toFixed(3));
function report(r: IoResult): string {
  const m = r.machine;
  const lines = [
    '# Input paths end to end (`npm run bench:io`)',
    '',
    `<!-- Generated by bench/io.ts; do not edit by hand. -->`,
    '',
    `**Run:** ${r.date.slice(0, 16).replace('T', ' ')} UTC, ${Math.round(r.wallSeconds)} s. **Machine:** ${m.cpuModel}, ${m.cores} cores, ${m.memoryGiB} GiB, Node ${m.node}; ` +
      `other processes used ${Math.round((m.otherCpuShare ?? 0) * 100)} % of the machine's CPU during the run${m.shared ? ' (shared machine: absolute times are inflated, ratios less so)' : ''}; load average ${m.loadStart} → ${m.loadEnd}.`,
    '',
    'Each figure: the median of the samples listed, in seconds, from numpy arrays in a Python process to the plan back in that process; the service is started and warmed up (an untimed round on 64 trees) before the clock, as a sidecar is across training steps; the CLI paths include starting the CLI. ' +
      '"÷ in-process": the path\'s time over in-process score + allocate (CPU, float64 reference, per-tree budget 16) of the same forest, timed in the same run. Every plan equals the binary path\'s.',
    '',
  ];
  for (const w of r.workloads) {
    lines.push(`## ${w.label}`, '', `In-process score + allocate: ${fmt(w.inProcess.medianSeconds)} s (samples: ${w.inProcess.seconds.map(fmt).join(', ')}). Embedding matrix ${(Number(w.embeddingBytes) / 2 ** 20).toFixed(0)} MiB float32.`, '');
    lines.push('| path | median s | samples | ÷ in-process | same plan |', '| --- | ---: | --- | ---: | --- |');
    for (const p of w.paths) {
      if ('skipped' in p && p.skipped) { lines.push(`| ${p.label} | — | skipped: ${p.skipped} | — | — |`); continue; }
      const q = p as { label: string; medianSeconds: number; seconds: number[]; ratioToInProcess: number; samePlan?: boolean };
      lines.push(`| ${q.label} | ${fmt(q.medianSeconds)} | ${q.seconds.map(fmt).join(', ')} | ${q.ratioToInProcess.toFixed(2)} | ${q.samePlan === undefined ? '—' : q.samePlan ? 'yes' : '**no**'} |`);
    }
    const get = (id: string) => (w.paths.find((p) => p.id === id) as { medianSeconds?: number } | undefined)?.medianSeconds;
    const notes: string[] = [];
    const arrow = get('arrow-stdio'), floor = get('floor'), npz = get('cli-npz'), jsonl = get('cli-jsonl'), json = get('json-stdio');
    if (arrow !== undefined) notes.push(`binary (Arrow) over stdio ÷ in-process: ${(arrow / w.inProcess.medianSeconds).toFixed(2)}`);
    if (arrow !== undefined && floor !== undefined) notes.push(`binary (Arrow) ÷ pipe floor: ${(arrow / floor).toFixed(1)}`);
    if (arrow !== undefined && json !== undefined) notes.push(`JSON over stdio ÷ binary: ${(json / arrow).toFixed(1)}`);
    if (npz !== undefined && jsonl !== undefined) notes.push(`CLI .jsonl ÷ CLI .npz: ${(jsonl / npz).toFixed(1)}`);
    lines.push('', notes.join('; ') + '.', '');
  }
  return `${lines.join('\n')}\n`;
}

/** The summary between the bench:io markers of docs/BENCHMARKS.md: the headline ratios of the committed run. */
function readmeSection(r: IoResult): string {
  const m = r.machine;
  const rows = ['| path | W1 | wide |', '| --- | ---: | ---: |'];
  const ids = r.workloads[0].paths.map((p) => p.id);
  for (const id of ids) {
    const cell = (w: IoResult['workloads'][number]) => {
      const p = w.paths.find((x) => x.id === id) as { medianSeconds?: number; ratioToInProcess?: number } | undefined;
      return p?.medianSeconds === undefined ? '—' : `${fmt(p.medianSeconds)} s (${p.ratioToInProcess!.toFixed(1)}×)`;
    };
    rows.push(`| ${PATH_LABELS[id] ?? id} | ${r.workloads.map(cell).join(' | ')} |`);
  }
  rows.push(`| in-process score + allocate (the 1×) | ${r.workloads.map((w) => `${fmt(w.inProcess.medianSeconds)} s`).join(' | ')} |`);
  return [
    '<!-- bench:io:start -->',
    '<!-- Generated by bench/io.ts from bench/results/io-latest.json; do not edit by hand. -->',
    '',
    `From numpy arrays in Python to the plan back in Python (\`npm run bench:io\`, ${r.date.slice(0, 10)}, ${m.cpuModel}, ${m.cores} cores, ` +
      `other processes used ${Math.round((m.otherCpuShare ?? 0) * 100)} % of the CPU during the run${m.shared ? ': a shared machine, so absolute times are inflated' : ''}). ` +
      'Medians in seconds, and in brackets the ratio to in-process score + allocate of the same forest in the same run; W1 is 4096 trees × 85 nodes, dim 128; wide is 1024 trees × 21 nodes, dim 4096; float32 embeddings. ' +
      'Full table, samples and method: [`bench/results/io-latest.md`](../bench/results/io-latest.md).',
    '',
    ...rows,
    '<!-- bench:io:end -->',
  ].join('\n');
}

function refreshReadme(r: IoResult): void {
  const path = join(root, 'docs', 'BENCHMARKS.md');
  const text = readFileSync(path, 'utf8');
  const start = text.indexOf('<!-- bench:io:start -->');
  const end = text.indexOf('<!-- bench:io:end -->');
  if (start < 0 || end < 0) { process.stderr.write('docs/BENCHMARKS.md has no bench:io markers; not refreshed\n'); return; }
  writeFileSync(path, text.slice(0, start) + readmeSection(r) + text.slice(end + '<!-- bench:io:end -->'.length));
}

const resultsFile = join(root, 'bench/results/io-latest.json');
if (process.argv.includes('--report')) {
  // Re-render the report and the docs/BENCHMARKS.md section from the committed results, measuring nothing.
  const r = JSON.parse(readFileSync(resultsFile, 'utf8')) as IoResult;
  writeFileSync(join(root, 'bench/results/io-latest.md'), report(r));
  refreshReadme(r);
} else {
  const result = await measure();
  const text = report(result);
  process.stdout.write(text);
  if (!quick) {
    mkdirSync(join(root, 'bench/results'), { recursive: true });
    writeFileSync(resultsFile, `${JSON.stringify(result, null, 2)}\n`);
    writeFileSync(join(root, 'bench/results/io-latest.md'), text);
    refreshReadme(result);
  }
}
