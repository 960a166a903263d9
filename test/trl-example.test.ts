import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { PYTHON } from './python.js';

const root = fileURLToPath(new URL('..', import.meta.url));
const cli = `${root}dist/cli/main.js`;
const required = process.env.TRACE_ALLOC_REQUIRE_TRL === '1';
const probe = spawnSync(PYTHON, ['-c', 'import trl, torch, transformers'], { encoding: 'utf8' });
const haveTrl = !probe.error && probe.status === 0;
if (!haveTrl && !required) {
  console.warn(`examples/trl smoke test skipped: ${PYTHON} cannot import trl, torch and transformers '
    + '(pip install -r examples/trl/requirements.txt; set TRACE_ALLOC_REQUIRE_TRL=1 so it cannot skip)`);
}

interface Call {
  trees: number; tokens_used: number; tokens_budget: number; excess: number; unfinished: number;
  returned_finished: number; returned_unfinished: number; padded: number;
  continuous: boolean; concurrency: number | null; rounds: number;
}
interface Run {
  sampler: string; tokens: number[]; steps: { loss: number; frac_reward_zero_std: number | null }[]; success_before: number; success_after: number;
  wall_s: number; step_s: number[]; rollout_calls?: Call[]; completions_per_prompt?: number;
}

describe.skipIf(!haveTrl && !required)('examples/trl: GRPO in TRL with TRACE tree rollouts (smoke run)', () => {
  // The temp folder is made inside the test: vitest runs a skipped suite's body too.
  it('trains 2 steps with TRL\'s default sampling and with continuously placed tree rollouts at the same tokens, none cut', () => {
    if (!haveTrl) throw new Error(`TRACE_ALLOC_REQUIRE_TRL=1 but python3 cannot import trl, torch and transformers: ${probe.stderr}`);
    if (!existsSync(cli)) throw new Error(`${cli} is missing: build first (npm run build)`);
    const out = mkdtempSync(join(tmpdir(), 'trace-alloc-trl-'));
    try {
    // torch and the HF libraries keep caches in the temp folder and HF_HOME: both inside ours.
    const env = { ...process.env, TMPDIR: out, HF_HOME: join(out, 'hf'), TORCHINDUCTOR_CACHE_DIR: join(out, 'torchinductor'), HF_HUB_OFFLINE: '1' };
    const run = spawnSync(PYTHON, [`${root}examples/trl/train.py`, '--smoke', '--out', join(out, 'results')], { encoding: 'utf8', timeout: 150_000, env });
    expect(run.status, run.stderr).toBe(0);
    const result = JSON.parse(readFileSync(join(out, 'results', 'results.json'), 'utf8')) as { runs: Run[]; config: { steps: number; prompts_per_step: number; num_generations: number } };
    const { steps, prompts_per_step: prompts, num_generations: generations } = result.config;
    expect(result.runs.map((r) => r.sampler)).toEqual(['independent', 'trace', 'trace-treerl']);
    const [independent, ...trees] = result.runs;
    expect(independent.tokens).toHaveLength(steps);
    for (const r of result.runs) {
      expect(r.steps, r.sampler).toHaveLength(steps);
      expect(r.steps.every((s) => Number.isFinite(s.loss)), r.sampler).toBe(true);
      expect(r.success_after).toBeGreaterThanOrEqual(0);
      // The training run's wall-clock, and each step's, recorded (what the committed run compares).
      expect(r.wall_s, r.sampler).toBeGreaterThan(0);
      expect(r.step_s, r.sampler).toHaveLength(steps);
      expect(r.step_s.every((s) => s > 0 && s <= r.wall_s), r.sampler).toBe(true);
    }
    for (const r of trees) {
      // TRL's default sampling's tokens: each step's budget is its tokens at that step, less what
      // earlier steps spent past theirs (at most half), because rollouts running at a budget's end
      // finish (budget_end "finish", the example's default); over the run, the same total plus
      // what the last step still owes.
      expect(r.rollout_calls).toHaveLength(steps);
      let owed = 0;
      r.rollout_calls!.forEach((call, i) => {
        expect(call.tokens_budget, `${r.sampler} step ${i + 1}`).toBe(independent.tokens[i] - Math.min(owed, Math.floor(independent.tokens[i] / 2)));
        expect(call.tokens_used).toBe(r.tokens[i]);
        expect(call.returned_unfinished + call.unfinished, `${r.sampler} step ${i + 1}: nothing cut`).toBe(0);
        owed = call.excess;
      });
      const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);
      expect(sum(r.tokens), r.sampler).toBe(sum(independent.tokens) + owed);
      for (const call of r.rollout_calls!) {
        // One tree per prompt and exactly num_generations completions per prompt.
        expect(call.trees).toBe(prompts);
        expect(call.returned_finished + call.returned_unfinished + call.padded).toBe(prompts * generations);
        // Continuous placement by default: as many rollouts running as TRL asked for completions,
        // slots refilled by place requests (no rounds).
        expect(call.continuous, r.sampler).toBe(true);
        expect(call.concurrency, r.sampler).toBe(prompts * generations);
        expect(call.rounds, r.sampler).toBeGreaterThanOrEqual(1);
      }
    }
    expect(readFileSync(join(out, 'results', 'summary.md'), 'utf8')).toContain('| trace-treerl |');
    // It trains something: not every reward alike, so not every advantage and loss 0 (as with a
    // policy that never solves a prompt).
    expect(result.runs.flatMap((r) => r.steps).some((s) => s.loss !== 0)).toBe(true);
    // What it prints says what it did: each sampler's steps with their tokens, rewards and loss,
    // why a loss is 0 where one is, and where the files went.
    for (const r of result.runs) {
      const block = run.stderr.split(/^seed \d+ /m).find((b) => b.startsWith(r.sampler + ' '))!;
      expect(block, r.sampler).toMatch(/success \d\.\d{3} -> \d\.\d{3}, \d+ tokens/);
      r.steps.forEach((s, i) => {
        const line = new RegExp(`step ${i + 1}: ${r.tokens[i]} generated tokens.*; ${prompts * generations} completions, mean reward \\d\\.\\d{3} \\(std \\d\\.\\d{3}\\); loss (-?\\d\\.\\d{4})(.*)`).exec(block);
        expect(line, `${r.sampler} step ${i + 1}: ${block}`).not.toBeNull();
        if (s.loss === 0 && s.frac_reward_zero_std === 1) expect(line![2]).toContain('every advantage is 0');
      });
    }
    expect(run.stderr).toContain(`wrote ${join(out, 'results', 'results.json')}`);
    // Nothing but what it was asked to write (the temp folder's own caches aside).
    expect(readdirSync(join(out, 'results')).sort()).toEqual(['results.json', 'summary.md']);

    // --resume extends the run in place: a new seed is trained, the kept runs stay as they were,
    // and the summary lists both invocations.
    const more = spawnSync(PYTHON, [`${root}examples/trl/train.py`, '--smoke', '--first-seed', '1', '--samplers', 'independent', '--resume', '--out', join(out, 'results')], { encoding: 'utf8', timeout: 150_000, env });
    expect(more.status, more.stderr).toBe(0);
    const extended = JSON.parse(readFileSync(join(out, 'results', 'results.json'), 'utf8')) as { runs: (Run & { seed: number })[]; samplers: string[]; invocations: unknown[]; command: string };
    expect(extended.runs.map((r) => `${r.seed} ${r.sampler}`)).toEqual(['0 independent', '0 trace', '0 trace-treerl', '1 independent']);
    expect(extended.runs.slice(0, 3)).toEqual(result.runs);
    expect(extended.samplers).toEqual(['independent', 'trace', 'trace-treerl']);
    expect(extended.invocations).toHaveLength(2);
    expect(extended.command).toMatch(/--smoke --out .* ; python3 examples\/trl\/train.py --smoke --first-seed 1 .*--resume/);
    const summaryText = readFileSync(join(out, 'results', 'summary.md'), 'utf8');
    expect(summaryText).toContain('Invocations (`--resume` keeps the runs before it)');
    // The header's wall-clock is both invocations', not the last one's.
    const walls = (extended.invocations as { machine: { wall_s: number } }[]).map((i) => i.machine.wall_s);
    expect(walls.every((w) => w > 0)).toBe(true);
    expect(summaryText).toContain(`Wall ${(walls[0] + walls[1]).toFixed(0)} s in 2 invocations`);
    } finally {
      rmSync(out, { recursive: true, force: true });
    }
  }, 220_000);

  it('--resume refuses kept runs made under other settings and a seed that holds only some of the samplers', () => {
    if (!haveTrl) throw new Error(`TRACE_ALLOC_REQUIRE_TRL=1 but python3 cannot import trl, torch and transformers: ${probe.stderr}`);
    const out = mkdtempSync(join(tmpdir(), 'trace-alloc-trl-'));
    try {
      const env = { ...process.env, TMPDIR: out, HF_HOME: join(out, 'hf'), TORCHINDUCTOR_CACHE_DIR: join(out, 'torchinductor'), HF_HUB_OFFLINE: '1' };
      const code = `
import sys; sys.path.insert(0, ${JSON.stringify(`${root}examples/trl`)})
from train import resume
cfg = {"seed": 0, "steps": 2, "learning_rate": 0.0005, "uncertainty": "next"}
old = {"config": cfg, "samplers": ["independent", "trace"], "command": "first", "machine": {},
       "runs": [{"seed": 0, "sampler": "independent"}, {"seed": 0, "sampler": "trace"}, {"seed": 1, "sampler": "independent"}]}
def fresh(**over):
    return {"config": {**cfg, **over}, "command": "second", "machine": {}}
jobs = lambda seeds, names: [({**cfg, "seed": s}, names) for s in seeds]
r = fresh()
kept, todo = resume(old, r, jobs([0, 2, 3], ["independent", "trace"]), ["independent", "trace"])
assert kept == old["runs"] and [c["seed"] for c, _ in todo] == [2, 3], todo
assert r["samplers"] == ["independent", "trace"] and r["seeds"] == 4 and r["command"] == "first ; second"
assert [i["command"] for i in r["invocations"]] == ["first", "second"]
for over, seeds, names, msg in [({"learning_rate": 0.001}, [2], ["independent"], "learning_rate 0.0005 (kept) against 0.001"),
                                 ({}, [1], ["independent", "trace"], "seed 1 holds independent but not trace")]:
    try:
        resume(old, fresh(**over), jobs(seeds, names), names); raise AssertionError("accepted: " + msg)
    except SystemExit as e:
        assert msg in str(e), str(e)
# Runs written before the uncertainty setting existed sent each turn's own entropy: they extend
# only under uncertainty "turn", not under today's default.
before = {**old, "config": {k: v for k, v in cfg.items() if k != "uncertainty"}}
try:
    resume(before, fresh(), jobs([2], ["independent"]), ["independent"]); raise AssertionError("accepted a turn run under next")
except SystemExit as e:
    assert "uncertainty 'turn' (kept) against 'next'" in str(e), str(e)
resume(before, fresh(uncertainty="turn"), jobs([2], ["independent"]), ["independent"])
# A kept run that followed an earlier default rule is not extended under today's (rule "" follows the default).
earlier = {**old, "runs": old["runs"][:1] + [{"seed": 0, "sampler": "trace", "rule": "v4"}]}
try:
    resume(earlier, fresh(), jobs([2], ["independent", "trace"]), ["independent", "trace"]); raise AssertionError("accepted a v4 run under v5")
except SystemExit as e:
    assert "seed 0's trace run planned under rule v4, the library's default then; the default is now v5" in str(e), str(e)
print("ok")
`;
      const run = spawnSync(PYTHON, ['-c', code], { encoding: 'utf8', timeout: 60_000, env });
      expect(run.stderr).toBe('');
      expect(run.stdout.trim()).toBe('ok');
    } finally {
      rmSync(out, { recursive: true, force: true });
    }
  }, 70_000);
});
