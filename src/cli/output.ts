import { accessSync, constants, existsSync, statSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { writeFileAtomic } from '../util/atomic-write.js';
import { UsageError } from './flags.js';

/** Writes to stdout, or atomically to `path` (a failure never leaves a partial file). */
export function writeResult(text: string, path?: string): void {
  if (path === undefined || path === '-') process.stdout.write(text);
  else writeFileAtomic(path, text);
}

/**
 * Checks, before any work, that `--out` can be written: the nearest existing folder above it is
 * a writable folder and the path itself is not a folder. Nothing is created here, so a run that
 * fails later leaves no trace; bad paths are flag errors (exit 2) found before scoring.
 */
export function checkOutputPath(path: string | undefined): void {
  if (path === undefined || path === '-') return;
  const target = resolve(path);
  if (existsSync(target) && statSync(target).isDirectory()) throw new UsageError(`--out ${path}: is a folder, expected a file path`);
  let folder = dirname(target);
  while (!existsSync(folder) && dirname(folder) !== folder) folder = dirname(folder);
  try {
    if (!statSync(folder).isDirectory()) throw Object.assign(new Error(`${folder} is not a folder`), { code: 'ENOTDIR' });
    accessSync(folder, constants.W_OK);
  } catch (err) {
    throw new UsageError(`--out ${path}: cannot write there (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`);
  }
}
