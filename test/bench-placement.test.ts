import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { PYTHON } from './python.js';

const numpy = spawnSync(PYTHON, ['-c', 'import numpy'], { encoding: 'utf8' }).status === 0;

describe('bench/placement.py (continuous placement through the sidecar)', () => {
  it.skipIf(!numpy)('runs a small case and writes its table and figures', () => {
    const out = mkdtempSync(join(tmpdir(), 'placement-bench-'));
    try {
      const r = spawnSync(PYTHON, ['bench/placement.py', '--trees', '4', '--refills', '20', '--out', out], { encoding: 'utf8', timeout: 240_000 });
      expect(r.status, r.stderr).toBe(0);
      const result = JSON.parse(readFileSync(join(out, 'placement-latest.json'), 'utf8'));
      expect(result.cases).toHaveLength(1);
      expect(result.cases[0]).toMatchObject({ trees: 4, concurrency: 8 });
      expect(result.cases[0].refill_ms.n).toBe(20);
      expect(result.cases[0].nodes_at_end).toBeGreaterThan(4);
      expect(readFileSync(join(out, 'placement-latest.md'), 'utf8')).toMatch(/\| 4 \| 8 \|/);
    } finally {
      rmSync(out, { recursive: true, force: true });
    }
  }, 300_000);
});
