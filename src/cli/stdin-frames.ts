/**
 * Reads the service's input as lines and, when a request announces a binary payload, as exactly
 * that many raw bytes (then lines again). readline cannot switch modes, so this splits the byte
 * stream itself. Lines are decoded as UTF-8 once whole; a trailing CR is dropped (CRLF input).
 */
export class StdinFrames {
  private readonly chunks: AsyncIterator<Buffer>;
  private pending: Buffer | undefined; // unread bytes of the last chunk
  private ended = false;

  constructor(input: AsyncIterable<Buffer | string>) {
    const it = input[Symbol.asyncIterator]();
    this.chunks = {
      next: async () => {
        const r = await it.next();
        return r.done ? r : { done: false, value: typeof r.value === 'string' ? Buffer.from(r.value) : r.value };
      },
    };
  }

  /** The next line without its newline, or undefined at end of input (a last unterminated line is returned first). */
  async nextLine(): Promise<string | undefined> {
    const parts: Buffer[] = [];
    for (;;) {
      const chunk = await this.take();
      if (chunk === undefined) {
        if (parts.length === 0) return undefined;
        return decodeLine(parts);
      }
      const nl = chunk.indexOf(10);
      if (nl < 0) { parts.push(chunk); continue; }
      parts.push(chunk.subarray(0, nl));
      if (nl + 1 < chunk.length) this.pending = chunk.subarray(nl + 1);
      return decodeLine(parts);
    }
  }

  /**
   * Exactly `n` bytes in a fresh buffer (aligned, so typed arrays can view it), or fewer when the
   * input ends first (a truncated payload).
   */
  async readBytes(n: number): Promise<Uint8Array> {
    const out = new Uint8Array(n);
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

  private async take(): Promise<Buffer | undefined> {
    if (this.pending !== undefined) {
      const p = this.pending;
      this.pending = undefined;
      return p;
    }
    if (this.ended) return undefined;
    const r = await this.chunks.next();
    if (r.done) { this.ended = true; return undefined; }
    return r.value;
  }
}

function decodeLine(parts: Buffer[]): string {
  const line = (parts.length === 1 ? parts[0] : Buffer.concat(parts)).toString('utf8');
  return line.endsWith('\r') ? line.slice(0, -1) : line;
}
