/**
 * Input paths end to end (`npm run bench:io`): from numpy arrays in a Python process to a plan
 * back in that process, through (a) JSON over `serve --stdio`, (b) binary input over
 * `serve --stdio` (`add-columns`, as an Arrow stream and as an .npz), (c) the CLI on an .npz,
 * an .arrow and a JSON Lines file, (d) a training round (`extend`: new nodes and finished
 * rollouts for a tenth of the trees, then the plan of the trees that changed), and two floors:
 * the bytes piped into a Node process that only counts them, and a fresh Node process placing
 * the file's size in fresh memory. Each path is reported as a ratio to the same work in process,
 * measured here in the same run: score + allocate + plan JSON of the same forest (CPU, warm,
 * the same threads as the CLI and the service), and for (d) the same round and plan on a live
 * forest in process. Workloads: W1's shape (85-node trees, branching 4, depth 3, dim 128) at
 * 64 to 16,384 trees — the time per sibling group of every path in one chart — and a wide
 * forest (1024 trees × 21 nodes, dim 4096), float32 embeddings, seeded. W1 also gets a CPU
 * profile of every path (`node --cpu-prof`, summed by phase with bench/profile-phases.ts).
 *
 *   npm run bench:io               # writes bench/results/io-latest.{json,md} and io-per-group.svg, refreshes the section of docs/BENCHMARKS.md
 *   npm run bench:io -- --quick    # small forests, one sample, writes nothing (smoke test)
 *   npm run bench:io -- --only w1  # some workloads (w1-64 … w1, w1-16384, wide), writes nothing
 *   npm run bench:io -- --report   # re-render io-latest.md, the chart and the docs/BENCHMARKS.md section from io-latest.json
 *
 * The Python side is bench/io_driver.py (the trace_alloc package from python/); the CLI is the
 * built one (npm run build first). Every path's plan is checked equal to the binary path's, and
 * every round's plan to the in-process round's.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { lineChart } from '../report/svg.js';
import { cpuMark, finishMachineInfo, machineInfo } from './machine.js';
import { phaseTable, type PhaseTable } from './profile-phases.js';

const root = fileURLToPath(new URL('..', import.meta.url));
const quick = process.argv.includes('--quick');
const cli = `"${process.execPath}" "${join(root, 'dist/cli/main.js')}"`;

/** `json`: whether the JSON paths run (they take minutes per sample past a few thousand trees). */
interface Shape { id: string; label: string; trees: number; branching: number; depth: number; dim: number; samples: number; json: boolean; sweep: boolean; profile: boolean }
const w1Shape = (trees: number, samples: number, json: boolean): Shape => ({
  id: trees === 4096 ? 'w1' : `w1-${trees}`, label: trees === 4096 ? 'W1: 4096 trees × 85 nodes, dim 128' : `${trees} trees × 85 nodes, dim 128`,
  trees, branching: 4, depth: 3, dim: 128, samples, json, sweep: true, profile: trees === 4096,
});
const onlyArg = process.argv.indexOf('--only');
const only = onlyArg >= 0 ? new Set(process.argv[onlyArg + 1]?.split(',')) : undefined;
const ALL_SHAPES: Shape[] = quick
  ? [{ ...w1Shape(64, 1, true), profile: true }, w1Shape(256, 1, false)]
  : [w1Shape(64, 5, true), w1Shape(256, 5, true), w1Shape(1024, 5, true), w1Shape(4096, 5, true), w1Shape(16384, 3, false),
    { id: 'wide', label: 'wide: 1024 trees × 21 nodes, dim 4096', trees: 1024, branching: 4, depth: 2, dim: 4096, samples: 5, json: false, sweep: false, profile: false }];
/** `--only w1,wide`: those workloads, results printed and not written (a partial run). */
const SHAPES = only ? ALL_SHAPES.filter((s) => only.has(s.id)) : ALL_SHAPES;
const JSON_SAMPLES = 1; // the JSON paths take minutes per sample on W1-sized data
const JSON_SKIPPED = 'not run: every float as JSON text takes minutes per sample at this size on the 2-core machine';

