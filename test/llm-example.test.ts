import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { DEFAULT_RULE } from '../src/allocate/options.js';
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

const SAMPLERS = ['independent', 'uniform', 'entropy', 'trace', 'trace-v5', 'trace-v4', 'trace-v3', 'trace-v2', 'trace-learned', 'independent-1.5x', 'independent-2x'];
const MULTIPLIER: Record<string, number> = { 'independent-1.5x': 1.5, 'independent-2x': 2 };

interface Step {
  tokens: number; loss: number; rollouts: number; nodes: number; scored_groups: number; mixed_groups: number;
  chain_rollouts: number; chain_tokens: number; fork_rollouts: number; fork_tokens: number; failed_tokens: number; tokens_from_lost_turn: number;
}
interface Run {
  sampler: string; seed: number; steps: Step[]; loss_finite: boolean; tokens_used: number; tokens_per_step: number;
  curve: Array<[number, number]>; final_success: number;
  plans?: number; planned_branches?: number; launched?: number; forests_sent?: number; nodes_sent?: number[];
  last_forest_nodes?: number; service_stats?: { nodes: number; trees: number }; plan_budget_mismatches?: number;
  transport?: string; rule?: string; rule_asked?: string | null;
  config: { tokens_per_step: number; steps: number; prompts_per_step: number; trace_rollouts_per_tree: number; task: string };
}

interface SmokeResult {
  runs: Run[]; summary: { samplers: Record<string, { mixed_group_ratio: { mean: number } }> }; decoder_gap: number; task: string;
}

/** Throws unless torch, transformers and the built CLI are here (CI sets TRACE_ALLOC_REQUIRE_LLM=1). */
function requireLlm(): void {
  if (!haveTorch) throw new Error(`TRACE_ALLOC_REQUIRE_LLM=1 but ${PYTHON} cannot import torch and transformers: ${probe.stderr}`);
  if (!existsSync(cli)) throw new Error(`${cli} is missing: build first (npm run build)`);
}

/** Calls `fn` with a fresh temporary folder and an environment whose temp files (torch writes caches
 * there: torchinductor_<user>) stay inside it; the folder is removed afterwards. Made here, not when
 * the suite is collected, so a skipped run leaves nothing behind. */
function inScratch(fn: (out: string, env: NodeJS.ProcessEnv) => void): void {
  const out = mkdtempSync(join(tmpdir(), 'trace-alloc-llm-'));
  try {
    fn(out, { ...process.env, TMPDIR: out, TORCHINDUCTOR_CACHE_DIR: join(out, 'torchinductor') });
  } finally {
    rmSync(out, { recursive: true, force: true });
  }
}

/** Runs `run.py --smoke` with `args` in a temporary folder; returns the parsed results and stdout. */
function smokeRun(args: string[], check: (result: SmokeResult, stdout: string, dir: string) => void): void {
  requireLlm();
  inScratch((out, env) => {
    const run = spawnSync(PYTHON, [`${root}examples/llm/run.py`, '--smoke', ...args, '--out', join(out, 'results')], { encoding: 'utf8', timeout: 110_000, env });
    expect(run.status, run.stderr).toBe(0);
    check(JSON.parse(readFileSync(join(out, 'results', 'results.json'), 'utf8')) as SmokeResult, run.stdout, join(out, 'results'));
  });
}

/** What every smoke run must show, whatever the task: each row spent exactly its budget in every
 * step, the decoder matched transformers, every loss is finite; TRACE started every branch of
 * every plan, each plan placed the whole round budget, there were several rounds per step, and the
 * service's live forest is the trainer's last one. */
function expectSmokeInvariants(result: SmokeResult): void {
  // The decoder that generates every rollout agrees with the transformers forward pass.
  expect(result.decoder_gap).toBeLessThan(1e-4);
  for (const r of result.runs) {
    // Every sampler spends exactly its generated-token budget in every step: the same for all,
    // 1.5 and 2 times it for the compute-equivalence rows.
    const budget = Math.round(r.config.tokens_per_step * (MULTIPLIER[r.sampler] ?? 1));
    expect(r.tokens_per_step, r.sampler).toBe(budget);
    expect(r.steps.map((s) => s.tokens), r.sampler).toEqual(Array(r.config.steps).fill(budget));
    expect(r.tokens_used).toBe(r.config.steps * budget);
    expect(r.loss_finite, r.sampler).toBe(true);
    expect(r.curve.length).toBeGreaterThanOrEqual(2);
    expect(r.curve.at(-1)![1]).toBe(r.final_success);
    for (const [, success] of r.curve) expect(success).toBeGreaterThanOrEqual(0);
    for (const s of r.steps) {
      expect(s.mixed_groups).toBeLessThanOrEqual(s.scored_groups);
      // Finished rollouts split into fresh chains and forks; chains never fork; a failed
      // rollout's tokens from the turn it was lost at are part of its tokens.
      expect(s.chain_rollouts + s.fork_rollouts).toBeLessThanOrEqual(s.rollouts);
      expect(s.chain_tokens + s.fork_tokens).toBeLessThanOrEqual(s.tokens);
      if (r.sampler.startsWith('independent')) expect(s.fork_rollouts, r.sampler).toBe(0);
      expect(s.tokens_from_lost_turn).toBeLessThanOrEqual(s.failed_tokens);
    }
  }
  for (const r of result.runs.filter((x) => x.sampler.startsWith('trace'))) {
    // Every branch of every plan was started, and each plan placed the whole round budget
    // (a root is never terminal, so every tree stays live and nothing is left unallocated).
    expect(r.launched, r.sampler).toBe(r.planned_branches);
    expect(r.planned_branches).toBe(r.plans! * r.config.prompts_per_step * r.config.trace_rollouts_per_tree);
    expect(r.plan_budget_mismatches).toBe(0);
    // Several allocation rounds per step.
    expect(r.plans!).toBeGreaterThan(2 * r.config.steps);
    expect(r.forests_sent).toBe(r.plans! + 1);
    // After the run the service's live forest is the trainer's last forest, node for node.
    expect(r.nodes_sent!.at(-1)).toBe(r.last_forest_nodes);
    expect(r.service_stats!.nodes).toBe(r.last_forest_nodes);
    expect(r.service_stats!.trees).toBe(r.config.prompts_per_step);
    expect(r.transport).toMatch(/binary/);
  }
}

/** Runs a Python snippet that prints "ok" when its asserts hold, with nothing on stderr. */
function expectPythonOk(code: string): void {
  inScratch((_out, env) => {
    const run = spawnSync(PYTHON, ['-c', code], { encoding: 'utf8', timeout: 60_000, env });
    expect(run.stderr).toBe('');
    expect(run.stdout.trim()).toBe('ok');
  });
}

