import type { Readable } from 'node:stream';

/** One input line, or the size of a line that was longer than the limit (its bytes were dropped). */
export type LineEvent = { kind: 'line'; text: string } | { kind: 'oversized'; bytes: number };

/**
 * The service's input: newline-terminated lines, never holding more than `maxBytes` of one line
 * (a longer line is dropped as it streams in, up to its newline, and reported as `oversized`
 * with its length, so one huge line cannot exhaust memory or hit V8's string limit — readline
 * would buffer it whole), and, when a request announces a binary payload, exactly that many raw
 * bytes (then lines again). Reading is pull-based: nothing is split ahead of the request that
 * decides whether the next bytes are a line or a payload. Lines are UTF-8; a trailing CR is
 * dropped (CRLF input).
 */
export class FrameReader {
  private pending: Buffer | undefined; // unread bytes of the last chunk
  private readonly chunks: Buffer[] = [];
  private ended = false;
  private stopped = false;
  private wake: (() => void) | undefined;

  constructor(private readonly stream: Readable, private readonly maxBytes: number) {
    stream.on('data', (chunk: Buffer | string) => {
      this.chunks.push(typeof chunk === 'string' ? Buffer.from(chunk) : chunk);
      // Hold at most a few chunks ahead of the reader: back-pressure instead of buffering input.
      if (this.chunks.length > 4) stream.pause();
      this.notify();
    });
    stream.on('end', () => this.end());
    stream.on('error', () => this.end()); // a broken input ends the session like end of input
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
   * Exactly `n` bytes in a fresh buffer (aligned, so typed arrays can view it), or fewer when the
   * input ends first (a truncated payload) or `stop()` was called.
   */
  async readBytes(n: number, out: Uint8Array = new Uint8Array(n)): Promise<Uint8Array> {
    let filled = 0;
    while (filled < n) {
      const chunk = await this.take();
      if (chunk === undefined) return out.subarray(0, filled);
      const used = Math.min(chunk.length, n - filled);
      out.set(chunk.subarray(0, used), filled);
      filled += used;
      if (used < chunk.length) this.pending = chunk.subarray(used);
    }
    return out;
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
    this.stream.pause();
    this.notify();
  }

  private async take(): Promise<Buffer | undefined> {
    for (;;) {
      if (this.stopped) return undefined;
      if (this.pending !== undefined) {
        const p = this.pending;
        this.pending = undefined;
        return p;
      }
      const next = this.chunks.shift();
      if (next !== undefined) {
        if (this.chunks.length <= 4 && this.stream.isPaused() && !this.ended) this.stream.resume();
        return next;
      }
      if (this.ended) return undefined;
      if (this.stream.isPaused()) this.stream.resume();
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
