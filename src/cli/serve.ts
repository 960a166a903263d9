import { constants } from 'node:buffer';
import { once } from 'node:events';
import { LiveSession } from '../live/protocol.js';
import { DEFAULT_PARAMS, PARAM_MAX, PARAM_MIN } from '../score/types.js';
import { DEFAULT_RULE, RULES, type Rule } from '../allocate/options.js';
import { FrameReader } from './lines.js';
import { maxGroupSizeFlag, maxInflatedBytesFlag, parseFlags, UsageError } from './flags.js';
import { defineCommand, FOREST_FLAG_HELP, VERBOSE_MEANING } from './help.js';
import { noticePrinter } from './output.js';

/** Default longest request line: a batch of about 2,000 trees of 100 nodes at dim 64 as JSON. */
export const DEFAULT_MAX_REQUEST_BYTES = 64 * 1024 * 1024;
/** V8 cannot hold a longer string, so no request line can be longer. */
const MAX_REQUEST_BYTES_LIMIT = 0x1fffffe8;
/** The longest `add-columns` payload: what one buffer can hold (4 GiB in Node 20). */
const MAX_BATCH_BYTES_LIMIT = constants.MAX_LENGTH;

/** The forest flags serve takes: it reads no file, so --max-input-bytes is not one (--max-request-bytes caps its lines). */
const { 'max-input-bytes': _filesOnly, ...SERVE_FOREST_FLAG_HELP } = FOREST_FLAG_HELP;