const PATH_LABELS: Record<string, string> = {
  'json-stdio': '(a) JSON over serve --stdio (add-tree, 64 trees per request)',
  'arrow-stdio': '(b) binary over serve --stdio: add-columns, Arrow IPC stream',
  'npz-stdio': '(b) binary over serve --stdio: add-columns, .npz',
  'cli-npz': '(c) trace-alloc score on .npz (write file + run CLI + read plan)',
  'cli-arrow': '(c) trace-alloc score on .arrow',
  'cli-jsonl': '(c) trace-alloc score on .jsonl',
  'round-stdio': '(d) a round over serve --stdio: extend (new nodes + rollouts for 10 % of the trees), plan of the changed trees',
  floor: 'floor: the Arrow stream\'s bytes piped to a Node process, no parsing',
  touch: 'floor: a fresh Node process placing the .npz\'s size in fresh memory',
};
/** Short names for the chart's legend. */
const SHORT_LABELS: Record<string, string> = {
  'json-stdio': 'JSON add-tree (stdio)', 'arrow-stdio': 'add-columns, Arrow (stdio)', 'npz-stdio': 'add-columns, .npz (stdio)',
  'round-stdio': 'a round: extend + plan (stdio)', 'cli-npz': 'score on .npz (CLI)', 'cli-arrow': 'score on .arrow (CLI)', 'cli-jsonl': 'score on .jsonl (CLI)',
  floor: 'floor: pipe', touch: 'floor: fresh memory',
};

const median = (xs: number[]) => { const s = [...xs].sort((a, b) => a - b); return s.length % 2 ? s[(s.length - 1) >> 1] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2; };

interface PathResult {
  id: string; label: string; seconds?: number[]; medianSeconds?: number;
  /** The same work in process, one sample right after each of the path's (bench/io-inprocess.ts). */
  inProcess?: number[];
  /** Median of `seconds` over median of `inProcess`. */
  ratio?: number;
  samePlan?: boolean; skipped?: string; peakRssBytes?: number[]; fileBytes?: number;
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
      const paths = ['arrow-stdio', 'npz-stdio', 'round-stdio', 'cli-npz', 'cli-arrow', 'floor', 'touch', ...(shape.json ? ['json-stdio', 'cli-jsonl'] : [])];
      const profileDir = join(dir, 'profiles');
      const inprocess = `"${process.execPath}" --import tsx "${join(root, 'bench/io-inprocess.ts')}"`;
      const run = spawnSync('python3', [join(root, 'bench/io_driver.py'), '--trees', String(shape.trees), '--branching', String(shape.branching), '--depth', String(shape.depth),
        '--dim', String(shape.dim), '--cli', cli, '--inprocess', inprocess, '--dir', dir, '--samples', String(shape.samples), '--json-samples', String(JSON_SAMPLES), '--paths', paths.join(','),
        ...(shape.profile ? ['--profile-dir', profileDir] : [])], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'], maxBuffer: 1 << 24, cwd: root });
      if (run.status !== 0) throw new Error(`bench/io_driver.py failed (exit ${run.status})`);
      const driver = JSON.parse(run.stdout) as {
        paths: Record<string, { seconds?: number[]; inProcess?: number[]; samePlan?: boolean; skipped?: string; peakRssBytes?: number[]; fileBytes?: number }>;
        embeddingBytes: number; groups: number; threads: number; profileFrom?: Record<string, number>; [k: string]: unknown;
      };
      if (!shape.json) for (const id of ['json-stdio', 'cli-jsonl']) driver.paths[id] = { skipped: JSON_SKIPPED };
      const results: PathResult[] = Object.entries(driver.paths).map(([id, p]) => {
        if (!p.seconds) return { id, label: PATH_LABELS[id] ?? id, skipped: p.skipped };
        const m = median(p.seconds);
        return { id, label: PATH_LABELS[id] ?? id, seconds: p.seconds, medianSeconds: m, inProcess: p.inProcess, ratio: m / median(p.inProcess!), samePlan: p.samePlan, peakRssBytes: p.peakRssBytes, fileBytes: p.fileBytes };
      });
      const wholeSamples = results.filter((p) => p.inProcess && p.id !== 'round-stdio').flatMap((p) => p.inProcess!);
      const roundSamples = results.find((p) => p.id === 'round-stdio')?.inProcess ?? [];
      const whole = { seconds: wholeSamples, groups: driver.groups, threads: driver.threads };
      const round = { seconds: roundSamples };
      const base = { whole: median(whole.seconds), round: median(round.seconds) };
      process.stderr.write(`  in-process (all paired samples) ${fmt(base.whole)} s, round ${fmt(base.round)} s\n`);
      const profiles: Record<string, PhaseTable[]> = {};
      if (shape.profile) {
        for (const id of paths) {
          let files: string[] = [];
          try { files = readdirSync(join(profileDir, id)).filter((f) => f.endsWith('.cpuprofile')).sort(); } catch { continue; }
          profiles[id] = files.map((f) => phaseTable(JSON.parse(readFileSync(join(profileDir, id, f), 'utf8')), f, driver.profileFrom?.[id]));
        }
      }
      const { paths: _paths, profileFrom: _from, ...about } = driver;
      workloads.push({ ...shape, ...about, groups: whole.groups, threads: whole.threads, inProcess: { seconds: whole.seconds, medianSeconds: base.whole }, inProcessRound: { seconds: round.seconds, medianSeconds: base.round }, paths: results, profiles });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }
  return { kind: 'io', quick, date: started.toISOString(), wallSeconds: (Date.now() - started.getTime()) / 1000, machine: finishMachineInfo(machine, startMark), workloads };
}
type IoResult = Awaited<ReturnType<typeof measure>>;
type Workload = IoResult['workloads'][number];

