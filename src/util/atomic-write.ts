import { mkdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';

/**
 * Writes `text` to `file` through a temporary file in the same folder and a rename, so a
 * failure never leaves a partial file; creates the folder if needed. Returns the absolute path.
 */
export function writeFileAtomic(file: string, text: string): string {
  const path = resolve(file);
  mkdirSync(dirname(path), { recursive: true });
  const tmp = join(dirname(path), `.${basename(path)}.${process.pid}.tmp`);
  try {
    writeFileSync(tmp, text);
    renameSync(tmp, path);
  } catch (err) {
    rmSync(tmp, { force: true });
    throw err;
  }
  return path;
}