describe.skipIf(!haveTorch && !required)('examples/llm: tree-rollout GRPO on a GPT-2 policy (smoke run)', () => {
  it('trains with every sampler at exactly its token budget, TRACE following its plans under the rule each row asks for', () => {
    smokeRun([], (result, stdout, dir) => {
      expect(result.task).toBe('calculator');
      expect(result.runs.map((r) => r.sampler)).toEqual(SAMPLERS);
      expectSmokeInvariants(result);
      // `trace` and `trace-learned` pass no rule, so they follow the library's default; `trace-v3` and `trace-v2` ask for theirs.
      const byName = Object.fromEntries(result.runs.map((r) => [r.sampler, r]));
      expect(byName.trace.rule_asked).toBeNull();
      expect(byName.trace.rule).toBe(DEFAULT_RULE);
      expect(byName['trace-learned'].rule).toBe(DEFAULT_RULE);
      expect(byName['trace-v4'].rule_asked).toBe('v4');
      expect(byName['trace-v4'].rule).toBe('v4');
      expect(byName['trace-v3'].rule_asked).toBe('v3');
      expect(byName['trace-v3'].rule).toBe('v3');
      expect(byName['trace-v2'].rule_asked).toBe('v2');
      expect(byName['trace-v2'].rule).toBe('v2');
      expect(readFileSync(join(dir, 'curve.svg'), 'utf8')).toContain('<polyline');
      // It trains something (some rollouts succeed, so some advantage and loss is not 0), and what
      // it prints says what each sampler did, step by step, and why a loss is 0 where one is.
      expect(result.runs.flatMap((r) => r.steps).some((s) => s.loss !== 0)).toBe(true);
      expect(stdout).toMatch(/^smoke run: seed 0, 3 steps per sampler/m);
      for (const r of result.runs) {
        const block = stdout.split(/^(?=\S)/m).find((b) => b.startsWith(`${r.sampler} `))!;
        expect(block, r.sampler).toMatch(/success \d\.\d{3} -> \d\.\d{3}/);
        r.steps.forEach((s, i) => {
          const line = new RegExp(`step ${i + 1}: ${s.tokens} generated tokens, \\d+ rollouts \\(\\d+ finished, \\d+ succeeded\\), ${s.mixed_groups} of ${s.scored_groups} groups mixed, loss (-?\\d\\.\\d{4})(.*)`).exec(block);
          expect(line, `${r.sampler} step ${i + 1}: ${block}`).not.toBeNull();
          if (s.loss === 0 && s.mixed_groups === 0) expect(line![2]).toContain('every advantage is 0');
        });
      }
      expect(stdout).toContain(`results.json, summary.md and the charts are in ${dir}`);
      expect(readFileSync(join(dir, 'summary.md'), 'utf8')).toContain('| trace-v2 |');
    });
  });

  it('runs the recipe task (--task recipe) with chains, uniform expansion and TRACE under the same invariants', () => {
    // Three rows, not eight, to keep the test short: the rows differ in how they spend the
    // budget, which the calculator run above covers; what this run adds is the task's long turns
    // and sequences through the decoder, the Grower, the service and the report.
    smokeRun(['--task', 'recipe', '--samplers', 'independent,uniform,trace'], (result, stdout, dir) => {
      expect(result.task).toBe('recipe');
      expect(result.runs.map((r) => r.sampler)).toEqual(['independent', 'uniform', 'trace']);
      for (const r of result.runs) expect(r.config.task).toBe('recipe');
      expectSmokeInvariants(result);
      // Recipe turns are longer than the calculator's 4-token cap: some turn went past it.
      expect(result.runs.some((r) => r.steps.some((s) => s.chain_rollouts > 0 && s.chain_tokens / s.chain_rollouts > 5))).toBe(true);
      expect(stdout).toMatch(/^smoke run: seed 0, 3 steps per sampler, 4 prompts per step, the recipe task/m);
      expect(readFileSync(join(dir, 'summary.md'), 'utf8')).toMatch(/^# GPT-2 policy on the recipe task/);
    });
  });
});

describe.skipIf(!haveTorch && !required)('examples/llm: the GRPO advantage option', () => {
  it('gives each turn the sum over the rollouts through it of (reward − tree mean) / rollouts, and refuses an unknown name', () => {
    if (!haveTorch) throw new Error(`TRACE_ALLOC_REQUIRE_LLM=1 but ${PYTHON} cannot import torch and transformers: ${probe.stderr}`);
    // A tree of three finished rollouts, two of them sharing their first turn (rewards 1, 0 below
    // it, 1 from the other first turn): tree mean 2/3; the shared turn carries (1 − 2/3) + (0 − 2/3)
    // over 3, the other first turn (1 − 2/3)/3, the losing leaf (0 − 2/3)/3.
    const code = `
import sys; sys.path.insert(0, ${JSON.stringify(`${root}examples/llm`)})
from forest import Forest, Node
from train import policy_update
f = Forest.__new__(Forest); f.prompts = []; f.nodes = []; f.tree_nodes = []; f.roots = []
def add(parent, visits, reward_sum):
    n = Node(0, parent, [], (0, 0), 0, 0, 0, visits=visits, reward_sum=reward_sum)
    return f._add(n)
r = add(-1, 3, 2.0); f.roots.append(r)
a = add(r, 2, 1.0); b = add(r, 1, 1.0); a1 = add(a, 1, 1.0); a2 = add(a, 1, 0.0)
adv = f.grpo_advantages()
exp = {a: (1 - 2/3 + 0 - 2/3) / 3, b: (1 - 2/3) / 3, a1: (1 - 2/3) / 3, a2: (0 - 2/3) / 3}
assert set(adv) == {k for k, v in exp.items() if v != 0}, adv
assert all(abs(adv[k] - exp[k]) < 1e-12 for k in adv), (adv, exp)
try:
    policy_update(None, None, f, 1, "nope"); raise SystemExit("accepted an unknown advantage")
except ValueError:
    pass
print("ok")
`;
    expectPythonOk(code);
  });
});

describe.skipIf(!haveTorch && !required)('examples/llm: shared prefixes (prefix cache and tree-packed update)', () => {
  it('packs a hand-built tree with each token once, its positions, predecessors and ancestor-only attention', () => {
    requireLlm();
    // Prompt [1, 2]; turn a = [5, 6] answered 9; turn b = [7] answered 9; below a, turn a1 = [3]
    // answered 4. Weights a 0.5, b −0.25, a1 1 (the root carries none).
    const code = `
import sys; sys.path.insert(0, ${JSON.stringify(`${root}examples/llm`)})
import numpy as np
from forest import Forest, Node
f = Forest.__new__(Forest); f.prompts = []; f.nodes = []; f.tree_nodes = []; f.roots = []
def add(parent, seq, span):
    return f._add(Node(0, parent, seq, span, 0, 0, 0))
r = add(-1, [1, 2], (2, 2)); f.roots.append(r)
a = add(r, [1, 2, 5, 6, 9], (2, 4)); b = add(r, [1, 2, 7, 9], (2, 3)); a1 = add(a, [1, 2, 5, 6, 9, 3, 4], (5, 6))
(t,) = f.packed({a: 0.5, b: -0.25, a1: 1.0})
assert t.tokens == [1, 2, 5, 6, 9, 7, 9, 3, 4], t.tokens
assert t.positions == [0, 1, 2, 3, 4, 2, 3, 5, 6], t.positions
assert t.previous == [-1, 0, 1, 2, 3, 1, 5, 4, 7], t.previous
assert t.weights == [0, 0, 0.5, 0.5, 0, -0.25, 0, 1.0, 0], t.weights
sees = {i: sorted(np.flatnonzero(t.visible[i]).tolist()) for i in range(9)}
assert sees[5] == [0, 1, 5] and sees[6] == [0, 1, 5, 6], sees  # b sees the prompt, not a
assert sees[7] == [0, 1, 2, 3, 4, 7] and sees[8] == [0, 1, 2, 3, 4, 7, 8], sees  # a1 sees the prompt and a, not b
assert sees[4] == [0, 1, 2, 3, 4], sees
# Only weighted nodes and their ancestors: weighting a1 alone leaves b out.
(t2,) = f.packed({a1: 1.0})
assert t2.tokens == [1, 2, 5, 6, 9, 3, 4], t2.tokens
assert f.packed({}) == []
print("ok")
`;
    expectPythonOk(code);
  });

  it('gives the carriers\' loss and gradient from the packed rows, reuses finished rows\' keys and values for forks with the same tokens, and refuses a cache with nothing left to feed', () => {
    requireLlm();
    const code = `
import sys; sys.path.insert(0, ${JSON.stringify(`${root}examples/llm`)})
import random, torch, transformers
torch.set_num_threads(1)
transformers.logging.set_verbosity_error()
from decode import Decoder
from forest import Forest, Grower, stream_uniforms
from model import build_model, packed_weighted_log_prob, pretrain, weighted_log_prob
from samplers import EntropySampler
from tasks import get_task
import train
task = get_task("recipe")
model = build_model(3, task=task)
pretrain(model, 3, 40, task=task)  # a random policy ends every episode at its first turn: nothing to fork
prompts = task.make_prompts(random.Random(5), 4)
grown = {}
for cache in (False, True):
    f = Forest(prompts, task)
    g = Grower(f, model, stream_uniforms(torch.Generator().manual_seed(11)), 600, prefix_cache=cache)
    EntropySampler().grow(g, model)
    grown[cache] = (f, g)
(f, g), (fc, gc) = grown[False], grown[True]
# Copied prefixes sampled the same tokens (here exactly; in general up to rounding's rare flips).
assert g.cached_prefix_tokens == 0 and gc.cached_prefix_tokens > 0
assert [n.seq for n in f.nodes] == [n.seq for n in fc.nodes]
assert g.fork_rollouts > 0
# A rollout started below a prompt copies all of its start node's sequence but the last token.
v = next(v for v, n in enumerate(fc.nodes) if n.parent >= 0 and not n.terminal and n.visits > 0)
before, gc.budget = gc.cached_prefix_tokens, gc.budget + 40
assert gc.run([v]) == 1
assert gc.cached_prefix_tokens - before == len(fc.nodes[v].seq) - 1, (gc.cached_prefix_tokens - before, len(fc.nodes[v].seq))
# Every node with a finished rollout below it, weighted at random: the same loss and gradient both ways.
rng = random.Random(2)
weights = {v: rng.uniform(-1, 1) for v, n in enumerate(f.nodes) if n.parent >= 0 and n.visits > 0}
model.train()
out = []
for packed in (False, True):
    model.zero_grad()
    loss = packed_weighted_log_prob(model, f.packed(weights)) if packed else weighted_log_prob(model, *f.carriers(weights))
    loss.backward()
    out.append((float(loss.detach()), torch.cat([p.grad.flatten() for p in model.parameters()])))
assert abs(out[0][0] - out[1][0]) <= 1e-5 * abs(out[0][0]), out
assert float((out[0][1] - out[1][1]).norm()) <= 1e-5 * float(out[0][1].norm())
assert model.config._attn_implementation == "eager"  # the packed call's SDPA is undone
# policy_update gives the same loss under both layouts; "auto" takes the cheaper by update_cost,
# which prices a long row's attention: for these forks, trees (4 rows against dozens of leaves);
# for two leaves of 40 tokens against one tree row of 75, leaves. An unknown layout is refused.
train.ADVANTAGES["fixed"] = lambda forest: weights
opt = torch.optim.SGD(model.parameters(), lr=0.0)
losses = {rows: train.policy_update(model, opt, f, 4, "fixed", rows)[0] for rows in ("leaves", "trees")}
assert abs(losses["leaves"] - losses["trees"]) <= 1e-5 * abs(losses["leaves"]), losses
train.policy_update(model, opt, f, 4, "fixed", "auto")
assert f.update_rows == "trees", f.update_rows
assert train.update_cost([40, 40]) < train.update_cost([75])
assert f.packed_lengths(weights) == [len(t.tokens) for t in f.packed(weights)]
try:
    train.policy_update(model, opt, f, 4, "fixed", "nodes"); raise SystemExit("accepted update_rows 'nodes'")
except ValueError as e:
    assert "update_rows" in str(e)
# A decoder whose rows copy an earlier row's first n tokens gives the logits of one that computed them.
model.eval()
seq = f.nodes[max(range(len(f.nodes)), key=lambda v: len(f.nodes[v].seq))].seq
whole = Decoder(model, [seq[:30]], task.max_sequence)
kv = whole.row_cache(0)
assert kv[0].shape[2] == 30
copied = Decoder(model, [seq[:30], seq[:12]], task.max_sequence, [(kv[0][:, :, :29], kv[1][:, :, :29]), (kv[0][:, :, :5], kv[1][:, :, :5])])
fresh = Decoder(model, [seq[:30], seq[:12]], task.max_sequence)
assert float((copied.logits - fresh.logits).abs().max()) < 1e-5
copied.feed([seq[30:33], seq[12:13]]); fresh.feed([seq[30:33], seq[12:13]])
assert float((copied.logits - fresh.logits).abs().max()) < 1e-5
try:
    Decoder(model, [seq[:30]], task.max_sequence, [kv]); raise SystemExit("accepted a cache holding the whole prefix")
except ValueError as e:
    assert "one must be left" in str(e)
print("ok")
`;
    expectPythonOk(code);
  });

  it('--set prefix_cache=true --set update_rows=auto spends exactly the budget and records each step\'s update rows and copied prefix tokens', () => {
    smokeRun(['--task', 'recipe', '--samplers', 'independent,entropy,trace', '--set', 'prefix_cache=true', '--set', 'update_rows=auto'], (result) => {
      expectSmokeInvariants(result);
      for (const r of result.runs) {
        const steps = r.steps as unknown as Array<{ update_rows: string; cached_prefix_tokens: number; update_nodes: number }>;
        for (const s of steps) {
          // No update when every weight was 0; otherwise one of the two layouts.
          if (s.update_rows === '') expect(s.update_nodes, r.sampler).toBe(0);
          else expect(['leaves', 'trees']).toContain(s.update_rows);
        }
        // Entropy forking starts rollouts below finished ones every step after its first run.
        if (r.sampler === 'entropy') expect(steps.reduce((a, s) => a + s.cached_prefix_tokens, 0)).toBeGreaterThan(0);
      }
    });
  });
});

describe.skipIf(!haveTorch && !required)('examples/llm: where a step\'s time goes (results/v5-default-timing/breakdown.py)', () => {
  it('--smoke --replay prints each sampler row\'s step by part with its batches, decode calls and update tokens, and the trace rounds replayed three ways', () => {
    requireLlm();
    inScratch((out, env) => {
      const run = spawnSync(PYTHON, [`${root}examples/llm/results/v5-default-timing/breakdown.py`, '--smoke', '--replay',
        '--samplers', 'independent,entropy,trace,independent-1.5x'],
        { encoding: 'utf8', timeout: 220_000, env, cwd: out });
      expect(run.status, run.stderr).toBe(0);
      const cells = (label: string) => {
        const line = run.stdout.split('\n').find((l) => l.startsWith(`| ${label} |`));
        expect(line, `no row "${label}" in:\n${run.stdout}`).toBeDefined();
        return line!.split('|').slice(2, -1).map((c) => c.trim());
      };
      const pair = (cell: string) => cell.split(' / ').map(Number);
      // Every row asked for is its own row, chains at 1.5x tokens too (the same sampler class as chains).
      for (const sampler of ['independent', 'entropy', 'trace', 'independent-1.5x']) {
        const row = cells(sampler);
        expect(row, sampler).toHaveLength(13);
        const [steps, , pack, sync, plan] = row.slice(0, 5).map(Number);
        expect(steps, sampler).toBe(3);
        // Only TRACE calls the allocator: it packs, syncs and plans every round (each printed to
        // 0.1 ms, so one part alone may round to 0 on a fast machine; together they cannot).
        if (sampler !== 'trace') expect([pack, sync, plan], sampler).toEqual([0, 0, 0]);
        else expect(pack + sync + plan).toBeGreaterThan(0);
        const [fed, padded] = pair(row[9]);
        expect(padded, sampler).toBeGreaterThanOrEqual(fed);
        const [batches, calls] = [Number(row[10]), Number(row[11])];
        expect(batches, sampler).toBeGreaterThanOrEqual(1);
        // A turn is many tokens, so a step's batches decode token by token after their prefills.
        expect(calls, sampler).toBeGreaterThan(0);
        // A leaf's row repeats the prefix it shares with other leaves; packed, each token counts once.
        const [asLeaves, distinct] = pair(row[12]);
        expect(distinct, sampler).toBeGreaterThan(0);
        expect(asLeaves, sampler).toBeGreaterThanOrEqual(distinct);
      }
      for (const label of ['in the training loop', 'replayed back to back', 'replayed, the trainer busy with torch between rounds',
        'replayed, the trainer asleep between rounds']) {
        for (const ms of cells(label).map(Number)) expect(ms, label).toBeGreaterThan(0);
      }
    });
  }, 240_000);
});

describe.skipIf(!haveTorch && !required)('examples/llm: the recipe task', () => {
  it('scores solved episodes 1 and each way to fail 0, knows where an episode is lost, and trains on its long turns', () => {
    if (!haveTorch) throw new Error(`TRACE_ALLOC_REQUIRE_LLM=1 but ${PYTHON} cannot import torch and transformers: ${probe.stderr}`);
    const code = `
import itertools, math, random, sys; sys.path.insert(0, ${JSON.stringify(`${root}examples/llm`)})
import torch
import recipe as R
from task import ADD, ANSWER, MUL, Tokenizer
from tasks import RECIPE
from forest import Forest
from model import build_model
from train import policy_update, tree_metrics
tok = Tokenizer(R.TOKENS)
enc = tok.encode

def play(forest, tree, turns):
    """Each turn after the last, from the tree's root; the node ids."""
    v, out = forest.roots[tree], []
    for t in turns:
        v = forest.add_turn(v, t, [0.5] * len(t), None)
        out.append(v)
    return out

prompts = R.make_prompts(random.Random(1), 32)
assert sorted(p.difficulty for p in prompts) == [1] * 20 + [2] * 12, [p.difficulty for p in prompts]
assert all(len(p.recipe) in R.RECIPE_LENGTHS and p.recipe_end <= R.RECIPE_MAX_END for p in prompts)
f = Forest(prompts, RECIPE)
for t, p in enumerate(prompts):
    # The fewest transcript calls from the recipe's end that reach the target: a solved episode.
    own = next(c for n in (1, 2) for c in itertools.product(R.TRANSCRIPT_CALLS, repeat=n)
               if R.Prompt(p.recipe_end, c, p.target).recipe_end == p.target)
    nodes = play(f, t, R.solved_turns(p, own))
    assert [f.nodes[v].terminal for v in nodes] == [False] * (len(nodes) - 1) + [True]
    assert f.nodes[nodes[-1]].outcome == 1.0 and not any(f.lost(v) for v in nodes)
    assert [f.nodes[v].value for v in nodes[:-1]][-1] == p.target

p = R.Prompt(3, ((MUL, 2), (ADD, 4)), 15)
assert tok.decode(R.prompt_tokens(p)) == "<bos> S 3 MUL 2 ADD 4 T 15 ;"
assert [tok.decode(t) for t in R.solved_turns(p, ((ADD, 5),))] == [
    "MUL 2 ADD 4 T 15 : MUL 2 ;", "ADD 4 T 15 : ADD 4 ;", "T 15 : ADD 5 ;", "ANSWER 15 ;"]
f = Forest([p], RECIPE)
def outcome(*turns):
    nodes = play(f, 0, [enc(t) for t in turns])
    return f.nodes[nodes[-1]].terminal, f.nodes[nodes[-1]].outcome, nodes
# The plan is never checked: an empty one, or none, still makes the call.
assert outcome(": MUL 2 ;", "ADD 4 ;", "T 99 : ADD 5 ;", "ANSWER 15 ;")[:2] == (True, 1.0)
# A recipe call out of order, an answer before the recipe's end, a call with no ':' after its plan,
# a malformed turn, an answer that is not the value, an agent's fourth call: 0.
assert outcome("ADD 4 T 15 : ADD 4 ;")[:2] == (True, 0.0)
assert outcome("MUL 2 ADD 4 T 15 : MUL 2 ;", "ANSWER 6 ;")[:2] == (True, 0.0)
assert outcome("MUL 2 ADD 4 T 15 MUL 2 ;")[:2] == (True, 0.0)
assert outcome("MUL 2 ADD 4 T 15 : MUL ;")[:2] == (True, 0.0)
assert outcome("MUL 2 ;", "ADD 4 ;", "ADD 4 ;", "ANSWER 15 ;")[:2] == (True, 0.0)
assert outcome("MUL 2 ;", "ADD 4 ;", "ADD 1 ;", "ADD 1 ;", "ADD 1 ;", "ADD 2 ;")[:2] == (True, 0.0)
# Lost: inside the recipe never; after it, once the calls left cannot reach the target.
done, _, nodes = outcome("MUL 2 ;", "ADD 4 ;", "MUL 2 ;")
assert not done and [f.lost(v) for v in nodes] == [False, False, True]
done, _, nodes = outcome("MUL 2 ;", "ADD 4 ;", "ADD 1 ;", "ADD 1 ;", "ADD 1 ;")
assert not done and [f.lost(v) for v in nodes] == [False, False, False, False, True]

# Failed rollouts' tokens from the turn each was lost at on, by hand: "MUL 2 ; ADD 4 ; MUL 2 ;
# ANSWER 20 ;" is lost at its third turn (3 + 3 tokens of its 13); "... ADD 4 ; ANSWER 14 ;" at
# its answer (4 of 10).
f = Forest([p], RECIPE)
play(f, 0, [enc(t) for t in ("MUL 2 ;", "ADD 4 ;", "MUL 2 ;", "ANSWER 20 ;")])
play(f, 0, [enc(t) for t in ("MUL 2 ;", "ADD 4 ;", "ANSWER 14 ;")])
m = tree_metrics(f)
assert (m["failed_tokens"], m["tokens_from_lost_turn"], m["lost_at_turn"]) == (13 + 10, 7 + 4, {"3": 2}), m

# One update on a solved and a failed episode of the same prompt: a finite loss that is not 0.
f = Forest([p], RECIPE)
play(f, 0, R.solved_turns(p, ((ADD, 5),)))
play(f, 0, R.solved_turns(p, ((ADD, 6),)))
model = build_model(0, task=RECIPE)
loss, nodes = policy_update(model, torch.optim.Adam(model.parameters(), lr=1e-3), f, 1)
assert math.isfinite(loss) and loss != 0 and nodes > 0, (loss, nodes)
print("ok")
`;
    expectPythonOk(code);
  });
});

describe.skipIf(!haveTorch && !required)('examples/llm: TRACE on token sketches instead of hidden states', () => {
  it('--set embedding=sketch sends each turn\'s token sketch (width 256 whatever the hidden size) and spends exactly the budget', () => {
    requireLlm();
    inScratch((out, env) => {
      // hidden=32: a sketch row's width (256) differs from the hidden state's, so the service's dim tells which was sent.
      const run = spawnSync(PYTHON, [`${root}examples/llm/run.py`, '--smoke', '--samplers', 'independent,trace', '--set', 'embedding=sketch',
        '--set', 'hidden=32', '--out', join(out, 'results')], { encoding: 'utf8', timeout: 110_000, env });
      expect(run.status, run.stderr).toBe(0);
      const result = JSON.parse(readFileSync(join(out, 'results', 'results.json'), 'utf8')) as { runs: (Run & { service_stats: { dim: number } })[] };
      const trace = result.runs.find((r) => r.sampler === 'trace')!;
      expect((trace.config as unknown as { embedding: string }).embedding).toBe('sketch');
      expect(trace.service_stats.dim).toBe(256);
      expect(trace.steps.map((s) => s.tokens)).toEqual(Array(trace.config.steps).fill(trace.config.tokens_per_step));
      expect(trace.launched).toBe(trace.planned_branches);
      expect(trace.plans!).toBeGreaterThan(2 * trace.config.steps);
      expect(trace.service_stats.nodes).toBe(trace.last_forest_nodes);
      // An unknown kind of embedding is refused by name.
      const bad = spawnSync(PYTHON, [`${root}examples/llm/run.py`, '--smoke', '--samplers', 'trace', '--set', 'embedding=words',
        '--out', join(out, 'bad')], { encoding: 'utf8', timeout: 110_000, env });
      expect(bad.status).not.toBe(0);
      expect(bad.stderr).toContain('embedding must be one of hidden, sketch');
    });
  }, 2 * 110_000 + 20_000); // two run.py spawns, each allowed 110 s: on a loaded machine the default 120 s is not enough

  it('--set forest_view=trie --set uncertainty=next --set contest_gain=16 --set tree_floor=1000000 --set fork_keep=1 send the prefix trie with the next turns\' entropy under κ = 16, q0 = 10⁶ and η = 1 and spend exactly the budget; other values are refused', () => {
    requireLlm();
    inScratch((out, env) => {
      const run = spawnSync(PYTHON, [`${root}examples/llm/run.py`, '--smoke', '--task', 'recipe', '--samplers', 'trace', '--set', 'forest_view=trie',
        '--set', 'uncertainty=next', '--set', 'contest_gain=16', '--set', 'tree_floor=1000000', '--set', 'fork_keep=1', '--out', join(out, 'results')], { encoding: 'utf8', timeout: 110_000, env });
      expect(run.status, run.stderr).toBe(0);
      const result = JSON.parse(readFileSync(join(out, 'results', 'results.json'), 'utf8')) as { runs: (Run & { last_forest_turns: number })[] };
      const trace = result.runs[0];
      expect((trace.config as unknown as { forest_view: string; uncertainty: string; contest_gain: string; tree_floor: string; fork_keep: string }))
        .toMatchObject({ forest_view: 'trie', uncertainty: 'next', contest_gain: '16', tree_floor: '1000000', fork_keep: '1' });
      const summary = readFileSync(join(out, 'results', 'summary.md'), 'utf8');
      expect(summary).toContain("TRACE rows' contest gain κ = 16");
      expect(summary).toContain("TRACE rows' tree floor q0 = 1000000");
      expect(summary).toContain("TRACE rows' fork keep η = 1");
      expect(trace.steps.map((s) => s.tokens)).toEqual(Array(trace.config.steps).fill(trace.config.tokens_per_step));
      expect(trace.launched).toBe(trace.planned_branches);
      expect(trace.plan_budget_mismatches).toBe(0);
      expect(trace.service_stats!.nodes).toBe(trace.last_forest_nodes);
      expect(trace.last_forest_nodes!).toBeLessThanOrEqual(trace.last_forest_turns);
      // Runs committed before these settings existed trained on the first credit ("treerl"), sent
      // the plain forest and each turn's own entropy, prefilled every prefix and updated on
      // carrier leaves, which compare.py, --resume and merge.py assume; the credit's and
      // uncertainty's defaults have moved since, so --resume refuses such a folder under them.
      expectPythonOk(`import sys; sys.path.insert(0, ${JSON.stringify(`${root}examples/llm`)})
from dataclasses import asdict
from pathlib import Path
from train import Config
from report import LATER_SETTINGS
from run import resumable
assert LATER_SETTINGS == {"advantage": "treerl", "forest_view": "plain", "uncertainty": "turn", "contest_gain": "", "tree_floor": "", "fork_keep": "", "prefix_cache": False, "update_rows": "leaves"}, LATER_SETTINGS
assert Config().forest_view == "plain" and Config().uncertainty == "next" and Config().contest_gain == "" and Config().tree_floor == "" and Config().fork_keep == ""
assert Config().prefix_cache is False and Config().update_rows == "leaves" and Config().advantage == "treerl-branch"
old = {k: v for k, v in asdict(Config()).items() if k not in LATER_SETTINGS}
previous = {"command": "run.py", "machine": {}, "runs": [{"seed": 0, "sampler": "independent", "config": old}]}
try:
    resumable(previous, Config(uncertainty="turn"), Path("old"))
    raise AssertionError("a folder older than the credit setting resumed under another credit")
except SystemExit as e:
    assert "(advantage: treerl there, treerl-branch here)" in str(e), e
assert resumable(previous, Config(**LATER_SETTINGS), Path("old"))[0] == previous["runs"]
recorded = {**previous, "runs": [{"seed": 0, "sampler": "independent", "config": {**asdict(Config()), "advantage": "treerl-leaf"}}]}
try:
    resumable(recorded, Config(), Path("leaf"))
    raise AssertionError("a folder trained on treerl-leaf resumed under the default credit")
except SystemExit as e:
    assert "(advantage: treerl-leaf there, treerl-branch here)" in str(e), e
print("ok")`);
      // A setting the example or the service refuses stops the run with a message naming it. The
      // contest gain, tree floor and fork keep reach the service with every plan, which refuses a
      // value out of its range by name.
      const refused: Array<[setting: string, message: string]> = [
        ['forest_view=graph', 'view must be one of trie, plain'],
        ['contest_gain=-1', 'contestGain must be a number in [0, 1e6], got -1'],
        ['contest_gain=high', "contest_gain must be a number or empty (the rule's default), got 'high'"],
        ['tree_floor=0', 'treeFloor must be a number in (0, 1e6], got 0'],
        ['fork_keep=1.5', 'forkKeep must be a number in [0, 1], got 1.5'],
        ['uncertainty=before', 'uncertainty must be one of turn, next'],
      ];
      for (const [i, [setting, message]] of refused.entries()) {
        const run = spawnSync(PYTHON, [`${root}examples/llm/run.py`, '--smoke', '--samplers', 'trace', '--set', setting,
          '--out', join(out, `refused-${i}`)], { encoding: 'utf8', timeout: 110_000, env });
        expect(run.status, setting).not.toBe(0);
        expect(run.stderr).toContain(message);
      }
    });
  }, 7 * 110_000 + 20_000);

  it('--resume keeps the runs already written, runs only the missing (seed, sampler) pairs, and refuses other settings', () => {
    requireLlm();
    inScratch((out, env) => {
      const smoke = (samplers: string, dir: string, ...extra: string[]) => spawnSync(PYTHON, [`${root}examples/llm/run.py`, '--smoke',
        '--samplers', samplers, ...extra, '--out', join(out, dir)], { encoding: 'utf8', timeout: 110_000, env });
      type Result = { runs: Run[]; command: string; invocations: unknown[] };
      const read = (dir: string) => JSON.parse(readFileSync(join(out, dir, 'results.json'), 'utf8')) as Result;
      expect(smoke('independent', 'resumed').status).toBe(0);
      const first = read('resumed').runs[0];
      const resumed = smoke('independent,uniform', 'resumed', '--resume');
      expect(resumed.status, resumed.stderr).toBe(0);
      expect(resumed.stderr).toContain('1 runs kept');
      expect(resumed.stderr).toContain('1 (seed, sampler) pairs to run');
      const both = read('resumed');
      expect(both.runs.map((r) => r.sampler)).toEqual(['independent', 'uniform']);
      expect(both.invocations).toHaveLength(2);
      expect(both.command.split(' ; ')).toHaveLength(2);
      // The kept run is the one written first, untouched (its wall clock too: it was not rerun).
      expect(both.runs[0]).toEqual(first);
      // The added run is what one invocation with both samplers gives (training is seeded; clocks aside).
      expect(smoke('independent,uniform', 'once').status).toBe(0);
      const once = read('once').runs.find((r) => r.sampler === 'uniform')!;
      const added = both.runs[1];
      expect(added.curve).toEqual(once.curve);
      expect(added.steps.map((s) => [s.tokens, s.rollouts, s.loss])).toEqual(once.steps.map((s) => [s.tokens, s.rollouts, s.loss]));
      // Runs trained with other settings are never mixed in.
      const other = smoke('independent,uniform', 'resumed', '--resume', '--set', 'steps=2');
      expect(other.status).not.toBe(0);
      expect(other.stderr).toContain("seed 0's independent run was trained with other settings (steps: 3 there, 2 here)");
      expect(read('resumed').runs).toHaveLength(2);
    });
  }, 4 * 110_000 + 20_000); // four run.py spawns, each allowed 110 s (the default 120 s for all four timed out in CI beside a tuning job)

  it('--resume and merge.py keep one rule per row: a row that followed an earlier default rule, or runs from before the uncertainty setting, are not mixed with today\'s', () => {
    requireLlm();
    // run.py's resumable and merge.py's merge on hand-written folders (no training): the checks come
    // before anything is trained or summarised.
    expectPythonOk(`import sys, json, tempfile, pathlib
sys.path.insert(0, ${JSON.stringify(`${root}examples/llm`)})
import merge as M
from run import resumable
from train import Config
from dataclasses import asdict
M.summarize = lambda runs, samplers: None  # summaries are report.py's, tested elsewhere
now = asdict(Config())
assert now["uncertainty"] == "next"
def run(sampler, seed, rule, asked, config):  # as train.py records them: only TRACE rows name a rule
    rules = {"rule": rule, "rule_asked": asked} if rule else {}
    return {"sampler": sampler, "seed": seed, **rules, "config": {**config, "seed": seed}, "decoder_gap": 0.0}
def refused(fn, text):
    try:
        fn()
    except SystemExit as e:
        assert text in str(e), str(e)
        return
    raise AssertionError("accepted; expected: " + text)
# Runs made before the uncertainty setting existed sent each turn's own entropy ("turn").
old_cfg = {k: v for k, v in now.items() if k not in ("seed", "uncertainty")}
old = {"command": "c", "machine": {}, "config": {**old_cfg, "seed": 0},
       "runs": [run("independent", 0, None, None, old_cfg), run("trace", 0, "v4", None, old_cfg)]}
out = pathlib.Path("folder")
refused(lambda: resumable(old, Config(), out), "(uncertainty: turn there, next here)")
# Under "turn" the settings agree, but its trace row followed the default rule of its day, v4.
refused(lambda: resumable(old, Config(uncertainty="turn"), out),
        "seed 0's trace run followed the library's default rule when it was v4; the default is now v5")
# A row that asked for its rule, or one that followed today's default, is kept.
asked = {**old, "runs": [run("independent", 0, None, None, old_cfg), run("trace-v4", 0, "v4", "v4", old_cfg), run("trace", 1, "v5", None, old_cfg)]}
kept, _ = resumable(asked, Config(uncertainty="turn"), out)
assert kept == asked["runs"]
# merge.py: FROM's rows are checked against INTO's, not against today's default, and one row name keeps one rule.
tmp = pathlib.Path(tempfile.mkdtemp())
def folder(name, runs, config=old_cfg):
    d = tmp / name
    d.mkdir()
    (d / "results.json").write_text(json.dumps({"task": "calculator", "profile": "cpu", "finished": True, "command": name, "machine": {"m": name},
                                                 "seeds_asked": 1, "config": {**config, "seed": 0}, "runs": runs}))
    return d
into = folder("into", old["runs"])
merged = M.merge(into, folder("v5", [run("trace-v5", 0, "v5", "v5", {**old_cfg, "uncertainty": "turn"})]))
assert [r["sampler"] for r in merged["runs"]] == ["independent", "trace", "trace-v5"], merged["runs"]
assert merged["command"].endswith("merge.py %s %s" % (into, tmp / "v5"))
refused(lambda: M.merge(into, folder("today", [run("trace", 1, "v5", None, {**old_cfg, "uncertainty": "turn"})])),
        "the trace row ran under rule v4 in one folder and v5 in the other (seed 1)")
refused(lambda: M.merge(into, folder("next", [run("trace-v5", 1, "v5", "v5", now)], now)),
        "(uncertainty: next there, turn here)")
print("ok")
`);
  }, 60_000);

  it('packs a node\'s turn as trace_alloc.sketch.TokenSketch() of its generated tokens (a root as zeros)', () => {
    if (!haveTorch) throw new Error(`TRACE_ALLOC_REQUIRE_LLM=1 but ${PYTHON} cannot import torch and transformers: ${probe.stderr}`);
    const code = `
import sys; sys.path.insert(0, ${JSON.stringify(`${root}examples/llm`)}); sys.path.insert(0, ${JSON.stringify(`${root}python`)})
import numpy as np
from forest import Forest
from samplers import pack
from task import Prompt, ADD, MUL, END, DIGIT0
from trace_alloc.sketch import TokenSketch
f = Forest([Prompt(3, 24), Prompt(2, 9)])
a = f.add_turn(f.roots[0], [MUL, DIGIT0 + 2, END], [0.1, 0.2, 0.3], np.zeros(0))
b = f.add_turn(f.roots[0], [MUL, DIGIT0 + 3, END], [0.1, 0.2, 0.3], np.zeros(0))
c = f.add_turn(f.roots[1], [ADD, DIGIT0 + 7, END], [0.1, 0.2, 0.3], np.zeros(0))
s = TokenSketch()
arrays = pack(f, s.width, "p", s)
e = arrays["embedding"]
assert e.shape == (5, 256) and e.dtype == np.float32, e.shape
assert not e[0].any() and not e[3].any()  # the roots
for row, turn in ((1, [MUL, DIGIT0 + 2, END]), (2, [MUL, DIGIT0 + 3, END]), (4, [ADD, DIGIT0 + 7, END])):
    assert np.array_equal(e[row], s(turn)), row
print("ok")
`;
    expectPythonOk(code);
  });
});

describe('examples/llm: compare.py pairs an ablation folder with its base run by sampler and seed', () => {
  // Pure Python over results.json (report.py and stats.py only), so it runs without torch.
  const run = (sampler: string, seed: number, final: number) => ({
    sampler, seed, final_success: final, mean_success: final / 2, step_s: 0.5,
    steps: [{ scored_groups: 4, mixed_groups: 2 }],
  });
  const folder = (dir: string, config: Record<string, unknown>, finals: Record<string, number[]>) => {
    mkdirSync(dir, { recursive: true });
    const runs = Object.entries(finals).flatMap(([s, xs]) => xs.map((x, seed) => run(s, seed, x)));
    writeFileSync(join(dir, 'results.json'), JSON.stringify({ command: `run.py ${dir}`, config: { seed: 0, ...config }, runs }));
  };
  const compare = (out: string, args: string[]) => spawnSync(PYTHON, [`${root}examples/llm/compare.py`, ...args], { encoding: 'utf8', timeout: 60_000, cwd: out });

  it('takes the seeds both ran, gives BASE − ABLATION with its t-interval, and refuses folders that ablate nothing or train other tasks', () => {
    inScratch((out) => {
      // The base ran a fourth seed the ablation did not: it must not enter the pairing.
      folder(join(out, 'base'), { task: 'recipe', advantage: 'treerl-leaf' }, { independent: [0.5, 0.4, 0.6, 0.9], trace: [0.55, 0.45, 0.5, 0.1] });
      folder(join(out, 'abl'), { task: 'recipe', advantage: 'grpo' }, { independent: [0.5, 0.4, 0.6], trace: [0.5, 0.4, 0.5] });
      const ok = compare(out, ['base', 'abl', '--names', 'leaf,grpo', '--out', 'table.md']);
      expect(ok.stderr).toBe('');
      expect(ok.status).toBe(0);
      const table = readFileSync(join(out, 'table.md'), 'utf8');
      expect(table).toContain('Setting changed: `advantage`: treerl-leaf → grpo. Seeds 0–2 (3)');
      // trace, base − ablation, per seed: 5, 5, 0 points; mean 3.33, sd 2.887, t(2) = 4.303: ±7.17.
      expect(table).toMatch(/^\| trace \| 50\.0 \[[^\]]+\] \| 46\.7 \[[^\]]+\] \| \+3\.3 \[-3\.8, \+10\.5\] \| \+1\.7 \[-1\.9, \+5\.3\] \| 50\.0 \/ 50\.0 \| 0\.50 \/ 0\.50 \|$/m);
      expect(table).toMatch(/^\| independent \| 50\.0 \[[^\]]+\] \| 50\.0 \[[^\]]+\] \| \+0\.0 \[\+0\.0, \+0\.0\] \|/m);
      // Within each folder, trace − independent on the same seeds: base +5, +5, −10 → 0.0; ablation 0, 0, −10 → −3.3.
      expect(table).toMatch(/^\| trace − independent \| \+0\.0 \[[^\]]+\] \| -3\.3 \[[^\]]+\] \|/m);

      folder(join(out, 'same'), { task: 'recipe', advantage: 'treerl-leaf' }, { trace: [0.5, 0.4, 0.5] });
      const same = compare(out, ['base', 'same']);
      expect(same.status).not.toBe(0);
      expect(same.stderr).toContain('nothing is ablated');
      // A setting added since the base was made counts there at the value it had then (its default):
      // a folder that names it at that value ablates nothing, one at another value ablates only it.
      folder(join(out, 'named'), { task: 'recipe', advantage: 'treerl-leaf', uncertainty: 'turn' }, { trace: [0.5, 0.4, 0.5] });
      expect(compare(out, ['base', 'named']).stderr).toContain('nothing is ablated');
      folder(join(out, 'next'), { task: 'recipe', advantage: 'treerl-leaf', uncertainty: 'next' }, { independent: [0.5, 0.4, 0.6], trace: [0.5, 0.4, 0.5] });
      const next = compare(out, ['base', 'next', '--out', 'next.md']);
      expect(next.status, next.stderr).toBe(0);
      expect(readFileSync(join(out, 'next.md'), 'utf8')).toContain('Setting changed: `uncertainty`: turn → next. Seeds');
      // --samplers: a sampler the base ran on fewer seeds (entropy, seed 0 only) no longer shortens the pairing.
      folder(join(out, 'short'), { task: 'recipe', advantage: 'treerl-leaf' }, { independent: [0.5, 0.4, 0.6], trace: [0.55, 0.45, 0.5], entropy: [0.7] });
      folder(join(out, 'short-abl'), { task: 'recipe', advantage: 'grpo' }, { independent: [0.5, 0.4, 0.6], trace: [0.5, 0.4, 0.5], entropy: [0.6] });
      const all = compare(out, ['short', 'short-abl']);
      expect(all.status, all.stderr).toBe(0);
      expect(all.stdout).toContain('Seeds 0–0 (1)');
      const some = compare(out, ['short', 'short-abl', '--samplers', 'independent,trace']);
      expect(some.status, some.stderr).toBe(0);
      expect(some.stdout).toContain('Seeds 0–2 (3)');
      expect(some.stdout).not.toMatch(/^\| entropy /m);
      const absent = compare(out, ['short', 'short-abl', '--samplers', 'trace,uniform']);
      expect(absent.status).not.toBe(0);
      expect(absent.stderr).toContain('--samplers: uniform did not run in both folders');
      // B:A pairs the base's B with the ablation's A: base trace 55, 45, 50 against ablation independent 50, 40, 60
      // → +5, +5, −10 points: mean 0.0; within each folder, trace − independent (base) and independent − independent (ablation).
      const cross = compare(out, ['short', 'short-abl', '--samplers', 'independent,trace:independent']);
      expect(cross.status, cross.stderr).toBe(0);
      expect(cross.stdout).toContain('Seeds 0–2 (3)');
      expect(cross.stdout).toMatch(/^\| trace \/ independent \| 50\.0 \[[^\]]+\] \| 50\.0 \[[^\]]+\] \| \+0\.0 \[[^\]]+\] \|/m);
      expect(cross.stdout).toMatch(/^\| trace \/ independent − independent \| \+0\.0 \[[^\]]+\] \| \+0\.0 \[\+0\.0, \+0\.0\] \|/m);
      expect(compare(out, ['short', 'short-abl', '--samplers', 'trace:uniform']).stderr).toContain('--samplers: trace:uniform did not run');
      folder(join(out, 'other'), { task: 'calculator', advantage: 'grpo' }, { trace: [0.5, 0.4, 0.5] });
      const other = compare(out, ['base', 'other']);
      expect(other.status).not.toBe(0);
      expect(other.stderr).toContain('different tasks (recipe, calculator)');
    });
  });

  it('pairs by seed, not by position: runs in another order, a seed missing in the middle, step times and mixed shares per run', () => {
    inScratch((out) => {
      type Run = [sampler: string, seed: number, final: number, stepS: number, mixed: number];
      const write = (dir: string, config: Record<string, unknown>, runs: Run[]) => {
        mkdirSync(dir, { recursive: true });
        writeFileSync(join(dir, 'results.json'), JSON.stringify({
          command: `run.py ${dir}`, config: { seed: 0, ...config },
          runs: runs.map(([sampler, seed, final, stepS, mixed]) => ({
            sampler, seed, final_success: final, mean_success: final / 2, step_s: stepS,
            steps: [{ scored_groups: 10, mixed_groups: mixed }],
          })),
        }));
      };
      write(join(out, 'base'), { task: 'recipe', advantage: 'treerl-leaf' }, [
        ['independent', 0, 0.5, 1, 5], ['independent', 1, 0.4, 1, 5], ['independent', 2, 0.6, 1, 5], ['independent', 3, 0.9, 1, 5],
        ['trace', 0, 0.55, 1, 4], ['trace', 1, 0.45, 9, 9], ['trace', 2, 0.5, 2, 6], ['trace', 3, 0.1, 3, 8],
      ]);
      // Seed 1 missing, seeds out of order, samplers interleaved.
      write(join(out, 'abl'), { task: 'recipe', advantage: 'grpo' }, [
        ['trace', 3, 0.2, 4, 2], ['independent', 3, 0.8, 2, 5], ['trace', 0, 0.5, 1, 2],
        ['independent', 0, 0.5, 2, 5], ['trace', 2, 0.5, 1, 5], ['independent', 2, 0.6, 2, 5],
      ]);
      const ok = compare(out, ['base', 'abl', '--names', 'leaf,grpo', '--out', 'table.md']);
      expect(ok.stderr).toBe('');
      expect(ok.status).toBe(0);
      const table = readFileSync(join(out, 'table.md'), 'utf8');
      expect(table).toContain('Seeds 0, 2, 3 (3)');
      // trace on seeds 0, 2, 3: base 55, 50, 10 (38.3), ablation 50, 50, 20 (40.0); paired 5, 0, −10:
      // mean −1.67, sd 7.64, t(2) = 4.303: ±18.97. Mixed 40/60/80 → 60.0 and 20/50/20 → 30.0;
      // step 1/2/3 → 2.00 and 4/1/1 → 2.00 (seed 1's 9 s and 90% enter neither).
      expect(table).toMatch(/^\| trace \| 38\.3 \[[^\]]+\] \| 40\.0 \[[^\]]+\] \| -1\.7 \[-20\.6, \+17\.3\] \| -0\.8 \[[^\]]+\] \| 60\.0 \/ 30\.0 \| 2\.00 \/ 2\.00 \|$/m);
      // independent: 50, 60, 90 against 50, 60, 80: +3.3.
      expect(table).toMatch(/^\| independent \| 66\.7 \[[^\]]+\] \| 63\.3 \[[^\]]+\] \| \+3\.3 \[/m);
      // trace − independent within each folder: base 5, −10, −80 → −28.3; ablation 0, −10, −60 → −23.3.
      expect(table).toMatch(/^\| trace − independent \| -28\.3 \[[^\]]+\] \| -23\.3 \[[^\]]+\] \|/m);
    });
  });
});

