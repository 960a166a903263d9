import { execFileSync, spawnSync } from 'node:child_process';
import { lstatSync, mkdirSync, mkdtempSync, readFileSync, readlinkSync, rmSync, symlinkSync, writeFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { CLI, runCli } from './cli-helpers.js';
import { gpuDescribe } from './gpu-support.js';

const dir = mkdtempSync(join(tmpdir(), 'trace-alloc-hostile-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

let fileCount = 0;
function file(content: unknown, ext = '.json'): string {
  const path = join(dir, `f${fileCount++}${ext}`);
  writeFileSync(path, typeof content === 'string' ? content : JSON.stringify(content));
  return path;
}

/** One tree: a root and visited siblings with the given rewards and uncertainties, orthogonal-ish embeddings. */
function siblings(rewards: number[], uncertainties: number[] = rewards.map(() => 0)) {
  return {
    dim: 2,
    trees: [{ id: 'q', nodes: [{ embedding: [1, 0] }, ...rewards.map((reward, i) => ({ parent: 0, visits: 1, reward, uncertainty: uncertainties[i], embedding: [Math.cos(i), Math.sin(i)] }))] }],
  };
}

/** Every number of a plan, wherever it sits; JSON has no NaN/Infinity, so a bad one shows as null. */
function expectNoNull(text: string): void {
  expect(text).not.toMatch(/null|NaN|Infinity/);
  const walk = (x: unknown): void => {
    if (typeof x === 'number') expect(Number.isFinite(x)).toBe(true);
    else if (Array.isArray(x)) x.forEach(walk);
    else if (x !== null && typeof x === 'object') Object.values(x).forEach(walk);
    else expect(x).not.toBeNull();
  };
  walk(JSON.parse(text));
}

function expectUsage(r: { code: number | null; stdout: string; stderr: string }, message: RegExp): void {
  expect(r.code).toBe(2);
  expect(r.stdout).toBe('');
  expect(r.stderr).toMatch(message);
  expect(r.stderr.trimEnd().split('\n')).toHaveLength(1);
}

describe('overflowing inputs and parameters (cpu and auto)', () => {
  const huge = 1.7976931348623157e308;
  const cases: Array<[string, unknown]> = [
    ['rewards 1e308 and -1e308', siblings([1e308, -1e308, 0])],
    ['rewards at ±MAX_VALUE', siblings([huge, -huge, 0])],
    ['uncertainties at MAX_VALUE with rewards at ±MAX_VALUE', siblings([huge, -huge, 0], [huge, 0, huge / 2])],
  ];
  for (const backend of ['cpu', 'auto']) {
    for (const [name, forest] of cases) {
      it(`scores ${name} with exit 0 and finite numbers only (--backend ${backend})`, () => {
        const r = runCli(['score', file(forest), '--backend', backend, '--scores']);
        expect(r.stderr).not.toMatch(/non-finite/);
        expect(r.code).toBe(0);
        expectNoNull(r.stdout);
        const plan = JSON.parse(r.stdout);
        // The two opposite rewards contrast fully with each other.
        expect(plan.trees[0].scores[0].contrast).toBeGreaterThan(0.5);
        expect(plan.trees[0].allocations.reduce((s: number, a: { branches: number }) => s + a.branches, 0)).toBe(16);
      });
    }
  }

  it('refuses --tau 5e-324 and --alpha 1e301 with exit 2 naming the flag and the range', () => {
    const f = file(siblings([0, 1, 0.5]));
    expectUsage(runCli(['score', f, '--backend', 'cpu', '--tau', '5e-324']), /tau must be a number in \[1e-300, 1e\+300\]/);
    expectUsage(runCli(['score', f, '--backend', 'cpu', '--alpha', '1e301']), /alpha must be a number in \[1e-300, 1e\+300\]/);
  });

  for (const [flags, backend] of [[['--alpha', '1e300'], 'cpu'], [['--tau', '1e-300'], 'cpu'], [['--alpha', '1e300', '--tau', '1e-300'], 'auto'], [['--alpha', '1e-300', '--tau', '1e300'], 'auto']] as const) {
    it(`plans with finite gradients at the ends of the range: ${flags.join(' ')} (--backend ${backend})`, () => {
      const r = runCli(['score', file(siblings([1e10, -3, 2, 1e-5], [0, 1e5, 0, 3])), '--backend', backend, '--scores', ...flags]);
      expect(r.code).toBe(0);
      expectNoNull(r.stdout);
    });
  }
});

gpuDescribe('overflowing inputs under --backend gpu', () => {
  it('refuses what f32 cannot carry with exit 2 naming the field, never a null', () => {
    const r = runCli(['score', file(siblings([1e308, -1e308, 0])), '--backend', 'gpu']);
    expect(r.code).toBe(2);
    expect(r.stderr.trimEnd().split('\n').filter((l) => !/artificially reduced|^Warning/.test(l))).toHaveLength(1);
    expect(r.stderr).toMatch(/field "reward"/);
    expect(r.stdout).toBe('');
  });
  it('refuses --alpha 1e300 (beyond float32) with exit 2', () => {
    const r = runCli(['score', file(siblings([0, 1])), '--backend', 'gpu', '--alpha', '1e300']);
    expect(r.code).toBe(2);
    expect(r.stdout).toBe('');
  });
});

describe('unknown fields in forest files', () => {
  const node = (extra: Record<string, unknown>) => ({ dim: 0, trees: [{ id: 'q17', nodes: [{}, { parent: 0, ...extra }] }] });
  const cases: Array<[string, unknown, string, RegExp]> = [
    ['a misspelled reward', node({ rewrd: 1 }), '.json', /tree "q17" \(#0\), node 1, field "rewrd": unknown node field \(did you mean "reward"\?\)/],
    ['a misspelled visits', node({ visit: 3 }), '.json', /node 1, field "visit": unknown node field \(did you mean "visits"\?\)/],
    ['a __proto__ key', '{"dim":0,"trees":[{"id":"q17","nodes":[{},{"parent":0,"__proto__":{"reward":5}}]}]}', '.json', /node 1, field "__proto__": unknown node field/],
    ['a constructor key', node({ constructor: 1 }), '.json', /node 1, field "constructor": unknown node field/],
    ['an unknown tree field', { trees: [{ id: 'q17', nodes: [{}], nodez: [] }] }, '.json', /tree "q17" \(#0\), field "nodez": unknown tree field \(did you mean "nodes"\?\)/],
    ['an unknown forest field', { dims: 0, trees: [{ nodes: [{}] }] }, '.json', /field "dims": unknown forest field \(did you mean "dim"\?\)/],
    ['a misspelled field in JSON Lines', '{"id":"q17","nodes":[{},{"parent":0,"uncertainity":0.5}]}\n', '.jsonl', /line|tree "q17".*field "uncertainity": unknown node field \(did you mean "uncertainty"\?\)/],
  ];
  for (const [name, content, ext, message] of cases) {
    it(`refuses ${name} with exit 2, and --allow-unknown-fields keeps the file readable`, () => {
      const f = file(content, ext);
      expectUsage(runCli(['score', f, '--backend', 'cpu']), message);
      const kept = runCli(['score', f, '--backend', 'cpu', '--allow-unknown-fields']);
      expect(kept.code).toBe(0);
      expect(JSON.parse(kept.stdout).trees[0].budget).toBe(16);
    });
  }
  it('viz refuses them too and takes --allow-unknown-fields', () => {
    const f = file(node({ text: 'the agent said…' }));
    const out = join(dir, 'v.html');
    expectUsage(runCli(['viz', f, '--backend', 'cpu', '--out', out]), /field "text": unknown node field/);
    expect(runCli(['viz', f, '--backend', 'cpu', '--out', out, '--allow-unknown-fields']).code).toBe(0);
  });
  it('an extra field with --allow-unknown-fields changes nothing in the plan', () => {
    const plain = runCli(['score', file(siblings([0, 1, 0.5])), '--backend', 'cpu', '--scores']);
    const f = siblings([0, 1, 0.5]) as { trees: Array<{ nodes: Array<Record<string, unknown>> }> };
    f.trees[0].nodes[1].logprobs = [-0.1, -2];
    const extra = runCli(['score', file(f), '--backend', 'cpu', '--scores', '--allow-unknown-fields']);
    expect(extra.stdout).toBe(plain.stdout);
  });
});

describe('wrong types on the plain and the NaN-tolerant JSON path alike', () => {
  // The second node holds NaN in an ignored position on the NaN-tolerant variant, which sends the
  // whole text down the lenient parser; the type error must be the same either way.
  const cases: Array<[string, string, RegExp]> = [
    ['a reward string with a leading NUL escape', '"\\u00000.5"', /node 1, field "reward": must be a number, got "\\u00000.5"/],
    ['a reward string "0.5"', '"0.5"', /node 1, field "reward": must be a number, got "0.5"/],
    ['a reward string "NaN"', '"NaN"', /node 1, field "reward": must be a number, got "NaN"/],
    ['a reward object', '{"\\u0000trace-alloc:NaN":0,"x":1}', /node 1, field "reward": must be a number, got object/],
  ];
  for (const [name, reward, message] of cases) {
    for (const lenient of [false, true]) {
      it(`refuses ${name} (${lenient ? 'NaN-tolerant' : 'plain'} path)`, () => {
        const tail = lenient ? ',{"parent":0,"note":NaN}' : ',{"parent":0}';
        const text = `{"dim":0,"trees":[{"id":"q","nodes":[{},{"parent":0,"reward":${reward}}${tail}]}]}`;
        expectUsage(runCli(['score', file(text), '--backend', 'cpu', '--allow-unknown-fields']), message);
      });
    }
  }
  it('still reads NaN and Infinity tokens and rejects them by name', () => {
    expectUsage(runCli(['score', file('{"trees":[{"nodes":[{},{"parent":0,"reward":NaN}]}]}'), '--backend', 'cpu']), /node 1, field "reward": must be a finite number, got NaN/);
    expectUsage(runCli(['score', file('{"trees":[{"nodes":[{},{"parent":0,"reward":-Infinity}]}]}'), '--backend', 'cpu']), /node 1, field "reward": must be a finite number, got -Infinity/);
    expectUsage(runCli(['score', file('{"trees":[{"nodes":[{},{"parent":0,"uncertainty":Infinity}]}]}'), '--backend', 'cpu']), /field "uncertainty": must be a finite number >= 0, got Infinity/);
  });
});

describe('flags', () => {
  const f = file(siblings([0, 1]));
  const bad: Array<[string, string[], RegExp]> = [
    ['a hexadecimal budget', ['--budget', '0x10'], /--budget must be a decimal number .*got "0x10"/],
    ['a binary budget', ['--budget', '0b11'], /--budget must be a decimal number/],
    ['an Infinity tau', ['--tau', 'Infinity'], /--tau must be a decimal number/],
    ['a repeated flag', ['--budget', '3', '--budget', '4'], /--budget is given more than once/],
    ['a repeated flag in = form', ['--budget=3', '--budget=4'], /--budget is given more than once/],
    ['--constructor', ['--constructor', '1'], /unknown flag --constructor/],
    ['--__proto__', ['--__proto__', '1'], /unknown flag --__proto__/],
    ['--toString', ['--toString'], /unknown flag --toString/],
    ['a misspelled flag', ['--budgte', '3'], /unknown flag --budgte \(did you mean "budget"\?\)/],
  ];
  for (const [name, flags, message] of bad) it(`refuses ${name} with exit 2`, () => expectUsage(runCli(['score', f, '--backend', 'cpu', ...flags]), message));
  it('accepts decimal numbers with an exponent (--budget 1e3 is 1000)', () => {
    const r = runCli(['score', f, '--backend', 'cpu', '--budget', '1e3']);
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout).trees[0].budget).toBe(1000);
  });
});

describe('tree ids and JSON Lines hints', () => {
  it('reads integer tree ids as their decimal strings', () => {
    const r = runCli(['score', file({ trees: [{ id: 7, nodes: [{}] }, { id: -2, nodes: [{}] }] }), '--backend', 'cpu']);
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout).trees.map((t: { id: string }) => t.id)).toEqual(['7', '-2']);
    expectUsage(runCli(['score', file({ trees: [{ id: 7, nodes: [{}] }, { id: '7', nodes: [{}] }] }), '--backend', 'cpu']), /tree "7" \(#1\), field "id": duplicate tree id/);
    expectUsage(runCli(['score', file({ trees: [{ id: 1.5, nodes: [{}] }] }), '--backend', 'cpu']), /field "id": must be a string \(or an integer/);
  });
  it('hints when a .jsonl file holds one pretty-printed JSON document', () => {
    const pretty = JSON.stringify({ dim: 0, trees: [{ id: 'a', nodes: [{}] }] }, null, 2);
    expectUsage(runCli(['score', file(pretty, '.jsonl'), '--backend', 'cpu']), /line 1.*not valid JSON.*one JSON document spread over several lines.*name the file \.json/);
  });
  it('hints when a .jsonl line holds a whole forest', () => {
    const oneLine = JSON.stringify({ dim: 0, trees: [{ id: 'a', nodes: [{}] }] });
    expectUsage(runCli(['score', file(`${oneLine}\n`, '.jsonl'), '--backend', 'cpu']), /looks like a whole forest \{"dim", "trees"\}.*one tree per line/);
  });
});

describe('--out targets', () => {
  const f = file(siblings([0, 1]));
  it('over a symlink writes through to its target atomically and keeps the link', () => {
    const target = join(dir, 'target.json');
    const link = join(dir, 'link.json');
    writeFileSync(target, 'stale');
    symlinkSync('target.json', link);
    const r = runCli(['score', f, '--backend', 'cpu', '--out', link]);
    expect(r.code).toBe(0);
    expect(lstatSync(link).isSymbolicLink()).toBe(true);
    expect(readlinkSync(link)).toBe('target.json');
    expect(JSON.parse(readFileSync(target, 'utf8')).trees[0].id).toBe('q');
  });
  it('over a dangling symlink creates its target', () => {
    const link = join(dir, 'dangling.json');
    symlinkSync('sub/made.json', link);
    mkdirSync(join(dir, 'sub'));
    expect(runCli(['score', f, '--backend', 'cpu', '--out', link]).code).toBe(0);
    expect(JSON.parse(readFileSync(join(dir, 'sub/made.json'), 'utf8')).trees[0].id).toBe('q');
  });
  it('to /dev/null writes in place and leaves the device alone', () => {
    expect(runCli(['score', f, '--backend', 'cpu', '--out', '/dev/null']).code).toBe(0);
    expect(lstatSync('/dev/null').isCharacterDevice()).toBe(true);
  });
  it('to a FIFO writes into the pipe', () => {
    const fifo = join(dir, 'pipe');
    execFileSync('mkfifo', [fifo]);
    const r = spawnSync('sh', ['-c', `cat "${fifo}" > "${fifo}.out" & "${process.execPath}" "${CLI}" score "${f}" --backend cpu --out "${fifo}"; code=$?; wait; exit $code`], { encoding: 'utf8' });
    expect(r.status).toBe(0);
    expect(lstatSync(fifo).isFIFO()).toBe(true);
    expect(JSON.parse(readFileSync(`${fifo}.out`, 'utf8')).trees[0].id).toBe('q');
  });
  it('to /dev/full exits 1 with one line', () => {
    const r = runCli(['score', f, '--backend', 'cpu', '--out', '/dev/full']);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/cannot write \/dev\/full: ENOSPC/);
    expect(r.stderr.trimEnd().split('\n')).toHaveLength(1);
  });
  it('stdout redirected to /dev/full exits 1 with one line', () => {
    const r = spawnSync('sh', ['-c', `"${process.execPath}" "${CLI}" score "${f}" --backend cpu > /dev/full`], { encoding: 'utf8' });
    expect(r.status).toBe(1);
    expect(r.stderr).toMatch(/^trace-alloc: cannot write to standard output: ENOSPC/);
    expect(r.stderr.trimEnd().split('\n')).toHaveLength(1);
  });
  it('refuses a path ending in a separator with exit 2 and creates nothing', () => {
    expectUsage(runCli(['score', f, '--backend', 'cpu', '--out', join(dir, 'newdir') + '/']), /ends with a path separator/);
    expect(existsSync(join(dir, 'newdir'))).toBe(false);
  });
  it('refuses a path under /proc with exit 2 and a clear message', () => {
    expectUsage(runCli(['score', f, '--backend', 'cpu', '--out', '/proc/plan.json']), /--out \/proc\/plan\.json: is inside \/proc, a kernel interface/);
    expectUsage(runCli(['viz', f, '--backend', 'cpu', '--out', '/proc/self/view.html']), /is inside \/proc/);
  });
});

describe('demo --view', () => {
  it('refuses a view path under /proc or ending in a separator with exit 2, before generating anything', () => {
    expectUsage(runCli(['demo', '--trees', '2', '--backend', 'cpu', '--view', '/proc/demo.html']), /--view \/proc\/demo\.html: is inside \/proc/);
    expectUsage(runCli(['demo', '--trees', '2', '--backend', 'cpu', '--view', `${dir}/views/`]), /--view .*ends with a path separator/);
  });
});