const fmt = (x: number) => (x >= 100 ? x.toFixed(0) : x >= 10 ? x.toFixed(1) : x >= 1 ? x.toFixed(2) : x.toFixed(3));
const mb = (bytes: number) => `${(bytes / 1e6).toFixed(0)} MB`;

/** The W1 targets: each path's ratio against its goal, met or missed by how much. */
function targets(w: Workload): string[] {
  const get = (id: string) => w.paths.find((p) => p.id === id);
  const lines = ['| target | measured | goal | verdict |', '| --- | ---: | ---: | --- |'];
  const row = (what: string, value: number | undefined, goal: number, unit = '×') => {
    if (value === undefined) return;
    lines.push(`| ${what} | ${value.toFixed(2)}${unit} | ≤ ${goal}${unit} | ${value <= goal ? 'met' : `missed by ${(value / goal).toFixed(2)}×`} |`);
  };
  row('`score` on the .npz, end to end ÷ in-process', get('cli-npz')?.ratio, 2);
  row('`score` on the .arrow, end to end ÷ in-process', get('cli-arrow')?.ratio, 2);
  for (const id of ['cli-npz', 'cli-arrow']) {
    const p = get(id);
    if (p?.peakRssBytes && p.fileBytes) row(`\`score\` on the ${id === 'cli-npz' ? '.npz' : '.arrow'}: peak memory ÷ file (${mb(median(p.peakRssBytes))} for ${mb(p.fileBytes)})`, median(p.peakRssBytes) / p.fileBytes, 1.7);
  }
  row('binary add-columns (Arrow) over stdio ÷ in-process', get('arrow-stdio')?.ratio, 2);
  row('binary add-columns (.npz) over stdio ÷ in-process', get('npz-stdio')?.ratio, 2);
  row('a round (`extend` + plan) through Python ÷ the same in process', get('round-stdio')?.ratio, 2);
  return lines;
}

