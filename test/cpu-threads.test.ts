import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import fc from 'fast-check';
import { afterAll, describe, expect, it, onTestFinished } from 'vitest';
import { packColumns, packForest, type PackedForest } from '../src/forest/packed.js';
import { CpuScorer, scoreCpu } from '../src/score/cpu.js';
import { createScorer } from '../src/backend/select.js';
import { PARALLEL_MIN_COST, scoringCost, splitGroups } from '../src/score/threads.js';
import type { Scores } from '../src/score/types.js';
import { generateForest, generateRegularForest } from '../src/synth/generate.js';
import { isShared } from '../src/util/shared.js';
import { forestArb } from './arbitraries.js';
import { runCli } from './cli-helpers.js';

const OUTPUTS = ['contrast', 'weight', 'gradAlpha', 'gradTau', 'intensity'] as const;

/** Every output element the same value (Object.is: same NaN-ness, same sign of zero). */
function expectIdentical(got: Scores, want: Scores): void {
  for (const key of OUTPUTS) {
    expect(got[key].length, key).toBe(want[key].length);
    for (let i = 0; i < want[key].length; i++) {
      if (!Object.is(got[key][i], want[key][i])) expect.fail(`${key}[${i}]: ${got[key][i]} on threads, ${want[key][i]} on one thread`);
    }
  }
  expect(got.params).toEqual(want.params);
  expect(got.backend).toBe('cpu');
}

/** The same forest with ordinary (not shared) arrays, as a caller packing its own columns would hand it over. */
function unshared(f: PackedForest): PackedForest {
  const parent = Int32Array.from(f.parentRow, (p, row) => (p < 0 ? -1 : p - f.treeOffset[f.nodeTree[row]]));
  return packColumns({
    dim: f.dim, treeIds: f.treeIds, treeOffset: Int32Array.from(f.treeOffset), parent,
    reward: Float64Array.from(f.reward), visits: Float64Array.from(f.visits), uncertainty: Float64Array.from(f.uncertainty),
    terminal: Uint8Array.from(f.terminal), embedding: f.embedding.slice(),
  });
}

describe('CPU scoring on worker threads', () => {
  // Cost 0: every forest with two groups or more goes to the workers.
  const threaded = [2, 3, 5].map((threads) => new CpuScorer({ threads, minParallelCost: 0 }));
  afterAll(() => { for (const s of threaded) s.destroy(); });

  it('is bit-identical to the single-thread reference on random forests (fast-check)', async () => {
    await fc.assert(
      fc.asyncProperty(forestArb({ maxTrees: 12, maxNodes: 24, maxDim: 9 }), fc.double({ min: 1e-3, max: 1e3, noNaN: true }), fc.double({ min: 1e-2, max: 1e2, noNaN: true }), fc.nat(2), async (input, alpha, tau, which) => {
        const forest = packForest(input);
        const params = { alpha, tau };
        expectIdentical(await threaded[which].score(forest, params), scoreCpu(forest, params));
      }),
      { numRuns: 150 },
    );
    expect(threaded.some((s) => s.workerThreads > 0)).toBe(true);
  });

  it('hands chunks to the workers, not only to the calling thread', async () => {
    const forest = generateRegularForest({ trees: 400, branching: 4, depth: 3, dim: 64, seed: 12 });
    const before = threaded.map((s) => s.workerChunks);
    // One shared queue: on a busy machine the calling thread can take every chunk of a call, so
    // score again (bounded) until a worker has taken part.
    const reference = scoreCpu(forest);
    for (let round = 0; round < 200 && !threaded.some((s, i) => s.workerChunks > before[i]); round++) {
      for (const scorer of threaded) expectIdentical(await scorer.score(forest), reference);
    }
    expect(threaded.some((s, i) => s.workerChunks > before[i])).toBe(true);
  });

  it('startThreads boots the workers before the first call, which scores the same (and is a no-op on one thread)', async () => {
    const early = new CpuScorer({ threads: 3, minParallelCost: 0 });
    onTestFinished(() => early.destroy());
    expect(early.workerThreads).toBe(0);
    await early.startThreads();
    expect(early.workerThreads).toBe(2);
    const forest = generateRegularForest({ trees: 50, branching: 3, depth: 3, dim: 16, seed: 4 });
    expectIdentical(await early.score(forest), scoreCpu(forest));
    const single = new CpuScorer({ threads: 1 });
    await single.startThreads();
    expect(single.workerThreads).toBe(0);
    early.destroy();
    await early.startThreads(); // after destroy: nothing starts
    expect(early.workerThreads).toBe(0);
  });

  it('is bit-identical on generated forests, shared and not, with groups of 1 to 300 children', async () => {
    const forests = [
      generateForest({ trees: 300, dim: 16, seed: 4, minBranch: 1, maxBranch: 12 }),
      generateRegularForest({ trees: 40, branching: 300, depth: 1, dim: 5, seed: 9 }),
      generateForest({ trees: 50, dim: 0, seed: 5 }),
    ];
    for (const forest of [...forests, unshared(forests[0])]) {
      for (const scorer of threaded) expectIdentical(await scorer.score(forest, { alpha: 0.7, tau: 0.3 }), scoreCpu(forest, { alpha: 0.7, tau: 0.3 }));
    }
  });

  it('returns outputs in shared memory and answers calls in flight at once', async () => {
    const a = generateForest({ trees: 200, dim: 8, seed: 1 });
    const b = generateForest({ trees: 120, dim: 3, seed: 2 });
    const [sa, sb] = await Promise.all([threaded[1].score(a), threaded[1].score(b, { tau: 2 })]);
    expect(isShared(sa.weight)).toBe(true);
    expectIdentical(sa, scoreCpu(a));
    expectIdentical(sb, scoreCpu(b, { tau: 2 }));
  });

  it('with threads 1, or below the crossover, scores on the calling thread and starts no worker', async () => {
    const big = generateRegularForest({ trees: 200, branching: 4, depth: 3, dim: 32, seed: 3 });
    const one = new CpuScorer({ threads: 1, minParallelCost: 0 });
    expect(one.threadsFor(big)).toBe(1);
    expectIdentical(await one.score(big), scoreCpu(big));
    expect(one.workerThreads).toBe(0);
    one.destroy();

    const small = generateForest({ trees: 3, dim: 4, seed: 7 });
    expect(scoringCost(small)).toBeLessThan(PARALLEL_MIN_COST);
    const four = new CpuScorer({ threads: 4 });
    expect(four.threadsFor(small)).toBe(1);
    expectIdentical(await four.score(small), scoreCpu(small));
    expect(four.workerThreads).toBe(0);
    expect(four.threadsFor(big)).toBe(scoringCost(big) >= PARALLEL_MIN_COST ? 4 : 1);
    four.destroy();
  });

  it('splits groups into contiguous chunks of about equal work', () => {
    const forest = generateForest({ trees: 100, dim: 8, seed: 2, minBranch: 1, maxBranch: 30 });
    const bounds = splitGroups(forest, 7);
    expect(bounds.length).toBe(8);
    expect(bounds[0]).toBe(0);
    expect(bounds[7]).toBe(forest.groupCount);
    for (let c = 0; c < 7; c++) expect(bounds[c + 1]).toBeGreaterThan(bounds[c]);
    expect(Array.from(splitGroups(generateForest({ trees: 1, dim: 2, seed: 1, minNodes: 3, maxNodes: 3 }), 8))).toEqual([0, 1]);
  });

  it('refuses a thread count that is not a positive integer', () => {
    for (const threads of [0, -1, 1.5, Number.NaN]) expect(() => new CpuScorer({ threads })).toThrow(/threads must be an integer >= 1/);
  });

  it('createScorer passes threads on; destroy() ends the workers', async () => {
    const scorer = await createScorer({ backend: 'cpu', threads: 2 });
    expect((scorer as CpuScorer).threads).toBe(2);
    const forest = generateRegularForest({ trees: 800, branching: 4, depth: 3, dim: 64, seed: 6 });
    expect(scoringCost(forest)).toBeGreaterThanOrEqual(PARALLEL_MIN_COST);
    expectIdentical(await scorer.score(forest), scoreCpu(forest));
    expect((scorer as CpuScorer).workerThreads).toBe(1);
    scorer.destroy();
    expect((scorer as CpuScorer).workerThreads).toBe(0);
  });
});