/** A Python `forest(leaf_rewards)` for proto_alloc's hand-computed tests: 0 root; 1, 2 its
 * children (equal turns: entropy 0.3, the same embedding, so neither is pruned); 3 below 1 and 4
 * below 2 end the episodes with the two rewards. The next turn's entropy is 0.6 after node 1 and
 * 0.1 after node 2. Needs `NS` (types.SimpleNamespace) and `np` imported. */
const TWO_TURN_FOREST = `def forest(leaf_rewards):
    spec = [(-1, [1, 2], 0.0, False), (0, [3], 0.3, False), (0, [4], 0.3, False), (1, [], 0.6, True), (2, [], 0.1, True)]
    r3, r4 = leaf_rewards
    reward = [r3 + r4, r3, r4, r3, r4]
    visits = [2, 1, 1, 1, 1]
    nodes = [NS(parent=p, children=k, uncertainty=u, terminal=t, visits=visits[i], reward_sum=reward[i],
                embedding=np.ones(4)) for i, (p, k, u, t) in enumerate(spec)]
    return NS(nodes=nodes, tree_nodes=[[0, 1, 2, 3, 4]], roots=[0])`;

describe('examples/llm: proto_alloc\'s base fork share (the t5 tuning candidate), on a hand-computed tree', () => {
  // Pure Python (numpy only), so it runs without torch.
  it('splits the base by next-turn entropy over visited open nodes, only in trees with mixed outcomes unless told otherwise', () => {
    const code = `
import sys; sys.path.insert(0, ${JSON.stringify(`${root}examples/llm`)})
from types import SimpleNamespace as NS
import numpy as np
from proto_alloc import plan

${TWO_TURN_FOREST}

def units(f, **knobs):
    d = {}
    p = plan(f, 14, {"gate": "pair", "kappa": 0.0, **knobs}, diag=d)
    return dict(p[0]), d

# κ = 0: no contest emission, so the claims are the fresh share 1 and the base 1 split by entropy
# 0.6 : 0.1 over nodes 1 and 2: masses 7, 6, 1 of 14.
mixed = forest((1.0, 0.0))
got, d = units(mixed, base=1.0)
assert got == {0: 7, 1: 6, 2: 1}, got
assert d == {"trees": 1, "contested": 1, "budget": 14, "fork_mass": 7.0, "fork_units": 7, "base_trees": 1}, d
# By ν times entropy: node 2's rollouts failed (ν = 0), so node 1 takes the whole base.
assert units(mixed, base=1.0, base_by="nu-entropy")[0] == {0: 7, 1: 7}
# Equal: 3.5 each, the tied remainder unit to the smaller node index.
assert units(mixed, base=1.0, base_by="equal")[0] == {0: 7, 1: 4, 2: 3}
# Base 0 (v4): everything at the root.
assert units(mixed)[0] == {0: 14}
# All failed: "mixed" keeps chains only; "all" spreads over the failed rollouts as well.
failed = forest((0.0, 0.0))
assert units(failed, base=1.0)[0] == {0: 14}
assert units(failed, base=1.0, base_where="all")[0] == {0: 7, 1: 6, 2: 1}
print("ok")
`;
    expectPythonOk(code);
  });
});

