import { spawn } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GpuContext } from '../src/gpu/context.js';
import { createLiveForest } from '../src/live/create.js';
import { LiveSession } from '../src/live/protocol.js';
import { OptionError } from '../src/util/errors.js';
import { CLI } from './cli-helpers.js';
import { gpuDescribe } from './gpu-support.js';

type Reply = { id: unknown; ok: boolean; result?: any; error?: { code: string; message: string; tree?: string; node?: number; field?: string } };

async function send(session: LiveSession, request: unknown): Promise<Reply> {
  const out = await session.handleLine(typeof request === 'string' ? request : JSON.stringify(request));
  expect(out).toBeDefined();
  return JSON.parse(out!) as Reply;
}

const tree = (id: string | number) => ({
  id,
  nodes: [{ embedding: [1, 0] }, { parent: 0, embedding: [1, 0.01], visits: 2, reward: 1 }, { parent: 0, embedding: [0, 1], visits: 2, reward: 0 }, { parent: 0, embedding: [0.5, 0.5], visits: 1, reward: 0.5, uncertainty: 0.2 }],
});

/** Every number in a response is finite, and nothing is null but the ids we sent as null. */
function expectFinite(x: unknown, where = 'result'): void {
  if (typeof x === 'number') expect(Number.isFinite(x), where).toBe(true);
  else if (Array.isArray(x)) x.forEach((y, i) => expectFinite(y, `${where}[${i}]`));
  else if (x !== null && typeof x === 'object') for (const [k, y] of Object.entries(x)) expectFinite(y, `${where}.${k}`);
  else expect(x, where).not.toBeNull();
}

