// Fuzzing the binary readers (.npz and Arrow IPC): random truncations, bit flips and length
// patches of valid files. Every input either scores exactly like the original or is refused as
// bad input (exit 2) — never a different plan, never an internal error (exit 1), never a hang.
//
// What "exactly like the original" can mean differs by container:
// - .npz: every byte counts. Each entry's data is covered by its CRC-32, and the zip's headers
//   are cross-checked (local against central directory, entries tiling the file), so a flip or
//   patch anywhere either lands in a field nothing reads (a timestamp) or is refused.
// - Arrow IPC has no checksum: a flipped bit inside a value buffer is a different, valid forest,
//   and no reader can tell. Flips and patches therefore hit only the structure — message
//   prefixes, flatbuffer metadata, the file's footer and magic — which must be consistent or
//   refused; truncations hit anywhere. README ("File formats") states this limit.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { allocate } from '../src/allocate/allocate.js';
import { planToJson } from '../src/allocate/plan.js';
import { exitCodeFor } from '../src/cli/exit-code.js';
import { decodeArrow } from '../src/forest/arrow.js';
import { encodeArrow } from '../src/forest/arrow-write.js';
import { ndArraysOfForest, packNdArrays } from '../src/forest/columnar.js';
import { checkGroupSizes, DEFAULT_MAX_GROUP_SIZE } from '../src/forest/limits.js';
import { loadForestFile } from '../src/forest/load.js';
import { decodeNpz, encodeNpz } from '../src/forest/npz.js';
import type { PackedForest } from '../src/forest/packed.js';
import { scoreCpu } from '../src/score/cpu.js';
import { generateForest } from '../src/synth/generate.js';
import { CLI } from './cli-helpers.js';
import { PYTHON } from './python.js';

