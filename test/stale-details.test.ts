// Details a new user read and found wrong: the score help's input formats and `auto`, the LLM
// example's client (it fell back to a module that no longer exists), and `live.plan()` echoing
// v1's `widen` under v2.
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { createLiveForest } from '../src/live/create.js';
import { runCli } from './cli-helpers.js';
import { PYTHON } from './python.js';

const REPO = fileURLToPath(new URL('..', import.meta.url));

describe('score --help says what score does', () => {
  const help = runCli(['score', '--help']).stdout.replace(/\s+/g, ' ');

  it('names every input format it reads', () => {
    expect(help).toMatch(/Reads a forest \(JSON, JSON Lines, \.npz or Arrow IPC/);
  });

  it('describes auto as the README does: a hardware adapter, never a CPU-emulated one', () => {
    expect(help).toMatch(/auto \(the GPU when a hardware adapter exists, else the CPU: never a CPU-emulated adapter/);
    expect(help).not.toMatch(/GPU if an adapter exists/);
  });
});

describe('live.plan() reports the settings of its rule', () => {
  const tree = { id: 'q', nodes: [{ embedding: [1, 0] }, { parent: 0, reward: 1, visits: 2, embedding: [1, 0.1] }, { parent: 0, visits: 2, embedding: [0, 1] }] };

  it('leaves out v1\'s widen under v2 and keeps it under v1', async () => {
    for (const rule of ['v2', 'v1'] as const) {
      const live = await createLiveForest({ dim: 2, backend: 'cpu', params: { rule } });
      try {
        live.addTree(tree);
        const summary = await live.plan({ budget: 8, widen: 0.25 });
        expect(summary.options.rule).toBe(rule);
        expect('widen' in summary.options, rule).toBe(rule === 'v1');
        if (rule === 'v1') expect(summary.options.widen).toBe(0.25);
        expect(summary.options.pruneRatio).toBe(0.5);
      } finally {
        live.destroy();
      }
    }
  });
});

describe('examples/llm/allocator_client.py', () => {
  // numpy only (no torch): the example's client, against the built CLI.
  const script = `
import numpy as np
from allocator_client import AllocatorClient
c = AllocatorClient()
try:
    cols = (np.array([0, 3]), np.array([-1, 0, 0]), np.array([0.0, 1.0, 0.0]), np.array([4, 2, 2]),
            np.array([0.0, 0.2, 0.1]), np.zeros(3, dtype=bool), np.array([[1, 0], [1, 0.1], [0, 1]], dtype=np.float32))
    c.sync_forest(["q"], *cols)
    c.sync_forest(["q"], *cols)
    plan = c.plan(8)
    print(c.transport, "|", plan["trees"][0]["budget"], c.stats()["trees"])
finally:
    c.close()
`;
  it('talks to the service through the trace_alloc package (binary columns; no fallback module)', () => {
    const r = spawnSync(PYTHON, ['-c', script], { cwd: `${REPO}examples/llm`, encoding: 'utf8', timeout: 60_000, env: { ...process.env, PYTHONDONTWRITEBYTECODE: '1' } });
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout.trim()).toMatch(/^trace_alloc package [\d.]+, binary add_forest \(npz\) \| 8 1$/);
  });
});