async function hostileSuite(backend: 'cpu' | 'gpu' | 'auto', context?: () => GpuContext): Promise<void> {
  void context;
  const s = new LiveSession({ backend });
  try {
    expect((await send(s, { id: 1, op: 'add-tree', trees: [tree('q1'), tree('q2')] })).ok).toBe(true);

    // Operation names that are Object.prototype members are unknown ops, never internal errors.
    for (const op of ['constructor', '__proto__', 'toString', 'hasOwnProperty', 'valueOf', 'isPrototypeOf']) {
      const r = await send(s, { id: op, op });
      expect(r.error?.code, op).toBe('unknown_op');
    }
    expect((await send(s, '{"op":"plan","__proto__":{"budget":3}}')).error?.code).toBe('invalid_request');
    expect((await send(s, { op: 'plan', constructor: 1 })).error?.code).toBe('invalid_request');
    expect((await send(s, { op: 'plan', budgte: 1 })).error?.message).toMatch(/did you mean "budget"/);

    await send(s, { id: 2, op: 'plan', budget: 4 });
    const stats0 = (await send(s, { op: 'stats' })).result;
    expect((await send(s, { op: 'update', tree: 'q1', node: 1, reward: 0.25 })).ok).toBe(true);
    const stats1 = (await send(s, { op: 'stats' })).result;

    // Rejected plans change nothing: not the counters, not the dirty groups, not what "changed" lists next.
    const rejected: unknown[] = [
      { op: 'plan', scores: 'yes' },
      { op: 'plan', changed: 1 },
      { op: 'plan', trees: ['nope'] },
      { op: 'plan', budget: { q1: 9007199254740991, q2: 1 } },
      { op: 'plan', budget: { q1: 2 ** 31, q2: 1 } },
      { op: 'plan', budget: { q1: -1, q2: 1 } },
      { op: 'plan', budget: { q1: 3 } },
      { op: 'plan', budget: { q1: 3, q2: '3' } },
      { op: 'plan', budget: [3, 3] },
      { op: 'plan', budget: 2 ** 31 },
      { op: 'plan', totalBudget: 1, minPerTree: 1 },
      { op: 'plan', totalBudget: 2 ** 31 },
      { op: 'plan', maxDepth: 0 },
    ];
    for (const request of rejected) {
      const r = await send(s, request);
      expect(r.ok, JSON.stringify(request)).toBe(false);
      expect(['invalid_request', 'invalid_options', 'unknown_tree'], JSON.stringify(request)).toContain(r.error?.code);
      expect((await send(s, { op: 'stats' })).result, JSON.stringify(request)).toEqual(stats1);
    }
    expect(stats1.plans).toBe(stats0.plans);
    const next = await send(s, { op: 'plan', budget: 4, changed: true });
    expect(next.result.replanned).toEqual(['q1']);
    expect(next.result.trees.map((t: { id: string }) => t.id)).toEqual(['q1']);

    // The largest per-tree budget is accepted.
    const most = await send(s, { op: 'plan', budget: { q1: 2 ** 31 - 1, q2: 0 } });
    expect(most.ok).toBe(true);
    expect(most.result.trees[0].allocations.reduce((a: number, x: { branches: number }) => a + x.branches, 0)).toBe(2 ** 31 - 1);

    // Unknown fields in trees, nodes and updates are refused with the field named.
    const badTree = await send(s, { op: 'add-tree', tree: { id: 'q3', nodes: [{ embedding: [1, 0] }, { parent: 0, embedding: [0, 1], rewards: 1 }] } });
    expect(badTree.error).toMatchObject({ code: 'invalid_value', tree: 'q3', node: 1, field: 'rewards' });
    expect(badTree.error?.message).toMatch(/did you mean "reward"/);
    const badTreeField = await send(s, { op: 'add-tree', trees: [{ id: 'q3', nodes: [{ embedding: [1, 0] }], text: 'prompt' }] });
    expect(badTreeField.error).toMatchObject({ code: 'invalid_value', tree: 'q3', field: 'text' });
    const badNode = await send(s, { op: 'add-nodes', tree: 'q1', nodes: [{ parent: 0, embeding: [0, 1] }] });
    expect(badNode.error).toMatchObject({ code: 'invalid_value', tree: 'q1', node: 4, field: 'embeding' });
    expect(badNode.error?.message).toMatch(/did you mean "embedding"/);
    const protoNode = await send(s, '{"op":"add-nodes","tree":"q1","nodes":[{"parent":0,"embedding":[0,1],"__proto__":{"reward":9}}]}');
    expect(protoNode.error).toMatchObject({ code: 'invalid_value', field: '__proto__' });
    expect((await send(s, { op: 'update', updates: [{ tree: 'q1', node: 1, rewrd: 1 }] })).error?.code).toBe('invalid_request');
    expect((await send(s, { op: 'stats' })).result).toMatchObject({ trees: 2, nodes: 8 });

    // Integer tree ids name the tree with that decimal id.
    expect((await send(s, { op: 'add-tree', tree: tree(7) })).result).toMatchObject({ tree: '7' });
    expect((await send(s, { op: 'update', tree: 7, node: 2, reward: 0.75 })).ok).toBe(true);
    expect((await send(s, { op: 'finish-rollout', tree: 7, leaf: 3, reward: 1 })).ok).toBe(true);
    const byInt = await send(s, { op: 'plan', budget: { q1: 1, q2: 1, 7: 5 }, trees: [7] });
    expect(byInt.result.trees).toMatchObject([{ id: '7', budget: 5 }]);
    expect((await send(s, { op: 'remove-tree', tree: 7 })).result).toEqual({ removed: 1, trees: 2 });

    // Huge but finite rewards and uncertainties: a finite plan, or (f32 GPU) an error, never a null.
    expect((await send(s, { op: 'update', updates: [{ tree: 'q2', node: 1, reward: 1e308 }, { tree: 'q2', node: 2, reward: -1e308, uncertainty: 1.7e308 }] })).ok).toBe(true);
    const huge = await send(s, { op: 'plan', budget: 8, scores: true });
    if (backend === 'gpu') {
      expect(huge.ok).toBe(false);
      expect(huge.error?.code).toBe('invalid_value');
    } else {
      expect(huge.ok).toBe(true);
      expectFinite(huge.result);
      expect(huge.result.trees[1].budget).toBe(8);
    }
    const scores = await send(s, { op: 'scores' });
    if (scores.ok) expectFinite(scores.result);
    expect((await send(s, { op: 'update', updates: [{ tree: 'q2', node: 1, reward: 1 }, { tree: 'q2', node: 2, reward: 0, uncertainty: 0 }] })).ok).toBe(true);

    // α and τ outside [1e-300, 1e300] are refused; at the ends of the range (CPU) the plan stays finite.
    for (const params of [{ tau: 5e-324 }, { alpha: 1e301 }, { alpha: 0 }, { tau: -1 }]) {
      expect((await send(s, { op: 'set-params', ...params })).error?.code, JSON.stringify(params)).toBe('invalid_options');
    }
    if (backend !== 'gpu') {
      for (const params of [{ alpha: 1e300, tau: 1e-300 }, { alpha: 1e-300, tau: 1e300 }]) {
        expect((await send(s, { op: 'set-params', ...params })).ok).toBe(true);
        const p = await send(s, { op: 'plan', budget: 8, scores: true });
        expect(p.ok, JSON.stringify(params)).toBe(true);
        expectFinite(p.result);
      }
    }
    expect((await send(s, { op: 'set-params', alpha: 1, tau: 0.5 })).ok).toBe(true);
    expect((await send(s, { op: 'plan', budget: 8 })).ok).toBe(true);
  } finally {
    s.destroy();
  }
}