describe('the worker file', () => {
  const dist = fileURLToPath(new URL('../dist/index.js', import.meta.url));
  const script = (destroy: boolean) => `
    const { CpuScorer, generateRegularForest, scoreCpu } = await import(${JSON.stringify(dist)});
    const forest = generateRegularForest({ trees: 50, branching: 4, depth: 2, dim: 8, seed: 1 });
    const scorer = new CpuScorer({ threads: 3, minParallelCost: 0 });
    const got = await scorer.score(forest), want = scoreCpu(forest);
    const same = ['contrast', 'weight', 'gradAlpha', 'gradTau', 'intensity'].every((k) => want[k].every((x, i) => Object.is(x, got[k][i])));
    console.log(JSON.stringify({ same, workers: scorer.workerThreads }));
    ${destroy ? 'scorer.destroy();' : '// no destroy(): idle workers are unref\'d'}
  `;

  it.each([true, false])('runs from dist/ (compiled JS), and the process exits by itself (destroy() called: %s)', (destroy) => {
    const tmp = mkdtempSync(join(tmpdir(), 'trace-alloc-threads-'));
    onTestFinished(() => rmSync(tmp, { recursive: true, force: true }));
    const file = join(tmp, 'run.mjs');
    writeFileSync(file, script(destroy));
    const r = spawnSync(process.execPath, [file], { encoding: 'utf8', timeout: 60_000 });
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual({ same: true, workers: 2 });
  });
});

describe('--threads', () => {
  it('gives the same plan on 1 and 3 threads; refuses 0 and fractions naming the flag', () => {
    const dir = mkdtempSync(join(tmpdir(), 'trace-alloc-threads-cli-'));
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
    const file = join(dir, 'f.json');
    const f = generateRegularForest({ trees: 300, branching: 4, depth: 3, dim: 32, seed: 2 });
    const trees = Array.from({ length: f.treeCount }, (_, t) => ({
      id: f.treeIds[t],
      nodes: Array.from({ length: f.treeOffset[t + 1] - f.treeOffset[t] }, (_, v) => {
        const row = f.treeOffset[t] + v;
        return { parent: v === 0 ? -1 : f.parentRow[row] - f.treeOffset[t], reward: f.reward[row], visits: f.visits[row], uncertainty: f.uncertainty[row], embedding: Array.from(f.embedding.subarray(row * f.dim, (row + 1) * f.dim)) };
      }),
    }));
    writeFileSync(file, JSON.stringify({ dim: f.dim, trees }));
    const one = runCli(['score', file, '--backend', 'cpu', '--scores', '--threads', '1']);
    const three = runCli(['score', file, '--backend', 'cpu', '--scores', '--threads', '3']);
    expect(one.code).toBe(0);
    expect(three.code).toBe(0);
    expect(three.stdout).toBe(one.stdout);
    for (const bad of ['0', '1.5']) {
      const r = runCli(['score', file, '--threads', bad]);
      expect(r.code).toBe(2);
      expect(r.stderr).toMatch(/--threads must be an integer/);
    }
  });
});