function perGroupChart(r: IoResult): string | undefined {
  const sweep = r.workloads.filter((w) => w.sweep);
  if (sweep.length < 2) return undefined;
  const ids = [...new Set(sweep.flatMap((w) => w.paths.filter((p) => p.medianSeconds !== undefined).map((p) => p.id)))];
  const series = [
    { name: 'in process: score + allocate + plan JSON', points: sweep.map((w) => [w.trees, (w.inProcess.medianSeconds * 1e6) / w.groups] as [number, number]) },
    { name: 'in process: a round', points: sweep.map((w) => [w.trees, (w.inProcessRound.medianSeconds * 1e6) / w.groups] as [number, number]) },
    ...ids.map((id) => ({
      name: SHORT_LABELS[id] ?? id,
      points: sweep.flatMap((w) => { const p = w.paths.find((x) => x.id === id); return p?.medianSeconds === undefined ? [] : [[w.trees, (p.medianSeconds * 1e6) / w.groups] as [number, number]]; }),
    })),
  ].filter((s) => s.points.length > 0);
  return lineChart({ title: 'Input paths: time per sibling group as the forest grows (85-node trees, dim 128)', xLabel: 'trees', yLabel: 'microseconds per group', logX: true, logY: true, width: 1060, height: 520, series });
}

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
    'Each figure: the median of the samples listed, in seconds, from numpy arrays in a Python process to the plan back in that process; the services are started and warmed up (an untimed round on 64 trees) before the clock, as a sidecar is across training steps; the CLI paths include starting the CLI. ' +
      '"÷ in-process": the median of the path\'s samples over the median of as many samples of the same work in process, each taken right after one of the path\'s (bench/io-inprocess.ts, kept running): score + allocate + plan JSON of the same forest (CPU, warm, default threads), and for the round path the same round and plan on a live forest. Every plan equals the binary path\'s; every round\'s plan the in-process round\'s. Peak memory: the CLI process\'s maximum resident set (GNU time).',
    '',
  ];
  const w1 = r.workloads.find((w) => w.id === 'w1');
  if (w1) lines.push('## Targets (W1)', '', ...targets(w1), '');
  const chart = perGroupChart(r);
  if (chart) lines.push('## Time per group, every path', '', '![time per sibling group](io-per-group.svg)', '');
  for (const w of r.workloads) {
    lines.push(`## ${w.label}`, '', `In-process score + allocate + plan JSON (${w.threads} threads): median ${fmt(w.inProcess.medianSeconds)} s over all ${w.inProcess.seconds.length} samples taken beside the paths; ` +
      `an in-process round: ${fmt(w.inProcessRound.medianSeconds)} s. ${w.groups} sibling groups; embedding matrix ${(Number(w.embeddingBytes) / 2 ** 20).toFixed(0)} MiB float32.`, '');
    lines.push('| path | median s | samples | in process beside it (s) | ÷ in-process | µs per group | peak memory | same plan |', '| --- | ---: | --- | --- | ---: | ---: | ---: | --- |');
    for (const p of w.paths) {
      if (p.skipped) { lines.push(`| ${p.label} | — | skipped: ${p.skipped} | — | — | — | — | — |`); continue; }
      const peak = p.peakRssBytes ? `${mb(median(p.peakRssBytes))} (${(median(p.peakRssBytes) / p.fileBytes!).toFixed(2)}× file)` : '—';
      lines.push(`| ${p.label} | ${fmt(p.medianSeconds!)} | ${p.seconds!.map(fmt).join(', ')} | ${(p.inProcess ?? []).map(fmt).join(', ')} | ${p.ratio!.toFixed(2)} | ${((p.medianSeconds! * 1e6) / w.groups).toFixed(1)} | ${peak} | ${p.samePlan === undefined ? '—' : p.samePlan ? 'yes' : '**no**'} |`);
    }
    lines.push('');
    const profiled = Object.entries(w.profiles ?? {});
    if (profiled.length > 0) {
      lines.push(`### Where each path's time goes (${w.label.split(':')[0]}, one run under \`node --cpu-prof\`)`, '', 'Milliseconds of each Node thread by phase (bench/profile-phases.ts); the main thread first, then worker threads. For the services, one warm round (after their warm-up and a first, cold round); for the CLI, the whole process. "idle" is waiting: for input, or for the worker threads.', '');
      for (const [id, tables] of profiled) {
        lines.push(`**${PATH_LABELS[id] ?? id}**`, '', '| thread | total ms | phases (ms) |', '| --- | ---: | --- |');
        tables.forEach((t, i) => lines.push(`| ${i === 0 ? 'main' : `worker ${i}`} | ${t.totalMs.toFixed(0)} | ${t.phases.filter((p) => p.ms >= 1).map((p) => `${p.phase} ${p.ms.toFixed(0)}`).join('; ')} |`));
        lines.push('');
      }
    }
  }
  return `${lines.join('\n')}\n`;
}

