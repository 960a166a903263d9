import { fstatSync } from 'node:fs';
import { Socket, type SocketConstructorOpts } from 'node:net';
import type { Readable } from 'node:stream';

/** One input line, or the size of a line that was longer than the limit (its bytes were dropped). */
export type LineEvent = { kind: 'line'; text: string } | { kind: 'oversized'; bytes: number };

/** Chunks held ahead of the reader before the input is paused: back-pressure instead of buffering input. */
const MAX_QUEUED = 4;

/**
 * The service's input: newline-terminated lines, never holding more than `maxBytes` of one line
 * (a longer line is dropped as it streams in, up to its newline, and reported as `oversized`
 * with its length, so one huge line cannot exhaust memory or hit V8's string limit — readline
 * would buffer it whole), and, when a request announces a binary payload, exactly that many raw
 * bytes (then lines again). Reading is pull-based: nothing is split ahead of the request that
 * decides whether the next bytes are a line or a payload. Lines are UTF-8; a trailing CR is
 * dropped (CRLF input).
 *
 * Input arrives through `accept`: from a stream's 'data' events, or (`FrameReader.stdin`) from
 * a pipe read into one reused buffer, whose bytes go straight into a payload being read. A
 * stream allocates every 64 KiB chunk afresh, and on the project's VM that churn of fresh
 * memory made a 188 MB payload take 1–2.6 s to arrive instead of 0.1–0.16 s.
 */
export class FrameReader {
  private pending: Buffer | undefined; // unread bytes of the last chunk
  private readonly chunks: Buffer[] = [];
  private ended = false;
  private stopped = false;
  private wake: (() => void) | undefined;
  /** A payload being read: incoming bytes are copied straight into it. */
  private sink: { out: Uint8Array; filled: number } | undefined;
  private source: Readable | undefined;
  /**
   * Set when `accept` asked the source to wait. A pipe read through `onread` stops reading
   * without marking itself paused (`isPaused()` stays false), so this flag, not `isPaused()`,
   * says whether to resume: trusting `isPaused()` left such a pipe stopped for good once the
   * queue filled, and the service exited at the next empty event loop with lines unanswered.
   */
  private throttled = false;

  constructor(private readonly maxBytes: number, stream?: Readable) {
    if (stream === undefined) return;
    this.attach(stream);
    stream.on('data', (chunk: Buffer | string) => {
      if (!this.accept(typeof chunk === 'string' ? Buffer.from(chunk) : chunk, false)) stream.pause();
    });
  }

  /**
   * A reader of standard input: a pipe or socket is read into one reused buffer (no allocation
   * per chunk); anything else (a file, a terminal) through `process.stdin`. `destroy()` ends it.
   */
  static stdin(maxBytes: number): FrameReader {
    let pipe = false;
    try {
      const stat = fstatSync(0);
      pipe = stat.isFIFO() || stat.isSocket();
    } catch {
      // no standard input to inspect: read it as a stream
    }
    if (!pipe) return new FrameReader(maxBytes, process.stdin);
    const reader = new FrameReader(maxBytes);
    // `onread` is a Socket option since Node 12 (the types list it for connect() only).
    const onread = { buffer: Buffer.allocUnsafe(1 << 20), callback: (nread: number, buffer: Uint8Array) => reader.accept(buffer.subarray(0, nread), true) };
    const socket = new Socket({ fd: 0, readable: true, writable: false, onread } as SocketConstructorOpts);
    reader.attach(socket);
    return reader;
  }

  /** The source this reader pauses and resumes, and whose end (or error) is the end of input. */
  private attach(stream: Readable): void {
    this.source = stream;
    stream.on('end', () => this.end());
    stream.on('error', () => this.end()); // a broken input ends the session like end of input
  }

  /**
   * New input bytes (`transient`: valid only during the call, so copied when kept). Returns
   * false when the source should pause until the reader catches up.
   */
  accept(bytes: Uint8Array, transient: boolean): boolean {
    let at = 0;
    const sink = this.sink;
    if (sink !== undefined) {
      at = Math.min(bytes.length, sink.out.length - sink.filled);
      sink.out.set(bytes.subarray(0, at), sink.filled);
      sink.filled += at;
    }
    if (at < bytes.length) {
      const rest = bytes.subarray(at);
      this.chunks.push(transient ? Buffer.from(rest) : Buffer.from(rest.buffer, rest.byteOffset, rest.length));
    }
    this.notify();
    const room = this.chunks.length <= MAX_QUEUED;
    if (!room) this.throttled = true;
    return room;
  }