export const SERVE_COMMAND = defineCommand({
  name: 'serve',
  operands: '--stdio',
  summary: `Keeps one live forest and answers JSON Lines requests on stdin with one JSON line each on
stdout, in order (add-tree, add-nodes, update, finish-rollout, remove-tree, plan, scores,
stats, set-params, values, and add-columns: a columnar batch as raw bytes after its header line).
Errors are responses ({"ok": false, "error": {"code", "message"}}), never
an exit; the forest survives malformed lines. Ends with exit 0 at end of input, when the
client closes stdout, or on SIGTERM/SIGINT (after answering the request in flight; requests
not yet started get no answer); a second signal ends it without answering (exit 143 / 130).
Protocol: docs/PROTOCOL.md.`,
  flags: { stdio: 'boolean', backend: ['auto', 'gpu', 'cpu'], dim: 'int', alpha: 'number', tau: 'number', rule: RULES,
    'max-request-bytes': 'int', 'max-batch-bytes': 'int', 'allow-unknown-fields': 'boolean', 'max-group-size': 'int', 'max-inflated-bytes': 'int', threads: 'int', verbose: 'boolean' },
  docs: {
    stdio: { required: true, meaning: 'serve JSON Lines on stdin/stdout (the only transport)' },
    backend: { default: 'auto', meaning: 'where dirty groups are re-scored: cpu, gpu, or auto (the GPU when an adapter exists)' },
    dim: { value: 'N', default: 'taken from the first tree added', meaning: 'embedding dimension of the live forest' },
    alpha: { value: 'A', default: String(DEFAULT_PARAMS.alpha), meaning: "contrast damping α > 0 (set-params changes it later)" },
    tau: { value: 'T', default: String(DEFAULT_PARAMS.tau), meaning: 'softmax temperature τ > 0 (set-params changes it later)' },
    rule: { default: DEFAULT_RULE, meaning: 'the scoring and allocation rule of docs/ALGORITHM.md: v5, or v4, v3, v2 and v1 (kept exactly; set-params changes it later)' },
    'max-request-bytes': { value: 'N', default: `${DEFAULT_MAX_REQUEST_BYTES} (64 MiB)`, meaning: 'longest request line in bytes; a longer line is skipped unread and answered with a request_too_large error' },
    'max-batch-bytes': { value: 'N', default: `${MAX_BATCH_BYTES_LIMIT} (what one buffer can hold)`, meaning: "longest add-columns payload in bytes; a longer one is answered with a request_too_large error carrying the request's id, then skipped unread" },
    threads: { value: 'N', default: 'available parallelism', meaning: 'CPU threads for large re-scores on the cpu backend (a batch of new trees, new α/τ); small ones stay on one; plans are the same for any N' },
    verbose: { default: 'off', meaning: VERBOSE_MEANING },
    ...SERVE_FOREST_FLAG_HELP,
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
    if (x !== undefined && !(x >= PARAM_MIN && x <= PARAM_MAX)) throw new UsageError(`--${k} must be a number in [${PARAM_MIN}, ${PARAM_MAX}], got ${x}`);
  }
  const threads = values.threads as number | undefined;
  if (threads !== undefined && threads < 1) throw new UsageError(`--threads must be an integer >= 1, got ${threads}`);
  const maxBytes = (values['max-request-bytes'] as number | undefined) ?? DEFAULT_MAX_REQUEST_BYTES;
  if (maxBytes < 1024 || maxBytes > MAX_REQUEST_BYTES_LIMIT) throw new UsageError(`--max-request-bytes must be an integer in [1024, ${MAX_REQUEST_BYTES_LIMIT}], got ${maxBytes}`);
  const maxBatchBytes = (values['max-batch-bytes'] as number | undefined) ?? MAX_BATCH_BYTES_LIMIT;
  if (maxBatchBytes < 1 || maxBatchBytes > MAX_BATCH_BYTES_LIMIT) throw new UsageError(`--max-batch-bytes must be an integer in [1, ${MAX_BATCH_BYTES_LIMIT}], got ${maxBatchBytes}`);
  const maxInflatedBytes = maxInflatedBytesFlag(values);
  const session = new LiveSession({
    backend: (values.backend as 'auto' | 'gpu' | 'cpu' | undefined) ?? 'auto',
    ...(dim !== undefined ? { dim } : {}),
    params: { ...(values.alpha !== undefined ? { alpha: values.alpha as number } : {}), ...(values.tau !== undefined ? { tau: values.tau as number } : {}), rule: (values.rule as Rule | undefined) ?? DEFAULT_RULE },
    allowUnknownFields: values['allow-unknown-fields'] === true,
    maxGroupSize: maxGroupSizeFlag(values),
    ...(maxInflatedBytes !== undefined ? { maxInflatedBytes } : {}),
    ...(threads !== undefined ? { threads } : {}),
    onNotice: noticePrinter('trace-alloc serve', values.verbose === true),
  });

  let closed = false;
  const lines = FrameReader.stdin(maxBytes);
  const payloads = new PayloadBuffer();
  const write = async (line: string) => {
    if (closed) return;
    try {
      if (!process.stdout.write(`${line}\n`)) await once(process.stdout, 'drain');
    } catch {
      closed = true; // once() rejects with the stream's error
    }
  };
  // The client went away (EPIPE and the like): stop quietly, as at end of input.
  process.stdout.on('error', () => { closed = true; lines.stop(); });
  // SIGTERM/SIGINT: no further request starts; the one in flight is answered, then exit 0. A
  // second signal ends the service at once, without answering (128 + the signal's number).
  let signalled = false;
  const onSignal = (signal: NodeJS.Signals) => {
    if (signalled) process.exit(signal === 'SIGINT' ? 130 : 143);
    signalled = true;
    lines.stop();
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
  try {
    for (;;) {
      const event = await lines.nextLine();
      if (event === undefined || closed) break;
      let out: string | undefined;
      if (event.kind === 'oversized') {
        out = JSON.stringify({ id: null, ok: false, error: { code: 'request_too_large', message: `the request line is ${event.bytes} bytes, more than --max-request-bytes (${maxBytes}); it was skipped unread` } });
      } else {
        try {
          // A binary batch (add-columns) is its header line plus exactly the bytes it announces.
          const frame = session.binaryFrame(event.text);
          if (frame === undefined) out = await session.handleLine(event.text);
          else {
            const payload = frame.bytes <= maxBatchBytes ? await readPayload(lines, payloads, frame.bytes) : undefined;
            if (payload !== undefined) out = await frame.complete(payload);
            else {
              // Answered before the payload is skipped, so the client learns at once and can stop sending.
              const reason = frame.bytes > maxBatchBytes ? `more than --max-batch-bytes (${maxBatchBytes})` : 'more than this process can hold in memory';
              await write(JSON.stringify({ id: frame.id, ok: false, error: { code: 'request_too_large', message: `the batch announces ${frame.bytes} bytes, ${reason}; its payload is skipped unread` } }));
              await lines.skipBytes(frame.bytes);
              continue;
            }
          }
        } catch (err) {
          // handleLine maps every error to a response; this is a last guard so the forest survives.
          out = JSON.stringify({ id: null, ok: false, error: { code: 'internal', message: err instanceof Error ? err.message : String(err) } });
        }
      }
      // Signals are delivered only when the event loop turns, and a request computed on this
      // thread (a re-score, a plan) never lets it turn: without this, every queued line would be
      // answered before a SIGTERM was even seen. Turning it here, before the answer goes out,
      // lets a first signal stop the requests after this one, and a second end the service
      // before this answer is written.
      await turnEventLoop();
      if (out !== undefined) await write(out);
    }
  } finally {
    process.off('SIGTERM', onSignal);
    process.off('SIGINT', onSignal);
    session.destroy();
    lines.destroy(); // nothing more is read; lets the process exit
  }
  return 0;
}

/**
 * Resolves once the event loop has gone through its poll phase, where libuv delivers signals:
 * an immediate scheduled from the poll phase runs in the check phase right after it, so the
 * second one, scheduled from a check phase, runs only after the next poll.
 */
async function turnEventLoop(): Promise<void> {
  await new Promise((resolve) => setImmediate(resolve));
  await new Promise((resolve) => setImmediate(resolve));
}

/**
 * Where payloads land: one buffer, kept and reused by the next batch that fits. A trainer
 * sends a batch of about the same size every step, and fresh memory costs far more than
 * reusing it (on the project's VM, first touching 188 MB took 1.6 s, writing it again 25 ms);
 * the service holds its largest batch's size, as its live store holds its largest forest's
 * capacity. Safe because a batch is copied into the live store before the next one is read.
 */
class PayloadBuffer {
  private buffer: Uint8Array | undefined;

  /** `bytes` bytes to read a payload into, or undefined when they cannot be allocated. */
  take(bytes: number): Uint8Array | undefined {
    if (this.buffer === undefined || this.buffer.length < bytes) {
      this.buffer = undefined; // the old one can go before the new one is allocated
      try {
        this.buffer = new Uint8Array(bytes);
      } catch {
        return undefined;
      }
    }
    return this.buffer.subarray(0, bytes);
  }
}

/** The payload, or undefined when a buffer of `bytes` cannot be allocated (nothing has been read then). */
async function readPayload(lines: FrameReader, into: PayloadBuffer, bytes: number): Promise<Uint8Array | undefined> {
  const buffer = into.take(bytes);
  return buffer === undefined ? undefined : lines.readBytes(bytes, buffer);
}