describe('examples/llm: proto_alloc\'s token cost (the t7 tuning candidate), on a hand-computed tree', () => {
  it('reads claims as shares of tokens: a fork that saves three quarters of a chain gets four times the branches', () => {
    const code = `
import sys; sys.path.insert(0, ${JSON.stringify(`${root}examples/llm`)})
from types import SimpleNamespace as NS
import numpy as np
from proto_alloc import V3, TreeView, plan, relative_cost

def forest(cut=False):
    # 0 root; 1, 2 its children (30 generated tokens each); 3 below 1 and 4 below 2 end the
    # episodes (10 tokens each), so a chain costs 40 tokens and a rollout from 1 or 2 costs 10.
    # With cut: node 5 below 1 (4 tokens), a rollout the budget cut before it finished.
    spec = [(-1, [1, 2], 0.0, False, 0), (0, [3], 0.3, False, 30), (0, [4], 0.3, False, 30),
            (1, [], 0.6, True, 10), (2, [], 0.1, True, 10)]
    if cut:
        spec[1] = (0, [3, 5], 0.3, False, 30)
        spec.append((1, [], 0.2, False, 4))
    reward = [1.0, 1.0, 0.0, 1.0, 0.0, 0.0]
    visits = [2, 1, 1, 1, 1, 0]
    nodes = [NS(parent=p, children=k, uncertainty=u, terminal=t, visits=visits[i], reward_sum=reward[i],
                span=(0, g), embedding=np.ones(4)) for i, (p, k, u, t, g) in enumerate(spec)]
    return NS(nodes=nodes, tree_nodes=[list(range(len(spec)))], roots=[0])

tv = TreeView(forest(), 0, V3)
assert relative_cost(tv) == [1.0, 0.25, 0.25, 0.05, 0.05], relative_cost(tv)
# Node 5 has no finished rollout below: its parent's 10 tokens less its own 4, over the root's 40.
assert abs(relative_cost(TreeView(forest(cut=True), 0, V3))[5] - 6 / 40) < 1e-12
# No finished rollout in the tree: no cost information, every node costs a chain.
empty = forest()
for n in empty.nodes:
    n.terminal = False
assert relative_cost(TreeView(empty, 0, V3)) == [1.0] * 5

def units(**knobs):
    return dict(plan(forest(), 10, {"gate": "pair", "kappa": 0.0, "base": 1.0, **knobs})[0])

# Branches (v4 with a base share): claims 1, 6/7, 1/7 give masses 5, 4.29, 0.71, rounded 5, 4, 1.
assert units() == {0: 5, 1: 4, 2: 1}, units()
# Tokens: divided by the costs 1, 1/4, 1/4 the claims are 1, 24/7, 4/7 (sum 5), masses 2, 6.86, 1.14,
# rounded 2, 7, 1: 8 of 10 branches are forks, against 5 when a claim buys branches.
assert units(cost="tokens") == {0: 2, 1: 7, 2: 1}, units(cost="tokens")
# With no fork claim (base 0, κ = 0) there is nothing to reweigh: every branch is a chain.
assert units(cost="tokens", base=0.0) == {0: 10}
print("ok")
`;
    expectPythonOk(code);
  });
});

