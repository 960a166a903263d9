import { once } from 'node:events';
import { LiveSession } from '../live/protocol.js';
import { StdinFrames } from './stdin-frames.js';
import { parseFlags, UsageError } from './flags.js';

export const SERVE_USAGE = `usage: trace-alloc serve --stdio [--backend auto|gpu|cpu] [--dim N] [--alpha A] [--tau T]

Keeps one live forest and answers JSON Lines requests on stdin with one JSON line each on
stdout, in order (add-tree, add-nodes, update, finish-rollout, remove-tree, plan, scores,
stats, set-params, and add-columns: a columnar batch as raw bytes after its header line).
Errors are responses ({"ok": false, "error": {"code", "message"}}), never
an exit; the forest survives malformed lines. Ends at end of input. Protocol: docs/PROTOCOL.md.

  --stdio      serve on stdin/stdout (required; the only transport)
  --backend    where dirty groups are re-scored (default auto: the GPU when an adapter exists)
  --dim        embedding dimension (default: taken from the first tree added)
  --alpha      α of SPEC §2 (default 1)      --tau   τ (default 0.5)`;

/** `trace-alloc serve --stdio`: a sidecar for training jobs. Returns the exit code. */
export async function runServe(argv: string[]): Promise<number> {
  const { values, positionals } = parseFlags(argv, { stdio: 'boolean', backend: ['auto', 'gpu', 'cpu'], dim: 'int', alpha: 'number', tau: 'number' });
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
    params: { ...(values.alpha !== undefined ? { alpha: values.alpha as number } : {}), ...(values.tau !== undefined ? { tau: values.tau as number } : {}) },
    onNotice: (m) => process.stderr.write(`trace-alloc serve: ${m}\n`),
  });

  let closed = false;
  process.stdout.on('error', () => { closed = true; }); // the client went away: stop quietly
  const input = new StdinFrames(process.stdin);
  try {
    for (let line = await input.nextLine(); line !== undefined && !closed; line = await input.nextLine()) {
      let out: string | undefined;
      try {
        // A binary batch (add-columns) is its header line plus exactly the bytes it announces.
        const frame = session.binaryFrame(line);
        out = frame ? await frame.complete(await input.readBytes(frame.bytes)) : await session.handleLine(line);
      } catch (err) {
        // handleLine maps every error to a response; this is a last guard so the forest survives.
        out = JSON.stringify({ id: null, ok: false, error: { code: 'internal', message: err instanceof Error ? err.message : String(err) } });
      }
      if (out !== undefined && !process.stdout.write(`${out}\n`)) await once(process.stdout, 'drain');
    }
  } finally {
    session.destroy();
  }
  return 0;
}