describe('serve protocol under hostile requests (cpu)', () => {
  it('keeps its forest and its word through every bad request', () => hostileSuite('cpu'));

  it('--allow-unknown-fields (session option) accepts and ignores extra fields', async () => {
    const s = new LiveSession({ backend: 'cpu', allowUnknownFields: true });
    const t = tree('q1') as { id: string; nodes: Array<Record<string, unknown>>; text?: string };
    t.text = 'the prompt';
    t.nodes[1].logprobs = [-0.5];
    expect((await send(s, { op: 'add-tree', tree: t })).ok).toBe(true);
    expect((await send(s, { op: 'add-nodes', tree: 'q1', nodes: [{ parent: 1, embedding: [1, 0], text: 'step' }] })).ok).toBe(true);
    const plain = new LiveSession({ backend: 'cpu' });
    await send(plain, { op: 'add-tree', tree: tree('q1') });
    await send(plain, { op: 'add-nodes', tree: 'q1', nodes: [{ parent: 1, embedding: [1, 0] }] });
    expect((await send(s, { op: 'plan', scores: true })).result).toEqual((await send(plain, { op: 'plan', scores: true })).result);
    s.destroy();
    plain.destroy();
  });

  it('live.plan refuses a per-tree budget past 2^31 - 1 and changes nothing', async () => {
    const live = await createLiveForest({ dim: 2, backend: 'cpu' });
    live.addTree(tree('q'));
    await expect(live.plan({ budget: { q: 2 ** 40 } })).rejects.toThrow(OptionError);
    await expect(live.plan({ budget: { constructor: 1 } as Record<string, number> })).rejects.toThrow(/no entry for tree "q"/);
    expect(live.stats()).toMatchObject({ plans: 0, rescores: 0 });
    const plan = await live.plan({ budget: { q: 2 ** 31 - 1 } });
    expect(plan.replanned).toEqual(['q']);
    live.destroy();
  });
});

describe('serve protocol under hostile requests (auto)', () => {
  it('keeps its forest and its word through every bad request', () => hostileSuite('auto'));
});

gpuDescribe('serve protocol under hostile requests (gpu)', () => {
  let context: GpuContext;
  beforeAll(async () => { context = await GpuContext.create(); });
  afterAll(() => context?.destroy());
  it('keeps its forest and its word through every bad request', () => hostileSuite('gpu', () => context));
});

/** A spawned `serve --stdio`, read line by line. */
function startServe(args: string[] = []) {
  const child = spawn(process.execPath, [CLI, 'serve', '--stdio', '--backend', 'cpu', ...args], { stdio: ['pipe', 'pipe', 'pipe'], env: { ...process.env, XDG_RUNTIME_DIR: process.env.XDG_RUNTIME_DIR ?? '/tmp' } });
  let buffered = '';
  const lines: string[] = [];
  const waiters: Array<() => void> = [];
  let stderr = '';
  child.stdout.setEncoding('utf8');
  child.stdout.on('data', (chunk: string) => {
    buffered += chunk;
    let nl;
    while ((nl = buffered.indexOf('\n')) >= 0) { lines.push(buffered.slice(0, nl)); buffered = buffered.slice(nl + 1); }
    waiters.splice(0).forEach((w) => w());
  });
  child.stderr.setEncoding('utf8');
  child.stderr.on('data', (c: string) => { stderr += c; });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })));
  return {
    child,
    exited,
    get stderr() { return stderr; },
    get rest() { return buffered; },
    /** The n-th response line (0-based), waiting for it. */
    async line(n: number): Promise<Reply> {
      while (lines.length <= n) await new Promise<void>((resolve) => waiters.push(resolve));
      return JSON.parse(lines[n]) as Reply;
    },
    lines,
  };
}

