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
    const size = fstatSync(fd).size;
    const read = (target: Uint8Array, offset: number) => {
      let done = 0;
      while (done < target.length) {
        const n = readSync(fd, target, done, target.length - done, offset + done);
        if (n === 0) throw new ForestError({}, `${path}: the file ended at byte ${offset + done} while reading it (it is being changed?)`);
        done += n;
      }
      return target;
    };
    return use({
      size,
      view: (offset, length) => read(new Uint8Array(length), offset),
      aligned: (offset, length) => read(sharedArray(Uint8Array, length), offset),
    });
  } finally {
    closeSync(fd);
  }
}

/** A whole file in one buffer over shared memory (Arrow files are read in place: their buffers are aligned within the file). */
export function readFileShared(path: string): Uint8Array {
  return withFileSource(path, (source) => source.aligned(0, source.size, 8));
}
