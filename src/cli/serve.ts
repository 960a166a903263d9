import { once } from 'node:events';
import { createInterface } from 'node:readline';
import { LiveSession } from '../live/protocol.js';
import { DEFAULT_PARAMS } from '../score/types.js';
import { parseFlags, UsageError } from './flags.js';
import { defineCommand } from './help.js';

export const SERVE_COMMAND = defineCommand({
  name: 'serve',
  operands: '--stdio',
  summary: `Keeps one live forest and answers JSON Lines requests on stdin with one JSON line each on
stdout, in order (add-tree, add-nodes, update, finish-rollout, remove-tree, plan, scores,
stats, set-params). Errors are responses ({"ok": false, "error": {"code", "message"}}), never
an exit; the forest survives malformed lines. Ends at end of input. Protocol: docs/PROTOCOL.md.`,
  flags: { stdio: 'boolean', backend: ['auto', 'gpu', 'cpu'], dim: 'int', alpha: 'number', tau: 'number', rule: ['v1', 'v2'] },
  docs: {
    stdio: { required: true, meaning: 'serve JSON Lines on stdin/stdout (the only transport)' },
    backend: { default: 'auto', meaning: 'where dirty groups are re-scored: cpu, gpu, or auto (the GPU when an adapter exists)' },
    dim: { value: 'N', default: 'taken from the first tree added', meaning: 'embedding dimension of the live forest' },
    alpha: { value: 'A', default: String(DEFAULT_PARAMS.alpha), meaning: "contrast damping α > 0 (set-params changes it later)" },
    tau: { value: 'T', default: String(DEFAULT_PARAMS.tau), meaning: 'softmax temperature τ > 0 (set-params changes it later)' },
    rule: { default: 'v2', meaning: 'the scoring and allocation rule of docs/ALGORITHM.md: v2, or v1 (set-params changes it later)' },
  },
});

/** `trace-alloc serve --stdio`: a sidecar for training jobs. Returns the exit code. */
export async function runServe(argv: string[]): Promise<number> {
  const { values, positionals } = parseFlags(argv, SERVE_COMMAND.flags);
  if (positionals.length > 0) throw new UsageError(`serve takes no arguments, got ${JSON.stringify(positionals[0])}`);
  if (values.stdio !== true) throw new UsageError('serve needs --stdio (JSON Lines on stdin/stdout is the only transport)');
  const dim = values.dim as number | undefined;
  if (dim !== undefined && dim < 0) throw new UsageError(`--dim must be an integer >= 0, got ${dim}`);
  for (const k of ['alpha', 'tau'] as const) {
    const x = values[k] as number | undefined;
    if (x !== undefined && !(x > 0)) throw new UsageError(`--${k} must be a number > 0, got ${x}`);
  }
  const session = new LiveSession({
    backend: (values.backend as 'auto' | 'gpu' | 'cpu' | undefined) ?? 'auto',
    ...(dim !== undefined ? { dim } : {}),
    params: { ...(values.alpha !== undefined ? { alpha: values.alpha as number } : {}), ...(values.tau !== undefined ? { tau: values.tau as number } : {}), rule: (values.rule as 'v1' | 'v2' | undefined) ?? 'v2' },
    onNotice: (m) => process.stderr.write(`trace-alloc serve: ${m}\n`),
  });

  let closed = false;
  process.stdout.on('error', () => { closed = true; }); // the client went away: stop quietly
  const input = createInterface({ input: process.stdin, crlfDelay: Infinity });
  try {
    for await (const line of input) {
      if (closed) break;
      let out: string | undefined;
      try {
        out = await session.handleLine(line);
      } catch (err) {
        // handleLine maps every error to a response; this is a last guard so the forest survives.
        out = JSON.stringify({ id: null, ok: false, error: { code: 'internal', message: err instanceof Error ? err.message : String(err) } });
      }
      if (out !== undefined && !process.stdout.write(`${out}\n`)) await once(process.stdout, 'drain');
    }
  } finally {
    input.close();
    session.destroy();
  }
  return 0;
}
