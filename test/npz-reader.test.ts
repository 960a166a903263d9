// The .npz reader's zip variants: what numpy writes to a pipe (data descriptors), zip64 end
// records (archives past 4 GiB or 65535 entries), and the CRC-32 used when Node has no zlib.crc32.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { crc32 as zlibCrc32 } from 'node:zlib';
import { afterAll, describe, expect, it } from 'vitest';
import { ndArraysOfForest, packNdArrays } from '../src/forest/columnar.js';
import { crc32, tableCrc32 } from '../src/forest/crc32.js';
import { loadForestFile } from '../src/forest/load.js';
import { decodeNpz, encodeNpz } from '../src/forest/npz.js';
import { generateForest } from '../src/synth/generate.js';
import { PYTHON } from './python.js';

const dir = mkdtempSync(join(tmpdir(), 'trace-alloc-npz-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const forest = generateForest({ trees: 4, dim: 3, seed: 5, minNodes: 2, maxNodes: 6 });
const same = (a: ReturnType<typeof packNdArrays>) => {
  expect(a.treeIds).toEqual(forest.treeIds);
  expect(Array.from(a.embedding)).toEqual(Array.from(forest.embedding));
  expect(Array.from(a.reward)).toEqual(Array.from(forest.reward));
};

describe('the .npz reader', () => {
  it('reads entries followed by data descriptors (numpy writing to a pipe), stored and deflated', () => {
    const source = join(dir, 'source.npz');
    writeFileSync(source, encodeNpz(ndArraysOfForest(forest)));
    for (const save of ['savez', 'savez_compressed']) {
      const out = join(dir, `${save}-piped.npz`);
      // numpy writes into an unseekable stream, so zipfile puts sizes and CRC after each entry's data.
      const run = spawnSync('sh', ['-c', `"$0" -c 'import numpy as np, sys; a = dict(np.load(sys.argv[1])); np.${save}(sys.stdout.buffer, **a)' ${source} | cat > ${out}`, PYTHON], { encoding: 'utf8' });
      expect(run.status, run.stderr).toBe(0);
      const bytes = readFileSync(out);
      expect(bytes.readUInt16LE(6) & 8, 'the archive uses data descriptors').toBe(8);
      same(loadForestFile(out));
      same(packNdArrays(decodeNpz(new Uint8Array(bytes), out), out));
    }
  });

  it('reads zip64 end records, and refuses an end record that defers to a missing one', () => {
    const zip = Buffer.from(encodeNpz(ndArraysOfForest(forest)));
    const end = zip.length - 22;
    const count = zip.readUInt16LE(end + 10), size = zip.readUInt32LE(end + 12), offset = zip.readUInt32LE(end + 16);
    const record = Buffer.alloc(56);
    record.writeUInt32LE(0x06064b50, 0); record.writeBigUInt64LE(44n, 4); record.writeUInt16LE(45, 12); record.writeUInt16LE(45, 14);
    record.writeBigUInt64LE(BigInt(count), 24); record.writeBigUInt64LE(BigInt(count), 32);
    record.writeBigUInt64LE(BigInt(size), 40); record.writeBigUInt64LE(BigInt(offset), 48);
    const locator = Buffer.alloc(20);
    locator.writeUInt32LE(0x07064b50, 0); locator.writeBigUInt64LE(BigInt(end), 8); locator.writeUInt32LE(1, 16);
    const eocd = Buffer.from(zip.subarray(end));
    eocd.writeUInt16LE(0xffff, 8); eocd.writeUInt16LE(0xffff, 10); eocd.writeUInt32LE(0xffffffff, 12); eocd.writeUInt32LE(0xffffffff, 16);
    const zip64 = Buffer.concat([zip.subarray(0, end), record, locator, eocd]);
    same(packNdArrays(decodeNpz(new Uint8Array(zip64), 'z64'), 'z64'));
    const orphan = Buffer.concat([zip.subarray(0, end), eocd]);
    expect(() => decodeNpz(new Uint8Array(orphan), 'orphan')).toThrow('defers to a zip64 record that is not there');
  });

  it('computes CRC-32 without zlib exactly as zlib does', () => {
    let seed = 1;
    const data = new Uint8Array(100_003).map(() => (seed = (seed * 1103515245 + 12345) >>> 0) >>> 24);
    for (const [a, b] of [[0, 0], [0, 1], [5, 9000], [9000, data.length]] as const) {
      const part = data.subarray(a, b);
      expect(tableCrc32(part)).toBe(zlibCrc32(part) >>> 0);
      expect(tableCrc32(part, 0xdeadbeef)).toBe(zlibCrc32(part, 0xdeadbeef) >>> 0);
    }
    // Continuing a CRC over two parts equals the CRC of the whole, and an empty part changes nothing.
    expect(crc32(data.subarray(500), crc32(data.subarray(0, 500)))).toBe(crc32(data));
    expect(crc32(new Uint8Array(new SharedArrayBuffer(0)), 1234)).toBe(1234);
  });
});

