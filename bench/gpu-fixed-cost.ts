/**
 * What a GPU call costs besides its kernels, on calls small enough for that cost to dominate:
 * one-shot `score` of small forests (whole, and cut into many chunks), and `rescore` of a few
 * groups of a resident forest. Each GPU figure is the median over calls interleaved with the
 * CPU reference doing the same work, so on lavapipe only the ratio GPU ÷ CPU means anything;
 * the counters (bind groups and buffers created, work lists written, submissions per call) are
 * exact on any adapter.
 *   XDG_RUNTIME_DIR=/tmp/xdg npx tsx bench/gpu-fixed-cost.ts [--reps 40]
 */
import { pathToFileURL } from 'node:url';
import type { PackedForest } from '../src/forest/packed.js';
import { GpuContext } from '../src/gpu/context.js';
import { GpuScorer } from '../src/gpu/scorer.js';
import { allocateScores, CpuScratch, scoreGroupsCpu } from '../src/score/cpu.js';
import { resolveParams } from '../src/score/types.js';
import { generateRegularForest } from '../src/synth/generate.js';

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;

/** The context's per-call counters (absent before they existed: then '—'). */
function counters(ctx: GpuContext): number[] | undefined {
  const c = ctx as unknown as { bindGroups?: { created: number }; submits?: number; workListsWritten?: number };
  if (c.bindGroups === undefined || c.submits === undefined || c.workListsWritten === undefined) return undefined;
  return [c.bindGroups.created, ctx.pool.snapshot().created, c.workListsWritten, c.submits];
}

/** CPU reference over `groups` of `forest` (the float64 code the workers run), into one reused output. */
function cpuGroups(forest: PackedForest, groups: ArrayLike<number>): () => void {
  const params = resolveParams({ alpha: 0.7 });
  const out = allocateScores(forest, params, (n) => new Float64Array(n));
  const scratch = new CpuScratch();
  return () => { for (let i = 0; i < groups.length; i++) scoreGroupsCpu(forest, params, out, groups[i], groups[i] + 1, scratch); };
}

interface Case { label: string; groups: number; gpu: () => Promise<unknown>; cpu: () => void }

/** Runs the cases on `ctx` and returns the markdown table (header included). */
export async function fixedCostTable(ctx: GpuContext, reps: number): Promise<string> {
  const cases: Case[] = [];
  const owned: { destroy(): void }[] = [];
  try {
    for (const trees of [8, 64]) {
      const forest = generateRegularForest({ trees, branching: 4, depth: 3, dim: 128, seed: 1 });
      const all = Int32Array.from({ length: forest.groupCount }, (_, g) => g);
      for (const maxChunkBytes of [undefined, 65536]) {
        const scorer = await GpuScorer.create({ context: ctx, maxChunkBytes });
        owned.push(scorer);
        cases.push({ label: `score, ${trees} trees${maxChunkBytes ? ', 64 KiB chunks' : ''}`, groups: forest.groupCount, gpu: () => scorer.score(forest, { alpha: 0.7 }), cpu: cpuGroups(forest, all) });
      }
    }
    const forest = generateRegularForest({ trees: 1024, branching: 4, depth: 3, dim: 128, seed: 2 });
    for (const maxChunkBytes of [undefined, 1 << 20]) {
      const scorer = await GpuScorer.create({ context: ctx, maxChunkBytes });
      owned.push(scorer);
      const resident = await scorer.resident(forest);
      owned.push(resident);
      // 1 % of the groups, spread over the forest (and so over every chunk).
      const groups = Int32Array.from({ length: Math.ceil(forest.groupCount / 100) }, (_, i) => i * 100);
      cases.push({ label: `rescore 1 % of 1024 trees${maxChunkBytes ? `, ${resident.chunkCount} chunks` : ''}`, groups: groups.length, gpu: () => resident.rescore(groups, { alpha: 0.7 }), cpu: cpuGroups(forest, groups) });
    }

    const lines = [
      `adapter: ${ctx.adapterName}; medians of ${reps} interleaved calls each`,
      '',
      '| call | groups | GPU ms | CPU ms | GPU ÷ CPU | per call: bind groups created · buffers created · work lists written · submits |',
      '| --- | ---: | ---: | ---: | ---: | --- |',
    ];
    for (const c of cases) {
      for (let i = 0; i < 3; i++) { await c.gpu(); c.cpu(); } // warm: pipelines, pooled buffers, JIT
      const g: number[] = [], p: number[] = [];
      const c0 = counters(ctx);
      for (let r = 0; r < reps; r++) {
        let t = performance.now();
        await c.gpu();
        g.push(performance.now() - t);
        t = performance.now();
        c.cpu();
        p.push(performance.now() - t);
      }
      const c1 = counters(ctx);
      const per = c0 && c1 ? c1.map((v, i) => ((v - c0[i]) / reps).toFixed(2)).join(' · ') : '—';
      lines.push(`| ${c.label} | ${c.groups} | ${median(g).toFixed(3)} | ${median(p).toFixed(3)} | ${(median(g) / median(p)).toFixed(2)} | ${per} |`);
    }
    return lines.join('\n');
  } finally {
    for (const o of owned.reverse()) o.destroy();
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const at = process.argv.indexOf('--reps');
  const ctx = await GpuContext.create();
  try {
    console.log(await fixedCostTable(ctx, at >= 0 ? Number(process.argv[at + 1]) : 40));
  } finally {
    ctx.destroy();
  }
}
