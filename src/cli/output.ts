import { renameSync, rmSync, writeFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';

/** Writes to stdout, or to `path` through a temporary file and a rename, so a failure never leaves a partial file. */
export function writeResult(text: string, path?: string): void {
  if (path === undefined || path === '-') {
    process.stdout.write(text);
    return;
  }
  const tmp = join(dirname(path), `.${basename(path)}.${process.pid}.tmp`);
  try {
    writeFileSync(tmp, text);
    renameSync(tmp, path);
  } catch (err) {
    rmSync(tmp, { force: true });
    throw err;
  }
}