  /** The next line, or undefined at end of input or after `stop()` (a last unterminated line comes first). */
  async nextLine(): Promise<LineEvent | undefined> {
    const parts: Buffer[] = [];
    let size = 0, skipping = false;
    for (;;) {
      const chunk = await this.take();
      if (chunk === undefined) {
        if (this.stopped) return undefined;
        if (size === 0 && !skipping) return undefined;
        return skipping ? { kind: 'oversized', bytes: size } : { kind: 'line', text: decodeLine(parts, size) };
      }
      const nl = chunk.indexOf(10);
      const piece = nl < 0 ? chunk : chunk.subarray(0, nl);
      if (nl >= 0 && nl + 1 < chunk.length) this.pending = chunk.subarray(nl + 1);
      size += piece.length;
      if (!skipping && size > this.maxBytes) { skipping = true; parts.length = 0; }
      if (!skipping && piece.length > 0) parts.push(piece);
      if (nl >= 0) return skipping ? { kind: 'oversized', bytes: size } : { kind: 'line', text: decodeLine(parts, size) };
    }
  }

  /**
   * Exactly `n` bytes, in `out` (default: a fresh buffer, aligned so typed arrays can view it),
   * or fewer when the input ends first (a truncated payload) or `stop()` was called.
   */
  async readBytes(n: number, out: Uint8Array = new Uint8Array(n)): Promise<Uint8Array> {
    const target = out.subarray(0, n);
    let filled = 0;
    // Bytes already queued first, then the rest straight from the source into `target`.
    while (filled < n) {
      const chunk = this.takeQueued();
      if (chunk === undefined) break;
      const used = Math.min(chunk.length, n - filled);
      target.set(chunk.subarray(0, used), filled);
      filled += used;
      if (used < chunk.length) this.pending = chunk.subarray(used);
    }
    if (filled < n) {
      const sink = (this.sink = { out: target, filled });
      try {
        while (sink.filled < n && !this.stopped && !this.ended) {
          this.resumeIfRoom();
          await new Promise<void>((resolve) => { this.wake = resolve; });
        }
      } finally {
        this.sink = undefined;
      }
      filled = sink.filled;
    }
    return filled === n ? target : target.subarray(0, filled);
  }

  /** Reads and drops `n` bytes as they stream in (a payload refused unread); returns how many arrived before the input ended. */
  async skipBytes(n: number): Promise<number> {
    let skipped = 0;
    while (skipped < n) {
      const chunk = await this.take();
      if (chunk === undefined) return skipped;
      const used = Math.min(chunk.length, n - skipped);
      skipped += used;
      if (used < chunk.length) this.pending = chunk.subarray(used);
    }
    return skipped;
  }

  /** Ends reading now: a wait in `nextLine()` or `readBytes()` returns as at end of input. */
  stop(): void {
    this.stopped = true;
    this.source?.pause();
    this.notify();
  }

  /** Stops reading and closes the source (lets the process exit). */
  destroy(): void {
    this.stop();
    this.source?.destroy();
  }

  /** A queued chunk, without waiting. */
  private takeQueued(): Buffer | undefined {
    if (this.pending !== undefined) {
      const p = this.pending;
      this.pending = undefined;
      return p;
    }
    return this.chunks.shift();
  }

  private resumeIfRoom(): void {
    if (this.source === undefined || this.chunks.length > MAX_QUEUED || this.ended || this.stopped) return;
    if (this.throttled || this.source.isPaused()) {
      this.throttled = false;
      this.source.resume();
    }
  }

  private async take(): Promise<Buffer | undefined> {
    for (;;) {
      if (this.stopped) return undefined;
      const next = this.takeQueued();
      if (next !== undefined) {
        this.resumeIfRoom();
        return next;
      }
      if (this.ended) return undefined;
      this.resumeIfRoom();
      await new Promise<void>((resolve) => { this.wake = resolve; });
    }
  }

  private end(): void {
    this.ended = true;
    this.notify();
  }

  private notify(): void {
    const wake = this.wake;
    this.wake = undefined;
    wake?.();
  }
}

function decodeLine(parts: Buffer[], size: number): string {
  const line = (parts.length === 1 ? parts[0] : Buffer.concat(parts, size)).toString('utf8');
  return line.endsWith('\r') ? line.slice(0, -1) : line;
}
