import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { PYTHON } from './python.js';

const root = fileURLToPath(new URL('..', import.meta.url));
const cli = `${root}dist/cli/main.js`;
const required = process.env.TRACE_ALLOC_REQUIRE_LLM === '1';
const probe = spawnSync(PYTHON, ['-c', 'import torch, transformers'], { encoding: 'utf8' });
const haveTorch = !probe.error && probe.status === 0;
if (!haveTorch && !required) {
  console.warn(`examples/llm smoke test skipped: ${PYTHON} cannot import torch and transformers `
    + '(pip install -r examples/llm/requirements.txt; CI sets TRACE_ALLOC_REQUIRE_LLM=1 so it cannot skip there)');
}

interface Step { tokens: number; loss: number; rollouts: number; nodes: number }
interface Run {
  sampler: string; steps: Step[]; loss_finite: boolean; tokens_used: number; curve: Array<[number, number]>;
  plans?: number; planned_branches?: number; launched?: number; forests_sent?: number; nodes_sent?: number[];
  last_forest_nodes?: number; service_stats?: { nodes: number; trees: number }; plan_budget_mismatches?: number;
  transport?: string; config: { tokens_per_step: number; steps: number; prompts_per_step: number; trace_rollouts_per_tree: number };
}

describe.skipIf(!haveTorch && !required)('examples/llm: tree-rollout GRPO on a tiny transformer (smoke run)', () => {
  // Made inside the test, not in the describe body: vitest runs a skipped suite's body too (to
  // collect it), and a folder made there was left behind on machines without torch.
  let out: string | undefined;
  afterAll(() => { if (out) rmSync(out, { recursive: true, force: true }); });

  it('trains with all four samplers at exactly the token budget, TRACE following its plans', () => {
    if (!haveTorch) throw new Error(`TRACE_ALLOC_REQUIRE_LLM=1 but ${PYTHON} cannot import torch and transformers: ${probe.stderr}`);
    if (!existsSync(cli)) throw new Error(`${cli} is missing: build first (npm run build)`);
    out = mkdtempSync(join(tmpdir(), 'trace-alloc-llm-'));
    // torch writes caches under the temp folder (torchinductor_<user>): keep them inside ours.
    const env = { ...process.env, TMPDIR: out, TORCHINDUCTOR_CACHE_DIR: join(out, 'torchinductor') };
    const run = spawnSync(PYTHON, [`${root}examples/llm/run.py`, '--smoke', '--out', join(out, 'results')], { encoding: 'utf8', timeout: 110_000, env });
    expect(run.status, run.stderr).toBe(0);
    const result = JSON.parse(readFileSync(join(out, 'results', 'results.json'), 'utf8')) as { runs: Run[]; allocator: { params: { alpha: number; tau: number } } };
    expect(result.runs.map((r) => r.sampler)).toEqual(['independent', 'uniform', 'trace', 'trace-learned']);
    for (const r of result.runs) {
      // Every sampler spends exactly the same generated-token budget in every step.
      expect(r.steps.map((s) => s.tokens), r.sampler).toEqual(Array(r.config.steps).fill(r.config.tokens_per_step));
      expect(r.tokens_used).toBe(r.config.steps * r.config.tokens_per_step);
      expect(r.loss_finite, r.sampler).toBe(true);
      expect(r.steps.every((s) => Number.isFinite(s.loss))).toBe(true);
      expect(r.curve.length).toBeGreaterThanOrEqual(2);
      for (const [, success] of r.curve) expect(success).toBeGreaterThanOrEqual(0);
    }
    for (const r of result.runs.filter((x) => x.sampler.startsWith('trace'))) {
      // Every branch of every plan was started, and each plan placed the whole round budget
      // (a root is never terminal, so every tree stays live and nothing is left unallocated).
      expect(r.launched, r.sampler).toBe(r.planned_branches);
      expect(r.planned_branches).toBe(r.plans! * r.config.prompts_per_step * r.config.trace_rollouts_per_tree);
      expect(r.plan_budget_mismatches).toBe(0);
      // More plans than steps: the incremental path (new nodes, changed fields) ran too.
      expect(r.plans!).toBeGreaterThan(r.config.steps);
      expect(r.forests_sent).toBe(r.plans! + 1);
      // After the run the service's live forest is the trainer's last forest, node for node.
      expect(r.nodes_sent!.at(-1)).toBe(r.last_forest_nodes);
      expect(r.service_stats!.nodes).toBe(r.last_forest_nodes);
      expect(r.service_stats!.trees).toBe(r.config.prompts_per_step);
      expect(r.transport).toMatch(/binary|JSON/);
    }
    expect(readFileSync(join(out, 'results', 'curve.svg'), 'utf8')).toContain('<polyline');
  });
});
