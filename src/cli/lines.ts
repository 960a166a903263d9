import type { Readable } from 'node:stream';

/** One input line, or the size of a line that was longer than the limit (its bytes were dropped). */
export type LineEvent = { kind: 'line'; text: string } | { kind: 'oversized'; bytes: number };

/**
 * Splits a byte stream into newline-terminated lines without ever holding more than
 * `maxBytes` of one line: a longer line is dropped as it streams in, up to its newline, and
 * reported as `oversized` with its length, so one huge line cannot exhaust memory or hit
 * V8's string limit (readline would buffer it whole). The stream is paused while the lines
 * already read but not yet taken hold more than `maxBytes`.
 */
export class BoundedLineReader {
  private parts: Buffer[] = [];
  private size = 0;
  private skipping = false;
  private readonly queue: LineEvent[] = [];
  private queuedBytes = 0;
  private ended = false;
  private stopped = false;
  private wake: (() => void) | undefined;

  constructor(private readonly stream: Readable, private readonly maxBytes: number) {
    stream.on('data', (chunk: Buffer) => this.take(chunk));
    stream.on('end', () => this.end());
    stream.on('error', () => this.end()); // a broken input ends the session like end of input
  }

  /** The next line, or undefined at end of input or after `stop()`. */
  async next(): Promise<LineEvent | undefined> {
    for (;;) {
      if (this.stopped) return undefined;
      const event = this.queue.shift();
      if (event !== undefined) {
        this.queuedBytes -= event.kind === 'line' ? event.text.length : 0;
        if (this.queuedBytes <= this.maxBytes && this.stream.isPaused()) this.stream.resume();
        return event;
      }
      if (this.ended) return undefined;
      await new Promise<void>((resolve) => { this.wake = resolve; });
    }
  }

  /** Ends `next()` now (lines not yet taken are dropped) and stops reading. */
  stop(): void {
    this.stopped = true;
    this.stream.pause();
    this.notify();
  }

  private take(chunk: Buffer): void {
    let start = 0;
    while (start < chunk.length) {
      const newline = chunk.indexOf(10, start);
      this.append(chunk.subarray(start, newline < 0 ? chunk.length : newline));
      if (newline < 0) break;
      this.finishLine();
      start = newline + 1;
    }
    if (this.queuedBytes > this.maxBytes) this.stream.pause();
    this.notify();
  }

  private append(piece: Buffer): void {
    if (piece.length === 0) return;
    this.size += piece.length;
    if (this.skipping) return;
    if (this.size > this.maxBytes) {
      this.skipping = true;
      this.parts = [];
      return;
    }
    this.parts.push(piece);
  }

  private finishLine(): void {
    if (this.skipping) {
      this.queue.push({ kind: 'oversized', bytes: this.size });
    } else {
      let text = Buffer.concat(this.parts, this.size).toString('utf8');
      if (text.endsWith('\r')) text = text.slice(0, -1);
      this.queue.push({ kind: 'line', text });
      this.queuedBytes += text.length;
    }
    this.parts = [];
    this.size = 0;
    this.skipping = false;
  }

  private end(): void {
    if (this.ended) return;
    if (this.size > 0 || this.skipping) this.finishLine(); // a last line without a newline
    this.ended = true;
    this.notify();
  }

  private notify(): void {
    const wake = this.wake;
    this.wake = undefined;
    wake?.();
  }
}
