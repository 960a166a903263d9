/**
 * Records the golden plans of test/golden-plans.test.ts from the code as it is now:
 *
 *   npm run build && npx tsx test/golden/record.ts
 *
 * writes test/fixtures/golden-plans.json.gz. Run it only when a plan is meant to change (a
 * plan change is a contract change: docs/ALGORITHM.md first), never to make the test pass.
 */
import { execSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import { drawCases, FIXTURE, forestText, GOLDEN_RULES, inParallel, recordSession, runScore, scoreArgs, type Case, type GoldenFile, type ScoreRun } from './plans.js';

const CASES = Number(process.env.GOLDEN_CASES ?? 200);
const SEED = 20270321;

async function main(): Promise<void> {
  const cases = drawCases(CASES, SEED);
  const forests = cases.map((c) => forestText(c.forest, c.format));
  const runs: (() => Promise<ScoreRun>)[] = [];
  cases.forEach((c, forest) => {
    for (const rule of GOLDEN_RULES) {
      const args = scoreArgs(c.settings[rule], c.forest);
      runs.push(async () => {
        const r = await runScore(forests[forest], args);
        return { name: `${c.name} ${rule}`, forest, args, status: r.status, stdout: r.stdout, ...(r.status === 0 ? {} : { stderr: r.stderr }) };
      });
    }
  });
  const score = await inParallel(runs, 2);
  // One service per embedding dimension (the first tree fixes it), its cases in order.
  const byDim = new Map<number, Case[]>();
  for (const c of cases) byDim.set(c.forest.dim ?? 0, [...(byDim.get(c.forest.dim ?? 0) ?? []), c]);
  const dims = [...byDim.keys()].sort((a, b) => a - b);
  const serve = await inParallel(dims.map((dim) => () => recordSession(`dim ${dim}`, byDim.get(dim)!, SEED + dim)), 2);
  const commit = process.env.GOLDEN_COMMIT ?? execSync('git rev-parse --short HEAD', { encoding: 'utf8' }).trim();
  const golden: GoldenFile = { recordedWith: `npx tsx test/golden/record.ts at ${commit} (${CASES} cases, seed ${SEED})`, forests, score, serve };
  const bytes = gzipSync(JSON.stringify(golden), { level: 9 });
  writeFileSync(FIXTURE, bytes);
  const failed = score.filter((r) => r.status !== 0).length;
  const plans = serve.reduce((n, s) => n + s.requests.filter((r) => r.includes('"op":"plan')).length, 0);
  process.stdout.write(`${fileURLToPath(FIXTURE)}: ${bytes.length} bytes; ${score.length} score runs (${failed} refused), ${serve.length} sessions with ${plans} plans\n`);
}

await main();