describe('examples/llm: the prefix trie and proto_alloc\'s uncertainty and top-k knobs (t11–t13 tuning candidates), on hand-computed trees', () => {
  it('merges identical prefixes into one node, adding up visits and rewards, with ids of each prefix\'s first node', () => {
    const code = `
import sys; sys.path.insert(0, ${JSON.stringify(`${root}examples/llm`)})
from types import SimpleNamespace as NS
from allocator_view import PrefixTrie, next_turn_entropy

# Tree 0: root [1]; nodes 1 and 2 wrote the same turn (5) and got the same answer (9); 3 below 1
# and 5 below 2 wrote the same last turn (7) and won; 4 below 2 wrote 8 and lost; 6 wrote 6 and
# lost at once. Tree 1: a root alone. seq = the prompt, every turn and answer up to the node.
spec = [(0, -1, [1], False, 0.0), (0, 0, [1, 5, 9], False, 0.0), (0, 0, [1, 5, 9], False, 0.0),
        (0, 1, [1, 5, 9, 7], True, 1.0), (0, 2, [1, 5, 9, 8], True, 0.0), (0, 2, [1, 5, 9, 7], True, 1.0),
        (0, 0, [1, 6, 9], True, 0.0), (1, -1, [2], False, 0.0)]
nodes = [NS(tree=t, parent=p, seq=s, span=(len(s) - 1, len(s)), terminal=d, outcome=o, uncertainty=0.1 * i,
            embedding=None, children=[]) for i, (t, p, s, d, o) in enumerate(spec)]
for i, n in enumerate(nodes):
    if n.parent >= 0:
        nodes[n.parent].children.append(i)
f = NS(nodes=nodes, tree_nodes=[[0, 1, 2, 3, 4, 5, 6], [7]], roots=[0, 7])
trie = PrefixTrie(f)
assert trie.tree_nodes == [[0, 1, 3, 4, 6], [7]], trie.tree_nodes
assert trie.roots == [0, 7]
assert trie.canon == {0: 0, 1: 1, 2: 1, 3: 3, 4: 4, 5: 3, 6: 6, 7: 7}, trie.canon
got = {v: (n.parent, n.children, n.visits, n.reward_sum, n.terminal) for v, n in trie.nodes.items()}
assert got == {0: (-1, [1, 6], 4, 2.0, False), 1: (0, [3, 4], 3, 2.0, False), 3: (1, [], 2, 2.0, True),
               4: (1, [], 1, 0.0, True), 6: (0, [], 1, 0.0, True), 7: (-1, [], 0, 0.0, False)}, got
# A merged node keeps its first copy's turn (its entropy, embedding and span).
assert trie.nodes[1].uncertainty == 0.1 and trie.nodes[3].uncertainty == 0.30000000000000004
# The uncertainty after a node: its next turns' mean entropy, 0 at a terminal node or one not yet
# continued. Plain: node 2's turns are 4 and 5 (0.4, 0.5); in the trie node 1's are 3 and 4.
assert abs(next_turn_entropy(f, 2) - 0.45) < 1e-12 and next_turn_entropy(f, 3) == 0.0 and next_turn_entropy(f, 7) == 0.0
assert abs(next_turn_entropy(f, 0) - (0.1 + 0.2 + 0.6) / 3) < 1e-12
assert abs(next_turn_entropy(trie, 1) - 0.35) < 1e-12 and abs(next_turn_entropy(trie, 0) - 0.35) < 1e-12
print("ok")
`;
    expectPythonOk(code);
  });

  it('reads the next turn\'s entropy as a node\'s uncertainty with unc="next", and gives the base to the top-k unforked nodes', () => {
    const code = `
import sys; sys.path.insert(0, ${JSON.stringify(`${root}examples/llm`)})
from types import SimpleNamespace as NS
import numpy as np
from proto_alloc import V3, TreeView, plan

${TWO_TURN_FOREST}

failed = forest((0.0, 0.0))
# "turn": each node's own turn's entropy; "next": its children's mean, 0 at a terminal node.
assert TreeView(failed, 0, V3).u == [0.0, 0.3, 0.3, 0.6, 0.1]
assert TreeView(failed, 0, {**V3, "unc": "next"}).u == [0.3, 0.6, 0.1, 0.0, 0.0]
units = lambda f, **k: dict(plan(f, 14, k)[0])
# Both failed. v3's knobs: with the turns' own (equal) entropies nothing is contested, every
# branch a chain; with the next turns' entropies (0.6 against 0.1) the pair is contested on its
# uncertainty gap alone and branches leave the root. v4's gate removes that gap (equal rewards).
assert units(failed) == {0: 14}
next_v3 = units(failed, unc="next")
assert next_v3[0] < 14 and sum(next_v3.values()) == 14, next_v3
assert units(failed, unc="next", gate="pair") == {0: 14}
# Top-1 base (κ = 0, so claims are the fresh share 1 and the base 1): all of the base on the
# unforked node with the highest next-turn entropy, node 1 (0.6), in every tree with base_where="all".
assert units(failed, gate="pair", kappa=0.0, base=1.0, base_where="all", base_top=1) == {0: 7, 1: 7}
# Without top-k the base is split by entropy, 0.6 : 0.1 (masses 7, 6, 1).
assert units(failed, gate="pair", kappa=0.0, base=1.0, base_where="all") == {0: 7, 1: 6, 2: 1}
print("ok")
`;
    expectPythonOk(code);
  });
});