function bigForestRequest(trees: number): string {
  const list = [];
  for (let t = 0; t < trees; t++) {
    const nodes: unknown[] = [{ embedding: [1, 0, 0, 0] }];
    for (let v = 1; v < 60; v++) nodes.push({ parent: Math.floor((v - 1) / 4), visits: 1 + (v % 3), reward: ((v * 7 + t) % 11) / 10, embedding: [Math.cos(v), Math.sin(v), (t % 5) / 5, v / 60] });
    list.push({ id: `t${t}`, nodes });
  }
  return JSON.stringify({ id: 'big', op: 'add-tree', trees: list });
}

describe('serve --stdio process behaviour', () => {
  it('answers a line over --max-request-bytes with an error, skips it without buffering it, and keeps serving', async () => {
    const s = startServe(['--max-request-bytes', String(1 << 20)]);
    s.child.stdin.write(`${JSON.stringify({ id: 1, op: 'add-tree', tree: tree('q1') })}\n`);
    expect((await s.line(0)).ok).toBe(true);
    // 3 MiB without a newline, written in pieces, then the newline and more requests.
    const piece = `{"id":2,"op":"add-tree","tree":${'x'.repeat(64 * 1024)}`;
    for (let i = 0; i < 48; i++) s.child.stdin.write(piece);
    s.child.stdin.write(`\n${JSON.stringify({ id: 3, op: 'stats' })}\n`);
    const tooLarge = await s.line(1);
    expect(tooLarge).toMatchObject({ id: null, ok: false, error: { code: 'request_too_large' } });
    expect(tooLarge.error?.message).toMatch(new RegExp(`${piece.length * 48} bytes, more than --max-request-bytes \\(1048576\\)`));
    expect((await s.line(2)).result).toMatchObject({ trees: 1, nodes: 4 });
    // A line just under the limit is still read.
    const padded = JSON.stringify({ id: 4, op: 'plan', budget: 3, trees: ['q1'] });
    s.child.stdin.write(`${padded}${' '.repeat((1 << 20) - padded.length - 1)}\n`);
    expect((await s.line(3)).ok).toBe(true);
    s.child.stdin.end();
    expect((await s.exited).code).toBe(0);
  });

  it('refuses a --max-request-bytes below 1024 with exit 2', async () => {
    const s = startServe(['--max-request-bytes', '10']);
    s.child.stdin.end();
    expect((await s.exited).code).toBe(2);
    expect(s.stderr).toMatch(/--max-request-bytes must be an integer in \[1024/);
  });

  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    it(`on ${signal} answers the request in flight, then exits 0`, async () => {
      const s = startServe();
      s.child.stdin.write(`${bigForestRequest(400)}\n`);
      expect((await s.line(0)).ok).toBe(true);
      // Both lines in one write (under PIPE_BUF, so they arrive together): when the answer to the
      // first is out, the plan has been taken up, and the signal comes while it is in flight.
      s.child.stdin.write(`${JSON.stringify({ id: 'p', op: 'set-params', alpha: 2 })}\n${JSON.stringify({ id: 'plan', op: 'plan', totalBudget: 4000, scores: true })}\n`);
      expect((await s.line(1)).ok).toBe(true);
      s.child.kill(signal);
      const { code, signal: killedBy } = await s.exited;
      expect(killedBy).toBeNull();
      expect(code).toBe(0);
      expect(s.lines).toHaveLength(3);
      expect(s.rest).toBe('');
      const plan = JSON.parse(s.lines[2]) as Reply;
      expect(plan).toMatchObject({ id: 'plan', ok: true });
      expect(plan.result.trees).toHaveLength(400);
      expect(plan.result.params).toEqual({ alpha: 2, tau: 0.5, rule: 'v5' });
    });
  }

  it('on SIGTERM while idle exits 0 at once', async () => {
    const s = startServe();
    s.child.stdin.write(`${JSON.stringify({ id: 1, op: 'stats' })}\n`);
    await s.line(0);
    s.child.kill('SIGTERM');
    expect(await s.exited).toEqual({ code: 0, signal: null });
  });

  it('stops quietly with exit 0 when the client closes stdout (EPIPE)', async () => {
    const s = startServe();
    s.child.stdin.write(`${JSON.stringify({ id: 1, op: 'stats' })}\n`);
    await s.line(0);
    s.child.stdout.destroy();
    const stats = `${JSON.stringify({ op: 'stats' })}\n`.repeat(2000);
    s.child.stdin.on('error', () => {}); // the service may be gone before all of it is written
    s.child.stdin.write(stats);
    s.child.stdin.write(stats);
    const { code } = await s.exited;
    expect(code).toBe(0);
    expect(s.stderr).not.toMatch(/EPIPE|Error/);
  });
});
