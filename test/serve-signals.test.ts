import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { CLI } from './cli-helpers.js';

// docs/PROTOCOL.md, "Ending": on SIGTERM or SIGINT the service answers the request in flight and
// no request after it; a second signal ends it at once, without answering (143 / 130).
//
// One fork of 4,096 children at dim 64, scored on the service's own thread (--threads 1): every
// set-params re-scores it, so each plan after one computes for a good part of a second without
// letting the event loop turn, which is when a signal used to wait until every queued line had
// been answered.

function bigTree(): unknown {
  let seed = 1;
  const next = () => { seed = (seed * 16807) % 2147483647; return Math.round((seed / 2147483647) * 1000) / 1000; };
  const embedding = () => Array.from({ length: 64 }, next);
  const nodes: unknown[] = [{ embedding: embedding() }];
  for (let i = 0; i < 4096; i++) nodes.push({ parent: 0, embedding: embedding(), reward: i % 2, visits: 1 });
  return { id: 'big', nodes };
}

interface Ending { ids: number[]; code: number | null; signal: NodeJS.Signals | null }

/** Sends the tree, then 6 × (set-params, plan) in one write; sends `signals` once the first set-params is answered. */
async function serveUntilSignalled(signals: NodeJS.Signals[]): Promise<Ending> {
  const child = spawn(process.execPath, [CLI, 'serve', '--stdio', '--backend', 'cpu', '--threads', '1'], { stdio: ['pipe', 'pipe', 'ignore'] });
  const ids: number[] = [];
  let buffered = '';
  let onReply: ((id: number) => void) | undefined;
  child.stdout.setEncoding('utf8');
  child.stdout.on('data', (chunk: string) => {
    buffered += chunk;
    for (let nl = buffered.indexOf('\n'); nl >= 0; nl = buffered.indexOf('\n')) {
      const reply = JSON.parse(buffered.slice(0, nl)) as { id: number; ok: boolean };
      buffered = buffered.slice(nl + 1);
      expect(reply.ok).toBe(true);
      ids.push(reply.id);
      onReply?.(reply.id);
    }
  });
  const ended = new Promise<Ending>((resolve) => child.on('exit', (code, signal) => resolve({ ids, code, signal })));
  const replied = (id: number) => new Promise<void>((resolve) => {
    if (ids.includes(id)) resolve();
    else onReply = (got) => { if (got === id) resolve(); };
  });
  child.stdin.write(`${JSON.stringify({ id: 0, op: 'add-tree', tree: bigTree() })}\n`);
  await replied(0);
  const lines: string[] = [];
  for (let i = 0, id = 1; i < 6; i++) {
    lines.push(JSON.stringify({ id: id++, op: 'set-params', alpha: 1 + (i + 1) / 8 }));
    lines.push(JSON.stringify({ id: id++, op: 'plan', budget: 8 }));
  }
  child.stdin.write(`${lines.join('\n')}\n`);
  await replied(1); // the plan with id 2 is in flight now
  for (const [i, signal] of signals.entries()) {
    if (i > 0) await new Promise((resolve) => setTimeout(resolve, 30));
    child.kill(signal);
  }
  const ending = await ended;
  child.stdin.destroy();
  return ending;
}

describe('serve --stdio: SIGTERM and SIGINT as docs/PROTOCOL.md says', () => {
  for (const [signal, code] of [['SIGTERM', 143], ['SIGINT', 130]] as const) {
    it(`${signal}: the request in flight is answered, the queued ones are not, exit 0`, async () => {
      const { ids, code: exit, signal: killedBy } = await serveUntilSignalled([signal]);
      expect(killedBy).toBeNull();
      expect(exit).toBe(0);
      // The plan in flight (2) is answered unless the signal landed just before it started.
      expect(ids.slice(0, 2)).toEqual([0, 1]);
      expect(ids.length === 2 || (ids.length === 3 && ids[2] === 2), `answered ${JSON.stringify(ids)}`).toBe(true);
    });

    it(`a second ${signal} ends the service without answering the request in flight (exit ${code})`, async () => {
      const { ids, code: exit } = await serveUntilSignalled([signal, signal]);
      expect(exit).toBe(code);
      expect(ids).toEqual([0, 1]);
    });
  }
});
