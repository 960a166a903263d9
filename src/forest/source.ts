import { closeSync, fstatSync, openSync, readSync } from 'node:fs';
import { sharedArray } from '../util/shared.js';
import { ForestError } from './errors.js';

/**
 * Random access to an input's bytes, for readers that look at a container's directory before
 * its data (`.npz`): bytes already in memory (standard input, a service payload), or a file
 * read with positional reads, so that each array lands once, aligned, in its own buffer and the
 * file is never held whole next to its arrays.
 */
export interface ByteSource {
  readonly size: number;
  /** `length` bytes at `offset`: a view of bytes in memory, or a fresh buffer read from the file. */
  view(offset: number, length: number): Uint8Array;
  /**
   * `length` bytes at `offset` starting at a multiple of `width` in memory (typed arrays of that
   * width can view them): a view when they already do, else a copy (or, for movable memory, the
   * same bytes moved down in place); from a file, read straight into a fresh buffer. Fresh
   * buffers are shared memory, so CPU scoring threads read them in place.
   */
  aligned(offset: number, length: number, width: number): Uint8Array;
}

/**
 * Bytes in memory. `movable`: the caller hands them over, so a misaligned range is moved down
 * in place, over the (at most `width` − 1) bytes before it, instead of copied into fresh memory
 * — the .npz reader's ranges are array data, and the bytes before them their own `.npy` header,
 * already read. The service's payload buffer is reused batch after batch, and moving within it
 * costs a memmove where a copy would first touch as many fresh pages.
 */
export function memorySource(bytes: Uint8Array, { movable = false } = {}): ByteSource {
  return {
    size: bytes.length,
    view: (offset, length) => bytes.subarray(offset, offset + length),
    aligned: (offset, length, width) => {
      const view = bytes.subarray(offset, offset + length);
      const shift = view.byteOffset % width;
      if (shift === 0) return view;
      if (movable && offset >= shift) {
        bytes.copyWithin(offset - shift, offset, offset + length);
        return bytes.subarray(offset - shift, offset - shift + length);
      }
      const copy = sharedArray(Uint8Array, length);
      copy.set(view);
      return copy;
    },
  };
}

/** A file opened for positional reads, passed to `use` and closed afterwards. */
export function withFileSource<T>(path: string, use: (source: ByteSource) => T): T {
  let fd: number;
  try {
    fd = openSync(path, 'r');
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    throw new ForestError({}, `cannot read ${path}: ${e.code ?? e.message}`);
  }
  try {
    return use(fileSource(fd, fstatSync(fd).size, path));
  } finally {
    closeSync(fd);
  }
}

/** Positional reads of the first `size` bytes of an open regular file (`name` for errors). */
export function fileSource(fd: number, size: number, name: string): ByteSource {
  const read = (target: Uint8Array, offset: number) => {
    let done = 0;
    while (done < target.length) {
      const n = readSync(fd, target, done, target.length - done, offset + done);
      if (n === 0) throw new ForestError({}, `${name}: the file ended at byte ${offset + done} while reading it (it is being changed?)`);
      done += n;
    }
    return target;
  };
  return {
    size,
    view: (offset, length) => read(new Uint8Array(length), offset),
    aligned: (offset, length) => read(sharedArray(Uint8Array, length), offset),
  };
}

/** A whole file in one buffer over shared memory (Arrow files are read in place: their buffers are aligned within the file). */
export function readFileShared(path: string): Uint8Array {
  return withFileSource(path, (source) => source.aligned(0, source.size, 8));
}

/** How long a read of a pipe whose writer has nothing yet (EAGAIN) waits before it tries again. */
const RETRY_MS = 2;
const sleeper = new Int32Array(new SharedArrayBuffer(4));

/**
 * Every byte of a stream that is not a regular file — standard input, a named pipe, a
 * character device such as /dev/zero — read in chunks until its end, refused (a `ForestError`
 * naming `flag`) as soon as it holds more than `maxBytes`: its size is not known beforehand,
 * and a stream without end must not fill the memory.
 */
export function readStreamCapped(fd: number, maxBytes: number, name: string, flag: string): Uint8Array {
  const chunks: Buffer[] = [];
  let total = 0;
  for (;;) {
    const chunk = Buffer.allocUnsafe(Math.min(1 << 20, maxBytes - total + 1));
    let n: number;
    try {
      n = readSync(fd, chunk, 0, chunk.length, null);
    } catch (err) {
      const e = err as NodeJS.ErrnoException;
      if (e.code === 'EAGAIN') { Atomics.wait(sleeper, 0, 0, RETRY_MS); continue; }
      if (e.code === 'EOF') break;
      throw new ForestError({}, `cannot read ${name}: ${e.code ?? e.message}`);
    }
    if (n === 0) break;
    total += n;
    if (total > maxBytes) throw new ForestError({}, `${name} holds more than ${maxBytes} bytes, the most ${flag} allows; raise it to read more`);
    chunks.push(n === chunk.length ? chunk : chunk.subarray(0, n));
  }
  return Buffer.concat(chunks, total);
}
