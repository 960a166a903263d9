// Errors name what the user gave (the flag, the column), and --out does what docs/CLI.md says.
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { NdArray } from '../src/forest/columnar.js';
import { encodeNpz } from '../src/forest/npz.js';
import { runCli } from './cli-helpers.js';

let dir: string;
beforeAll(() => { dir = mkdtempSync(join(tmpdir(), 'trace-alloc-messages-')); });
afterAll(() => { rmSync(dir, { recursive: true, force: true }); });

const ints = (values: number[]): NdArray => ({ kind: 'numeric', dtype: 'int64', shape: [values.length], data: BigInt64Array.from(values.map(BigInt)) });
const oneTree = () => { const f = join(dir, 'one.json'); writeFileSync(f, JSON.stringify({ trees: [{ id: 'a', nodes: [{}, { parent: 0 }] }] })); return f; };

describe('errors name what was given', () => {
  it('--base-depth alone, too large for its default --max-depth, names --base-depth (not the --max-depth it was not given)', () => {
    const r = runCli(['score', oneTree(), '--backend', 'cpu', '--base-depth', '2147483647']);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/--base-depth 2147483647 makes the default --max-depth \(4 × --base-depth = 8589934588\) larger than 2147483647: give --max-depth too/);
    expect(r.stderr).not.toMatch(/maxDepth/);
    expect(runCli(['score', oneTree(), '--backend', 'cpu', '--base-depth', '2147483647', '--max-depth', '2147483647']).code).toBe(0);
    expect(runCli(['score', oneTree(), '--backend', 'cpu', '--base-depth', '536870911']).code).toBe(0);
  });

  for (const [what, offsets, message] of [
    ['that does not start at 0', [1, 2], /field "tree_offset": .*must start at 0 \(the first tree's first row\), got 1/],
    ['that ends past the rows', [0, 5], /field "tree_offset": .*must end at the number of rows \(2, the length of "parent"\), got 5/],
    ['that decreases', [0, 2, 1, 2], /field "tree_offset": .*must not decrease: entry 2 is 1, after 2/],
  ] as const) {
    it(`a tree_offset ${what} is refused naming the column`, () => {
      const file = join(dir, 'offsets.npz');
      writeFileSync(file, encodeNpz(new Map([['tree_offset', ints([...offsets])], ['parent', ints([-1, 0])]])));
      const r = runCli(['score', file, '--backend', 'cpu']);
      expect(r.code).toBe(2);
      expect(r.stderr).toMatch(message);
    });
  }
});

describe('--out into a folder that does not exist yet', () => {
  it('creates the folders once the result is ready, none when the run fails, as docs/CLI.md says', () => {
    const out = join(dir, 'runs', '7', 'plan.json');
    const ok = runCli(['score', oneTree(), '--backend', 'cpu', '--out', out]);
    expect(ok.code).toBe(0);
    expect(JSON.parse(readFileSync(out, 'utf8')).trees[0].id).toBe('a');
    const bad = join(dir, 'bad.json');
    writeFileSync(bad, '{"trees":[{"id":"a","nodes":[{"visits":-1}]}]}');
    const failed = join(dir, 'never', 'plan.json');
    expect(runCli(['score', bad, '--backend', 'cpu', '--out', failed]).code).toBe(2);
    expect(existsSync(join(dir, 'never'))).toBe(false);
    const cli = readFileSync(join(import.meta.dirname, '..', 'docs', 'CLI.md'), 'utf8');
    expect(cli).toMatch(/Folders of the path that do not exist yet are created/);
    expect(cli).toMatch(/a run that fails writes nothing and\s+creates no folder/);
  });
});