const dir = mkdtempSync(join(tmpdir(), 'trace-alloc-fuzz-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const SEED = 20261201;
/** A case that takes this long is a hang (honest ones take milliseconds); a guard, not a speed test. */
const CASE_LIMIT_MS = 10_000;

type Format = 'npz' | 'arrow';
interface Sample { name: string; format: Format; bytes: Uint8Array; plan: string; structure: [number, number][] }

/** Score, allocate and plan as `trace-alloc score` does. */
function planOf(forest: PackedForest): string {
  checkGroupSizes(forest, DEFAULT_MAX_GROUP_SIZE);
  const scores = scoreCpu(forest, { alpha: 1, tau: 0.5 });
  return JSON.stringify(planToJson(forest, scores, allocate(forest, scores, { budget: 16 }), { includeScores: true }));
}

function decode(format: Format, bytes: Uint8Array): PackedForest {
  return packNdArrays(format === 'npz' ? decodeNpz(bytes, 'fuzz') : decodeArrow(bytes, 'fuzz'), 'fuzz');
}

/** What the CLI would do with these bytes: 'same' plan, 'refused' (exit 2), or a failure description. */
function outcome(sample: Sample, bytes: Uint8Array, viaFile: boolean): string {
  const started = performance.now();
  let result: string;
  try {
    let forest: PackedForest;
    if (viaFile) {
      const path = join(dir, `case.${sample.format === 'npz' ? 'npz' : 'arrow'}`);
      writeFileSync(path, bytes);
      forest = loadForestFile(path);
    } else {
      forest = decode(sample.format, bytes);
    }
    result = planOf(forest) === sample.plan ? 'same' : 'a different plan with exit 0';
  } catch (err) {
    result = exitCodeFor(err) === 2 ? 'refused' : `exit 1: ${(err as Error).stack}`;
  }
  const ms = performance.now() - started;
  return ms > CASE_LIMIT_MS ? `took ${ms.toFixed(0)} ms` : result;
}

/** Byte ranges of a zip that are headers (local headers, central directory, end records): everything but entry data. */
function zipStructure(zip: Uint8Array): [number, number][] {
  const v = new DataView(zip.buffer, zip.byteOffset, zip.byteLength);
  const out: [number, number][] = [];
  let at = 0;
  while (v.getUint32(at, true) === 0x04034b50) {
    const n = v.getUint16(at + 26, true), x = v.getUint16(at + 28, true);
    let size = v.getUint32(at + 18, true);
    if (size === 0xffffffff) size = Number(v.getBigUint64(at + 30 + n + 12, true)); // zip64 extra: size, then compressed size
    out.push([at, at + 30 + n + x]);
    at += 30 + n + x + size;
  }
  out.push([at, zip.length]);
  return out;
}

/** Byte ranges of an Arrow IPC stream or file that are structure: magic, message prefixes and metadata, the footer. */
function arrowStructure(bytes: Uint8Array): [number, number][] {
  const v = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const isFile = bytes[0] === 0x41;
  const out: [number, number][] = [];
  let at = isFile ? 8 : 0;
  if (isFile) out.push([0, 8]);
  for (;;) {
    const length = v.getInt32(at + 4, true);
    out.push([at, at + 8 + length]);
    if (length === 0) { at += 8; break; }
    at += 8 + length + bodyLengthOf(bytes.subarray(at + 8, at + 8 + length));
  }
  if (isFile) out.push([at, bytes.length]);
  return out;
}

/** A message's body length from its flatbuffer metadata (Message.bodyLength, slot 3). */
function bodyLengthOf(meta: Uint8Array): number {
  const v = new DataView(meta.buffer, meta.byteOffset, meta.byteLength);
  const table = v.getUint32(0, true);
  const vtable = table - v.getInt32(table, true);
  const slot = 4 + 2 * 3;
  if (slot + 2 > v.getUint16(vtable, true)) return 0;
  const offset = v.getUint16(vtable + slot, true);
  return offset === 0 ? 0 : Number(v.getBigInt64(table + offset, true));
}

function samples(): Sample[] {
  const forest = generateForest({ trees: 5, dim: 3, seed: 7, minNodes: 2, maxNodes: 9 });
  const plan = planOf(forest);
  const npzStored = encodeNpz(ndArraysOfForest(forest));
  const npzDeflated = encodeNpz(ndArraysOfForest(forest), true);
  // numpy's own writer: zip64 local headers, another entry order.
  writeFileSync(join(dir, 'base.npz'), npzStored);
  const numpy = spawnSync(PYTHON, ['-c', `
import numpy as np, sys
a = dict(np.load(sys.argv[1]))
np.savez(sys.argv[2], **a)
np.savez_compressed(sys.argv[3], **a)
`, join(dir, 'base.npz'), join(dir, 'numpy.npz'), join(dir, 'numpy-z.npz')], { encoding: 'utf8' });
  expect(numpy.status, `${PYTHON} with numpy is needed: ${numpy.stderr}`).toBe(0);
  const read = (name: string) => new Uint8Array(readFileSync(join(dir, name)));
  const out: Sample[] = [];
  for (const [name, bytes] of [['fflate stored', npzStored], ['fflate deflated', npzDeflated], ['numpy.savez', read('numpy.npz')], ['numpy.savez_compressed', read('numpy-z.npz')]] as const) {
    out.push({ name, format: 'npz', bytes, plan, structure: [[0, bytes.length]] });
    expect(zipStructure(bytes).length).toBeGreaterThan(1);
  }
  for (const kind of ['stream', 'file'] as const) {
    const bytes = encodeArrow(forest, kind);
    out.push({ name: `arrow ${kind}`, format: 'arrow', bytes, plan, structure: arrowStructure(bytes) });
  }
  for (const s of out) expect(outcome(s, s.bytes, false), s.name).toBe('same');
  return out;
}

/** A position inside one of the ranges, chosen by a uniform number in [0, 1). */
function positionIn(ranges: [number, number][], u: number): number {
  const total = ranges.reduce((n, [a, b]) => n + (b - a), 0);
  let k = Math.floor(u * total);
  for (const [a, b] of ranges) {
    if (k < b - a) return a + k;
    k -= b - a;
  }
  return ranges.at(-1)![1] - 1;
}

/** A uniform number in [0, 1): positions spread over the whole file (fast-check's default bias favours the ends). */
const unit = fc.noBias(fc.integer({ min: 0, max: 2 ** 30 - 1 })).map((k) => k / 2 ** 30);
const patchValue = fc.oneof(
  fc.constantFrom(0, 1, 7, 8, 0x7fffffff, 0xffffffff, 2 ** 32 + 8, 2 ** 40, 2 ** 53 - 1),
  fc.integer({ min: -64, max: 64 }),
  fc.nat(),
);

describe('fuzzing the binary readers', () => {
  const all = samples();

  it.each(all.map((s) => [s.name, s] as const))('%s: truncated anywhere, always refused', (_, sample) => {
    fc.assert(fc.property(fc.noBias(fc.integer({ min: 0, max: sample.bytes.length - 1 })), fc.boolean(), (cut, viaFile) => {
      expect(outcome(sample, sample.bytes.slice(0, cut), viaFile), `cut at ${cut}`).toBe('refused');
    }), { seed: SEED, numRuns: 150 });
  });

  it.each(all.map((s) => [s.name, s] as const))('%s: bit flips either score the same or are refused', (_, sample) => {
    const region = sample.format === 'npz' ? [[0, sample.bytes.length] as [number, number]] : sample.structure;
    fc.assert(fc.property(fc.array(fc.tuple(unit, fc.integer({ min: 0, max: 7 })), { minLength: 1, maxLength: 3 }), fc.boolean(), (flips, viaFile) => {
      const bytes = sample.bytes.slice();
      for (const [u, bit] of flips) bytes[positionIn(region, u)] ^= 1 << bit;
      expect(['same', 'refused'], `flips ${JSON.stringify(flips.map(([u, b]) => [positionIn(region, u), b]))}`).toContain(outcome(sample, bytes, viaFile));
    }), { seed: SEED, numRuns: 300 });
  });

  it.each(all.map((s) => [s.name, s] as const))('%s: length patches in the headers either score the same or are refused', (_, sample) => {
    const region = sample.format === 'npz' ? zipStructure(sample.bytes) : sample.structure;
    fc.assert(fc.property(unit, patchValue, fc.constantFrom(4, 8), fc.boolean(), (u, value, width, viaFile) => {
      const bytes = sample.bytes.slice();
      const at = Math.min(positionIn(region, u), bytes.length - width);
      const v = new DataView(bytes.buffer);
      if (width === 4) v.setUint32(at, value >>> 0, true);
      else v.setBigInt64(at, BigInt(value), true);
      expect(['same', 'refused'], `${width} bytes at ${at} := ${value}`).toContain(outcome(sample, bytes, viaFile));
    }), { seed: SEED, numRuns: 300 });
  });

  it('through the built CLI: exit 0 with the same plan, or exit 2, within the time bound', () => {
    const rng = fc.sample(fc.tuple(fc.integer({ min: 0, max: all.length - 1 }), unit, fc.integer({ min: 0, max: 7 }), fc.boolean()), { seed: SEED, numRuns: 12 });
    for (const [k, u, bit, cut] of rng) {
      const sample = all[k];
      const bytes = cut ? sample.bytes.slice(0, Math.floor(u * sample.bytes.length)) : sample.bytes.slice();
      if (!cut) bytes[positionIn(sample.format === 'npz' ? [[0, bytes.length]] : sample.structure, u)] ^= 1 << bit;
      const path = join(dir, `cli.${sample.format}`);
      writeFileSync(path, bytes);
      const r = spawnSync(process.execPath, [CLI, 'score', path, '--backend', 'cpu', '--threads', '1', '--scores'], { encoding: 'utf8', timeout: 60_000 });
      expect(r.error, `${sample.name}: the CLI ran past 60 s`).toBeUndefined();
      if (r.status === 0) expect(JSON.stringify(JSON.parse(r.stdout))).toBe(sample.plan);
      else expect(r.status, r.stderr).toBe(2);
    }
  });
});