/** The summary between the bench:io markers of docs/BENCHMARKS.md: the headline ratios of the committed run. */
function readmeSection(r: IoResult): string {
  const m = r.machine;
  const shown = r.workloads.filter((w) => w.id === 'w1' || w.id === 'wide');
  const rows = [`| path | ${shown.map((w) => (w.id === 'w1' ? 'W1' : 'wide')).join(' | ')} |`, `| --- |${shown.map(() => ' ---: |').join('')}`];
  const ids = [...new Set(shown.flatMap((w) => w.paths.map((p) => p.id)))];
  for (const id of ids) {
    const cell = (w: Workload) => {
      const p = w.paths.find((x) => x.id === id);
      return p?.medianSeconds === undefined ? '—' : `${fmt(p.medianSeconds)} s (${p.ratio!.toFixed(1)}×)`;
    };
    rows.push(`| ${PATH_LABELS[id] ?? id} | ${shown.map(cell).join(' | ')} |`);
  }
  rows.push(`| in-process score + allocate + plan JSON (the 1×) | ${shown.map((w) => `${fmt(w.inProcess.medianSeconds)} s`).join(' | ')} |`);
  rows.push(`| in-process round, extend + plan (the 1× of (d)) | ${shown.map((w) => `${fmt(w.inProcessRound.medianSeconds)} s`).join(' | ')} |`);
  return [
    '<!-- bench:io:start -->',
    '<!-- Generated by bench/io.ts from bench/results/io-latest.json; do not edit by hand. -->',
    '',
    `From numpy arrays in Python to the plan back in Python (\`npm run bench:io\`, ${r.date.slice(0, 10)}, ${m.cpuModel}, ${m.cores} cores, ` +
      `other processes used ${Math.round((m.otherCpuShare ?? 0) * 100)} % of the CPU during the run${m.shared ? ': a shared machine, so absolute times are inflated' : ''}). ` +
      'Medians in seconds, and in brackets the ratio to the same work in process, sampled right after each sample of the path; W1 is 4096 trees × 85 nodes, dim 128; wide is 1024 trees × 21 nodes, dim 4096; float32 embeddings. ' +
      'Targets, the 64–16,384-tree sweep, profiles and method: [`bench/results/io-latest.md`](../bench/results/io-latest.md).',
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

function writeAll(r: IoResult): void {
  const results = join(root, 'bench/results');
  mkdirSync(results, { recursive: true });
  writeFileSync(join(results, 'io-latest.md'), report(r));
  const chart = perGroupChart(r);
  if (chart) writeFileSync(join(results, 'io-per-group.svg'), chart);
  refreshReadme(r);
}

const resultsFile = join(root, 'bench/results/io-latest.json');
if (process.argv.includes('--report')) {
  // Re-render the report, the chart and the docs/BENCHMARKS.md section from the committed results, measuring nothing.
  writeAll(JSON.parse(readFileSync(resultsFile, 'utf8')) as IoResult);
} else {
  const result = await measure();
  process.stdout.write(report(result));
  if (!quick && !only) {
    writeFileSync(resultsFile, `${JSON.stringify(result, null, 2)}\n`);
    writeAll(result);
  }
}
