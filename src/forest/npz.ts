import { Unzip, UnzipInflate, zipSync } from 'fflate';
import { ForestError } from './errors.js';
import type { NdArray } from './columnar.js';
import { decodeNpy, encodeNpy } from './npy.js';

/**
 * numpy's `.npz` (what `numpy.savez` / `numpy.savez_compressed` write): a zip archive with one
 * `.npy` per array, named `<array>.npy`. The zip container and inflate are fflate's; the archive
 * is fed to it in chunks, so the file is never held whole next to its arrays: each entry is
 * assembled once into its own buffer (aligned, so numeric arrays are views over it).
 */
export function decodeNpz(chunks: Iterable<Uint8Array>, source: string): Map<string, NdArray> {
  const entries: Entry[] = [];
  let failure: Error | undefined;
  const unzip = new Unzip((file) => {
    if (failure) return;
    if (!file.name.endsWith('.npy')) {
      failure = new ForestError({ field: file.name }, `${source}: an .npz holds only .npy arrays, found ${JSON.stringify(file.name)}`);
      return;
    }
    const size = file.originalSize;
    // With the size known (the usual case) the entry is copied straight into its final buffer.
    const entry: Entry = { name: file.name.slice(0, -4), parts: [], buffer: size !== undefined && size < 2 ** 32 - 1 ? new Uint8Array(size) : undefined, filled: 0, done: false };
    entries.push(entry);
    file.ondata = (err, data, final) => {
      if (err) { failure ??= new ForestError({ field: entry.name }, `${source}: cannot decompress: ${err.message}`); return; }
      if (data.length > 0) {
        if (entry.buffer !== undefined && entry.filled + data.length <= entry.buffer.length) entry.buffer.set(data, entry.filled);
        else { if (entry.buffer !== undefined) entry.parts.push(entry.buffer.subarray(0, entry.filled)); entry.buffer = undefined; entry.parts.push(data.slice()); }
        entry.filled += data.length;
      }
      if (final) entry.done = true;
    };
    file.start();
  });
  unzip.register(UnzipInflate);
  try {
    let any = false;
    for (const chunk of chunks) { unzip.push(chunk, false); any = true; }
    unzip.push(new Uint8Array(0), true);
    if (!any) throw new ForestError({}, `${source}: the file is empty`);
  } catch (err) {
    if (err instanceof ForestError) throw err;
    throw new ForestError({}, `${source}: not a valid .npz (zip) archive: ${(err as Error).message}`);
  }
  if (failure) throw failure;
  if (entries.length === 0) throw new ForestError({}, `${source}: not a valid .npz archive (no arrays found)`);
  const arrays = new Map<string, NdArray>();
  for (const e of entries) {
    if (!e.done) throw new ForestError({ field: e.name }, `${source}: the archive is truncated inside this array`);
    if (arrays.has(e.name)) throw new ForestError({ field: e.name }, `${source}: the archive holds this array twice`);
    const bytes = e.buffer !== undefined ? e.buffer.subarray(0, e.filled) : joined(e.parts);
    e.parts.length = 0;
    e.buffer = undefined;
    arrays.set(e.name, decodeNpy(bytes, e.name));
  }
  return arrays;
}

interface Entry { name: string; parts: Uint8Array[]; buffer: Uint8Array | undefined; filled: number; done: boolean }

/** One buffer of all parts (no copy when there is one part). */
function joined(parts: Uint8Array[]): Uint8Array {
  if (parts.length === 1) return parts[0];
  let n = 0;
  for (const p of parts) n += p.length;
  const out = new Uint8Array(n);
  let at = 0;
  for (const p of parts) { out.set(p, at); at += p.length; }
  return out;
}

/** An `.npz` archive of the arrays, stored uncompressed (as `numpy.savez` writes). */
export function encodeNpz(arrays: ReadonlyMap<string, NdArray>, compress = false): Uint8Array {
  const files: Record<string, [Uint8Array, { level: 0 | 6 }]> = {};
  for (const [name, array] of arrays) files[`${name}.npy`] = [concat(encodeNpy(array)), { level: compress ? 6 : 0 }];
  return zipSync(files);
}

function concat(parts: Uint8Array[]): Uint8Array {
  return joined(parts);
}
