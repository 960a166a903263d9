import { accessSync, constants, existsSync, statSync } from 'node:fs';
import { dirname } from 'node:path';
import { OutputPathError, outputTarget, writeFileAtomic } from '../util/atomic-write.js';
import { UsageError } from './flags.js';

/**
 * Prints the library's notices on stderr, `prefix: message`, one line each (which backend
 * `auto` chose, a fallback); a notice's explanation only under `--verbose`, on a line of its own.
 */
export function noticePrinter(prefix: string, verbose: boolean): (message: string, detail?: string) => void {
  return (message, detail) => {
    process.stderr.write(`${prefix}: ${message}\n${verbose && detail !== undefined ? `${prefix}: ${detail}\n` : ''}`);
  };
}

/** The result could not be written (disk full, broken pipe…): exit 1 with one line. */
export class OutputError extends Error {
  override name = 'OutputError';
}

/**
 * Writes to stdout, or to `path`: atomically for a regular file (a failure never leaves a
 * partial file; a symlink's target is replaced through a rename in its folder), in place for a
 * character device or FIFO.
 */
export async function writeResult(text: string, path?: string): Promise<void> {
  if (path === undefined || path === '-') return writeStdout(text);
  try {
    writeFileAtomic(path, text);
  } catch (err) {
    if (err instanceof OutputPathError) throw new UsageError(`--out ${err.message}`);
    throw new OutputError(`cannot write ${path}: ${describeIoError(err)}`);
  }
}

/**
 * Resolves once `text` is handed to stdout; a write error (ENOSPC, EPIPE) becomes one
 * `OutputError`. The stream reports a failed write twice (the callback, then an 'error'
 * event), so after a failure the listener stays to absorb the second report.
 */
function writeStdout(text: string): Promise<void> {
  return new Promise((resolve, reject) => {
    let failed = false;
    const fail = (err: unknown) => {
      if (failed) return;
      failed = true;
      reject(new OutputError(`cannot write to standard output: ${describeIoError(err)}`));
    };
    process.stdout.on('error', fail);
    try {
      process.stdout.write(text, (err) => {
        if (err) { fail(err); return; }
        process.stdout.off('error', fail);
        resolve();
      });
    } catch (err) {
      fail(err);
    }
  });
}

function describeIoError(err: unknown): string {
  const e = err as NodeJS.ErrnoException;
  const what: Record<string, string> = { ENOSPC: 'no space left on the device', EPIPE: 'the reader closed the pipe', EACCES: 'permission denied', EROFS: 'read-only file system', EIO: 'input/output error' };
  return e?.code !== undefined ? `${e.code}${Object.hasOwn(what, e.code) ? ` (${what[e.code]})` : ''}` : String((err as Error)?.message ?? err);
}

/**
 * Checks, before any work, that `--out` can be written: not a folder name (a trailing
 * separator) or folder, not a block device, socket or a path in /proc or /sys, and the nearest
 * existing folder above the real target (symlinks followed) is a writable folder. Nothing is
 * created here, so a run that fails later leaves no trace; bad paths are flag errors (exit 2)
 * found before scoring.
 */
export function checkOutputPath(path: string | undefined, flag = '--out'): void {
  if (path === undefined || path === '-') return;
  let target;
  try {
    target = outputTarget(path);
  } catch (err) {
    if (err instanceof OutputPathError) throw new UsageError(`${flag} ${err.message}`);
    throw new UsageError(`${flag} ${path}: cannot write there (${describeIoError(err)})`);
  }
  const probe = target.direct ? target.path : dirname(target.path);
  let folder = probe;
  while (!existsSync(folder) && dirname(folder) !== folder) folder = dirname(folder);
  try {
    if (!target.direct && !statSync(folder).isDirectory()) throw Object.assign(new Error(`${folder} is not a folder`), { code: 'ENOTDIR' });
    accessSync(folder, constants.W_OK);
  } catch (err) {
    throw new UsageError(`${flag} ${path}: cannot write there (${describeIoError(err)})`);
  }
}
