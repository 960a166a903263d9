import { closeSync, existsSync, fsyncSync, lstatSync, mkdirSync, openSync, readlinkSync, renameSync, rmSync, statfsSync, statSync, writeFileSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';

/** Where a write to a path really goes. */
export interface OutputTarget {
  /** The path written: symlinks followed to their final target. */
  path: string;
  /**
   * true for a character device or a FIFO (`/dev/null`, `/dev/stdout`, a named pipe): written
   * in place, as a shell's `>` would, since a rename would replace the node itself.
   * false for a regular file or a new path: written through a temporary file and a rename.
   */
  direct: boolean;
}

/** A path that cannot take a file; `reason` is a short phrase for the message. */
export class OutputPathError extends Error {
  override name = 'OutputPathError';
  constructor(readonly path: string, readonly reason: string) {
    super(`${path}: ${reason}`);
  }
}

const MAX_LINKS = 40;
/** statfs types of kernel interfaces where no ordinary file can be created. */
const KERNEL_FILESYSTEMS = new Map<number, string>([[0x9fa0, '/proc'], [0x62656572, '/sys']]);

/**
 * Resolves where writing `file` would go, or throws `OutputPathError`: a path ending in a
 * separator (a folder name), a folder, a block device or socket, a path inside /proc or /sys,
 * or a symlink loop. Creates nothing.
 */
export function outputTarget(file: string): OutputTarget {
  if (/[\\/]$/.test(file)) throw new OutputPathError(file, 'ends with a path separator, so it names a folder; expected a file path');
  let path = resolve(file);
  for (let hops = 0; ; hops++) {
    let link;
    try {
      link = lstatSync(path);
    } catch {
      break; // does not exist (yet)
    }
    if (!link.isSymbolicLink()) break;
    if (hops === MAX_LINKS) throw new OutputPathError(file, 'has too many levels of symbolic links');
    path = resolve(dirname(path), readlinkSync(path));
  }
  const kernel = kernelFilesystem(path);
  if (kernel !== undefined) throw new OutputPathError(file, `is inside ${kernel}, a kernel interface where no file can be created`);
  if (!existsSync(path)) return { path, direct: false };
  const st = statSync(path);
  if (st.isFile()) return { path, direct: false };
  if (st.isCharacterDevice() || st.isFIFO()) return { path, direct: true };
  if (st.isDirectory()) throw new OutputPathError(file, 'is a folder, expected a file path');
  throw new OutputPathError(file, `is a ${st.isBlockDevice() ? 'block device' : 'socket'}, not a file to write a result to`);
}

/** "/proc" or "/sys" when the nearest existing folder of `path` is on one of them. */
function kernelFilesystem(path: string): string | undefined {
  let at = path;
  while (!existsSync(at) && dirname(at) !== at) at = dirname(at);
  try {
    const type = statfsSync(at).type;
    if (KERNEL_FILESYSTEMS.has(type)) return KERNEL_FILESYSTEMS.get(type);
  } catch {
    // statfs unavailable: fall back on the usual mount points
  }
  for (const root of ['/proc', '/sys']) if (path === root || path.startsWith(`${root}/`)) return root;
  return undefined;
}

/**
 * Writes `text` to `file` so that a failure never leaves a partial file: through a temporary
 * file in the target's folder and a rename. A symlink is followed (its target is replaced,
 * the link stays); a character device or FIFO is written in place (see `OutputTarget`).
 * Creates the folder if needed. Returns the absolute path written.
 */
export function writeFileAtomic(file: string, text: string): string {
  const target = outputTarget(file);
  if (target.direct) {
    writeFileSync(target.path, text); // opens the existing node; no rename
    return target.path;
  }
  const path = target.path;
  mkdirSync(dirname(path), { recursive: true });
  const tmp = join(dirname(path), `.${basename(path)}.${process.pid}.tmp`);
  try {
    const fd = openSync(tmp, 'w');
    try {
      writeFileSync(fd, text);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    renameSync(tmp, path);
  } catch (err) {
    rmSync(tmp, { force: true });
    throw err;
  }
  return path;
}