describe('examples/llm: fork_signals (the t19 in-loop signals), on a hand-computed forest', () => {
  // Pure Python: the module imports torch only inside gradient_signals.
  it('finds each finished rollout\'s start from the run marks, and splits the per-leaf credit between fresh chains and forks', () => {
    const code = `
import sys; sys.path.insert(0, ${JSON.stringify(`${root}examples/llm`)})
from types import SimpleNamespace as NS
from fork_signals import leaf_weights, rollouts, split_rollouts, tree_rollouts

# Tree 0, root 0. Run 1 (mark 1), two fresh chains interleaved as a batch makes them:
# A writes 1 (3 tokens) then leaf 3 (2 tokens, success); B writes 2 (4 tokens) then leaf 4
# (1 token, failure). Run 2 (mark 5): a fork from node 1 writes leaf 5 (6 tokens, failure),
# and a fresh chain writes 6 (2 tokens) then leaf 7 (2 tokens, success).
spec = [  # parent, tokens, terminal, outcome, depth, visits
    (-1, 0, False, 0.0, 0, 4), (0, 3, False, 0.0, 1, 2), (0, 4, False, 0.0, 1, 1), (1, 2, True, 1.0, 2, 1),
    (2, 1, True, 0.0, 2, 1), (1, 6, True, 0.0, 2, 1), (0, 2, False, 0.0, 1, 1), (6, 2, True, 1.0, 2, 1)]
nodes = [NS(tree=0, parent=p, span=(10, 10 + k), terminal=t, outcome=o, depth=d, visits=v)
         for p, k, t, o, d, v in spec]
f = NS(nodes=nodes)
try:
    rollouts(f)
    raise AssertionError("no run marks: refused")
except ValueError as e:
    assert "leaf 3 was made before any recorded run" in str(e), e
f.run_marks = [1, 5]
assert rollouts(f) == [(0, 3, 5), (0, 4, 5), (1, 5, 6), (0, 7, 4)], rollouts(f)
# Fresh: 3 rollouts, 2 successes, 14 tokens, start depths 0; fork: 1, 0, 6 tokens, from depth 1.
assert tree_rollouts(f) == [{"fresh": [3, 2.0, 14, 0], "fork": [1, 0.0, 6, 1]}], tree_rollouts(f)
fresh, forks = split_rollouts(f)
assert (fresh, forks) == ([(0, 3), (0, 4), (0, 7)], [(1, 5)])
# Node weights (visits · per-leaf share): node 1 has two leaves (3 and 5), so each carries 4/2.
w = {1: 4.0, 3: 1.0, 5: -2.0, 6: 3.0}
assert leaf_weights(f, w, fresh) == {3: 1.0, 1: 2.0, 6: 3.0}, leaf_weights(f, w, fresh)
# The fork counts only the turn it wrote: node 5, not its start's share.
assert leaf_weights(f, w, forks) == {5: -2.0}, leaf_weights(f, w, forks)
print("ok")
`;
    expectPythonOk(code);
  });
});

describe('examples/llm: proto_alloc\'s cost gate on the base fork share (the t19 tuning candidate), on a hand-computed tree', () => {
  it('gives a tree the base share only when its base forks cost at most base_cost_max of a chain, weighted as the base is split', () => {
    const code = `
import sys; sys.path.insert(0, ${JSON.stringify(`${root}examples/llm`)})
from types import SimpleNamespace as NS
import numpy as np
from proto_alloc import plan

def forest(first_turn=30):
    # 0 root; 1, 2 its children (first_turn generated tokens each); leaf 3 below 1 (10 tokens,
    # success, next-turn entropy 0.6 after node 1) and leaf 4 below 2 (10 tokens, failure, 0.1).
    spec = [(-1, [1, 2], 0.0, False, 0), (0, [3], 0.3, False, first_turn), (0, [4], 0.3, False, first_turn),
            (1, [], 0.6, True, 10), (2, [], 0.1, True, 10)]
    reward = [1.0, 1.0, 0.0, 1.0, 0.0]
    visits = [2, 1, 1, 1, 1]
    nodes = [NS(parent=p, children=k, uncertainty=u, terminal=t, visits=visits[i], reward_sum=reward[i],
                span=(0, g), embedding=np.ones(4)) for i, (p, k, u, t, g) in enumerate(spec)]
    return NS(nodes=nodes, tree_nodes=[list(range(len(spec)))], roots=[0])

def units(f, **knobs):
    d = {}
    p = plan(f, 14, {"gate": "pair", "kappa": 0.0, "base": 1.0, **knobs}, diag=d)
    return dict(p[0]), d["base_trees"]

# A chain costs 40 tokens; a fork from node 1 or 2 costs 10: 0.25 of a chain for both, so the
# base's weighted mean cost is 0.25 (entropies 0.6 : 0.1 weigh equal costs). Under 1/3 the tree
# gets the base share exactly as "all" gives it (claims 1, 6/7, 1/7 of 14: 7, 6, 1).
cheap = forest()
assert units(cheap, base_where="all") == ({0: 7, 1: 6, 2: 1}, 1)
assert units(cheap, base_where="cheap") == ({0: 7, 1: 6, 2: 1}, 1), units(cheap, base_where="cheap")
assert units(cheap, base_where="cheap", base_cost_max=0.25)[0] == {0: 7, 1: 6, 2: 1}
# Just below the cost, or with a short first turn (a fork from node 1 or 2 then costs 10 of 15
# tokens, 2/3 of a chain), the tree keeps the rule's own allocation: all 14 at the root.
assert units(cheap, base_where="cheap", base_cost_max=0.2499) == ({0: 14}, 0)
assert units(forest(first_turn=5), base_where="cheap") == ({0: 14}, 0)
# No finished rollout yet: every cost is 1, and the gate is shut.
empty = forest()
for n in empty.nodes:
    n.terminal = False
assert units(empty, base_where="cheap") == ({0: 14}, 0)
print("ok")
`;
    expectPythonOk(code);
  });
});

describe('examples/llm: proto_alloc\'s peak gate on the base fork share (the t20 tuning candidate), on a hand-computed tree', () => {
  it('gives a tree the base share only where the picked nodes\' next-turn entropy is at least base_peak times the mean over the nodes the base could use', () => {
    const code = `
import sys; sys.path.insert(0, ${JSON.stringify(`${root}examples/llm`)})
from types import SimpleNamespace as NS
import numpy as np
from proto_alloc import plan

def forest(entropies, first_turn=30):
    # 0 root; 1-4 its children (first_turn generated tokens each), each continued by one failed
    # leaf (5-8, 10 tokens) whose turn's entropy is the node's next-turn entropy.
    spec = [(-1, [1, 2, 3, 4], 0.0, False, 0)] + [(0, [5 + i], 0.3, False, first_turn) for i in range(4)] \\
        + [(1 + i, [], e, True, 10) for i, e in enumerate(entropies)]
    visits = [4] + [1] * 8
    nodes = [NS(parent=p, children=k, uncertainty=u, terminal=t, visits=visits[i], reward_sum=0.0,
                span=(0, g), embedding=np.ones(4)) for i, (p, k, u, t, g) in enumerate(spec)]
    return NS(nodes=nodes, tree_nodes=[list(range(len(spec)))], roots=[0])

def units(f, **knobs):
    d = {}
    p = plan(f, 14, {"gate": "pair", "kappa": 0.0, "base": 1.0, "base_top": 2, **knobs}, diag=d)
    return dict(p[0]), d["base_trees"]

# Next-turn entropies 1, 0.5, 0.25, 0.25: mean 0.5; entropy forking's picks, nodes 1 and 2, have
# 0.75, exactly 1.5 times it. The gate opens at base_peak 1.5 (the default), so the tree gets the
# base share as "all" gives it (claims 1, 1/2, 1/2 of 14: 7, then 3.5 each, the tie to node 1),
# and stays shut just above; every prompt failed, and the gate reads no outcome.
peaked = forest([1.0, 0.5, 0.25, 0.25])
assert units(peaked, base_where="all") == ({0: 7, 1: 4, 2: 3}, 1)
assert units(peaked, base_where="peak") == ({0: 7, 1: 4, 2: 3}, 1), units(peaked, base_where="peak")
assert units(peaked, base_where="peak", base_peak=1.5 + 1e-9) == ({0: 14}, 0)
assert units(peaked, base_where="mixed") == ({0: 14}, 0)
# Flatter entropies 0.5, 0.375, 0.375, 0.25: the picks (1 and 2) have 0.4375 against a mean of
# 0.375, 7/6 of it: shut at 1.5, open at 1.125.
flat = forest([0.5, 0.375, 0.375, 0.25])
assert units(flat, base_where="peak") == ({0: 14}, 0)
assert units(flat, base_where="peak", base_peak=1.125)[1] == 1
# Without base_top the base is split by entropy, and the gate weighs the picks the same way:
# (1 + 0.25 + 0.0625 + 0.0625) / 2 = 0.6875 against 0.5, 1.375 times the mean.
assert units(peaked, base_where="peak", base_top=0, base_peak=1.375)[1] == 1
assert units(peaked, base_where="peak", base_top=0, base_peak=1.375 + 1e-9) == ({0: 14}, 0)
# cheap-peak needs both: a fork from nodes 1-4 costs 10 of 40 tokens (0.25 of a chain), but with
# a 5-token first turn it costs 10 of 15, and the tree keeps the rule's own allocation.
assert units(peaked, base_where="cheap-peak") == ({0: 7, 1: 4, 2: 3}, 1)
assert units(forest([1.0, 0.5, 0.25, 0.25], first_turn=5), base_where="cheap-peak") == ({0: 14}, 0)
assert units(forest([1.0, 0.5, 0.25, 0.25], first_turn=5), base_where="peak")[1] == 1
assert units(flat, base_where="cheap-peak") == ({0: 14}, 0)
# Counted in turns (base_cost_unit="turns", t21), the same fork is 1 turn of a 2-turn chain,
# half of one, above a third: the cost gate shuts where the tokens (10 of 40) open it.
assert units(peaked, base_where="cheap-peak", base_cost_unit="turns") == ({0: 14}, 0)
assert units(peaked, base_where="cheap-peak", base_cost_unit="turns", base_cost_max=0.5) == ({0: 7, 1: 4, 2: 3}, 1)
assert units(peaked, base_where="cheap-peak", base_cost_unit="turns", base_cost_max=0.5 - 1e-9) == ({0: 14}, 0)
try:
    units(peaked, base_where="cheap-peak", base_cost_unit="seconds")
    raise SystemExit("an unknown unit was accepted")
except ValueError as err:
    assert "seconds" in str(err)
print("ok")
`;
    expectPythonOk(code);
  });
});

describe('examples/llm: proto_alloc\'s region spread by hesitation (the t24 tuning candidate), on a hand-computed tree', () => {
  it('gives a kept child\'s share to its region\'s open nodes in proportion to their next-turn entropy, equally where that is 0 throughout', () => {
    const code = `
import sys; sys.path.insert(0, ${JSON.stringify(`${root}examples/llm`)})
from types import SimpleNamespace as NS
import numpy as np
from proto_alloc import V3, TreeView, tree_mass

def forest(turn_entropy):
    # 0 root; 1 and 2 its first turns; 1 went on to 3 and 5 (success), 2 ended at 4 (failure).
    # turn_entropy: the token entropy of turns 3 and 5, the next turns after nodes 1 and 3.
    e3, e5 = turn_entropy
    spec = [(-1, [1, 2], 0.0, False), (0, [3], 0.3, False), (0, [4], 0.3, False), (1, [5], e3, False),
            (2, [], 0.1, True), (3, [], e5, True)]
    reward = [1.0, 1.0, 0.0, 1.0, 0.0, 1.0]
    visits = [2, 1, 1, 1, 1, 1]
    nodes = [NS(parent=p, children=k, uncertainty=u, terminal=t, visits=visits[i], reward_sum=reward[i],
                embedding=np.ones(4)) for i, (p, k, u, t) in enumerate(spec)]
    return NS(nodes=nodes, tree_nodes=[list(range(6))], roots=[0])

def mass(f, region):
    knobs = {**V3, "gate": "visits", "gate_m": 2, "unc": "next", "region": region}
    return tree_mass(TreeView(f, 0, knobs), 16, knobs)[0]

close = lambda a, b: all(abs(x - y) < 1e-9 for x, y in zip(a, b))
# The root is contested (1 succeeded, 2 failed); what it passes goes to child 1 (ν = 1), whose
# region is nodes 1 and 3. Equally: 4.8 each. By hesitation: the next turns' entropies 0.6 and
# 0.2 split the same 9.6 as 7.2 and 2.4; the root's own claim is untouched.
equal, hes = mass(forest((0.6, 0.2)), "equal"), mass(forest((0.6, 0.2)), "hesitation")
assert abs(equal[1] - equal[3]) < 1e-9 and abs(equal[1] + equal[3] - 9.6) < 1e-5, equal
assert close(hes, [equal[0], 7.2 * equal[1] / 4.8, 0.0, 2.4 * equal[1] / 4.8, 0.0, 0.0]), hes
# No hesitation anywhere in the region: the equal spread.
assert close(mass(forest((0.0, 0.0)), "hesitation"), mass(forest((0.0, 0.0)), "equal"))
print("ok")
`;
    expectPythonOk(code);
  });
});

describe.skipIf(!haveTorch && !required)('examples/llm: tune.py --signals (the t19 in-loop fork signals) in a training run', () => {
  it('counts every finished rollout once as a fresh chain or a fork, as the grower does, and leaves the training as it is', () => {
    requireLlm();
    inScratch((out, env) => {
      const tune = (signals: boolean, dir: string) => {
        const args = [`${root}examples/llm/tune.py`, '--task', 'calculator', '--first-seed', '200', '--seeds', '1', '--steps', '2',
          '--baselines', '', '--variants', 'v5-base9-all', '--workers', '1', '--out', join(out, dir), ...(signals ? ['--signals'] : [])];
        const run = spawnSync(PYTHON, args, { encoding: 'utf8', timeout: 240_000, env });
        expect(run.status, run.stderr).toBe(0);
        return (JSON.parse(readFileSync(join(out, dir, 'runs.json'), 'utf8')) as { runs: TuneRun[] }).runs[0];
      };
      const withSignals = tune(true, 'signals');
      const plain = tune(false, 'plain');
      expect(withSignals.final_success).toBe(plain.final_success);
      expect(plain.fork_signals).toBeUndefined();
      const steps = withSignals.fork_signals!;
      expect(steps).toHaveLength(2);
      const total = (kind: 'fresh' | 'fork', field: number) => steps.reduce((s, x) => s + x.trees.reduce((t, tree) => t + tree[kind][field], 0), 0);
      // The starts found from the batches agree with the grower's own counts of finished chains and
      // forks, and with its token counts (the run's fork cost).
      expect(total('fork', 0)).toBeGreaterThan(0);
      expect(total('fork', 0)).toBeCloseTo(withSignals.forks_per_step * 2, 9);
      expect(total('fresh', 0)).toBeCloseTo(withSignals.chains_per_step * 2, 9);
      expect((total('fork', 2) / total('fork', 0)) / (total('fresh', 2) / total('fresh', 0))).toBeCloseTo(withSignals.fork_cost, 9);
      // A fresh chain starts at depth 0; a fork below the prompt, at depth 1 or more.
      expect(total('fresh', 3)).toBe(0);
      expect(total('fork', 3)).toBeGreaterThanOrEqual(total('fork', 0));
      for (const s of steps) {
        expect(s.n_fresh + s.n_fork).toBe(s.trees.reduce((t, tree) => t + tree.fresh[0] + tree.fork[0], 0));
        for (const c of [s.g_cos_fork_fresh, s.g_cos_half]) {
          expect(c).not.toBeNull();
          expect(Math.abs(c!)).toBeLessThanOrEqual(1 + 1e-6);
        }
        expect(s.g_norm_fork).toBeGreaterThan(0);
        expect(s.g_norm_fresh).toBeGreaterThan(0);
      }
    });
  }, 520_000);
});

interface TuneRun {
  final_success: number;
  forks_per_step: number;
  chains_per_step: number;
  fork_cost: number;
  fork_signals?: Array<{
    trees: Array<{ fresh: number[]; fork: number[] }>;
    g_cos_fork_fresh: number | null; g_cos_half: number | null; g_norm_fresh: number; g_norm_fork: number;
    n_fresh: number; n_fork: number;
  }>;
}
