// Hostile binary input (.npz, Arrow IPC, serve's add-columns): never a hang, never a plan from
// a damaged file with exit 0, never exit 1 for bad input, never a live forest lost. Each case is
// one a probe of the binary input surface found broken; the fuzz test is binary-fuzz.test.ts.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { crc32 } from 'node:zlib';
import { Deflate, zipSync } from 'fflate';
import { Table, tableToIPC } from 'apache-arrow';
import { afterAll, describe, expect, it } from 'vitest';
import { encodeArrow, forestToArrowTable } from '../src/forest/arrow-write.js';
import { ndArraysOfForest, type NdArray } from '../src/forest/columnar.js';
import { encodeNpy } from '../src/forest/npy.js';
import { encodeNpz } from '../src/forest/npz.js';
import { packForest, type PackedForest } from '../src/forest/packed.js';
import { LiveSession } from '../src/live/protocol.js';
import { generateForest } from '../src/synth/generate.js';
import { batchBuffers, editBatch, isRecordBatch, joinStream, splitStream } from './arrow-surgery.js';
import { CLI, runCli } from './cli-helpers.js';

const dir = mkdtempSync(join(tmpdir(), 'trace-alloc-hostile-binary-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

type Reply = { id: unknown; ok: boolean; result?: any; error?: { code: string; message: string; tree?: string; node?: number; field?: string } };

const small = () => packForest({ dim: 2, trees: [
  { id: 'a', nodes: [{ embedding: [1, 0] }, { parent: 0, reward: 1, visits: 2, embedding: [1, 0.1] }, { parent: 0, visits: 1, uncertainty: 0.3, embedding: [0, 1] }] },
  { id: 'b', nodes: [{ embedding: [0, 1] }, { parent: 0, embedding: [0.5, 1] }, { parent: 1, terminal: true, embedding: [0.4, 1] }, { parent: 1, embedding: [0.6, 1] }] },
  { id: 'c', nodes: [{ embedding: [0.2, 1] }, { parent: 0, reward: 1, visits: 1, embedding: [0.1, 1] }, { parent: 0, embedding: [0.9, 0.1] }] },
] });

function file(name: string, bytes: Uint8Array): string {
  const path = join(dir, name);
  writeFileSync(path, bytes);
  return path;
}

/** `trace-alloc score` on a file, with a time limit far above any honest run (a hang fails, it does not stall the suite). */
function score(path: string, ...flags: string[]) {
  const r = spawnSync(process.execPath, [CLI, 'score', path, '--backend', 'cpu', '--threads', '1', ...flags], { encoding: 'utf8', timeout: 60_000 });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr, timedOut: r.error !== undefined };
}

/** A `serve --stdio` session fed `input` at once; its replies. */
function serve(input: Buffer, ...flags: string[]): { code: number | null; replies: Reply[]; stderr: string } {
  const r = spawnSync(process.execPath, [CLI, 'serve', '--stdio', '--backend', 'cpu', '--threads', '1', ...flags], { input, encoding: 'utf8', timeout: 60_000 });
  return { code: r.status, replies: r.stdout.trim().split('\n').filter((l) => l.length > 0).map((l) => JSON.parse(l) as Reply), stderr: r.stderr };
}

const line = (request: unknown) => Buffer.from(`${JSON.stringify(request)}\n`);
const batch = (id: unknown, payload: Uint8Array, extra: Record<string, unknown> = {}) => Buffer.concat([line({ id, op: 'add-columns', bytes: payload.length, ...extra }), Buffer.from(payload)]);

/** The columns of `small()` in numpy's order (tree_id last), as raw `.npy` bytes per name. */
function npyFiles(forest = small()): Record<string, Uint8Array> {
  const cols = ndArraysOfForest(forest);
  const order = ['tree_offset', 'parent', 'reward', 'visits', 'uncertainty', 'terminal', 'embedding', 'tree_id'] as const;
  const out: Record<string, Uint8Array> = {};
  for (const name of order) out[`${name}.npy`] = Buffer.concat(encodeNpy(cols.get(name)!));
  return out;
}

/** Where the local header of `entry` starts in a zip. */
function localHeader(zip: Uint8Array, entry: string): number {
  const name = Buffer.from(entry);
  for (let at = 0; at + 30 < zip.length; at++) {
    if (zip[at] === 0x50 && zip[at + 1] === 0x4b && zip[at + 2] === 3 && zip[at + 3] === 4 && Buffer.from(zip.subarray(at + 30, at + 30 + name.length)).equals(name)) return at;
  }
  throw new Error(`no ${entry} in the archive`);
}

describe('Arrow: declared lengths against the bytes present', () => {
  it('a batch that declares 2^40 rows is refused at once by score and by serve, which keeps answering', () => {
    const { frames } = splitStream(encodeArrow(small(), 'stream'));
    const huge = 2 ** 40;
    const forged = joinStream(frames.map((f) => (isRecordBatch(f) ? editBatch(f, (h) => {
      h.length = huge;
      h.nodes = h.nodes.map((n, i) => ({ length: i === h.nodes.length - 1 ? huge * 2 : huge, nullCount: n.nullCount }));
      h.nodes[0].nullCount = 1; // a declared null sends the old reader scanning every declared row
    }) : f)));
    const r = score(file('huge.arrows', forged));
    expect(r.timedOut).toBe(false);
    expect(r.code, r.stderr).toBe(2);
    expect(r.stderr).toContain('field "tree"');
    expect(r.stdout).toBe('');

    const s = serve(Buffer.concat([batch(1, forged), line({ id: 2, op: 'stats' }), batch(3, encodeArrow(small(), 'stream')), line({ id: 4, op: 'stats' })]));
    expect(s.code, s.stderr).toBe(0);
    expect(s.replies.map((x) => [x.id, x.ok, x.error?.code])).toEqual([[1, false, 'invalid_value'], [2, true, undefined], [3, true, undefined], [4, true, undefined]]);
    expect(s.replies[3].result).toMatchObject({ trees: 3, nodes: 10 });
  });

  it('a dictionary index past its dictionary is refused (score, convert, serve) and poisons nothing', () => {
    const { frames } = splitStream(encodeArrow(small(), 'stream'));
    const k = frames.findIndex(isRecordBatch);
    const body = frames[k].body.slice();
    const indices = batchBuffers(frames[k])[3]; // tree, then tree_id: [validity, indices]
    for (let row = 3; row < 7; row++) new DataView(body.buffer).setInt32(indices.offset + 4 * row, 99, true); // tree b's rows point at entry 99 of 3
    const forged = joinStream(frames.map((f, i) => (i === k ? { ...f, body } : f)));
    const path = file('dict.arrows', forged);

    const r = score(path);
    expect(r.code, r.stderr).toBe(2);
    expect(r.stderr).toContain('node 3, field "tree_id"');
    expect(r.stderr).toContain('dictionary index 99, the dictionary holds 3 strings');

    for (const out of [join(dir, 'dict-out.json'), join(dir, 'made', 'by', 'convert', 'dict-out.npz')]) {
      const c = runCli(['convert', path, out]);
      expect(c.code, c.stderr).toBe(2);
      expect(existsSync(out)).toBe(false);
    }
    expect(existsSync(join(dir, 'made')), 'convert leaves no folder behind').toBe(false);

    const s = serve(Buffer.concat([batch(1, forged), line({ id: 2, op: 'add-tree', tree: { id: 'z', nodes: [{ embedding: [1, 0] }] } }), line({ id: 3, op: 'plan', budget: 4 })]));
    expect(s.replies.map((x) => [x.id, x.ok, x.error?.code, x.error?.field])).toEqual([[1, false, 'invalid_value', 'tree_id'], [2, true, undefined, undefined], [3, true, undefined, undefined]]);
    expect(s.replies[2].result.trees.map((t: { id: string }) => t.id)).toEqual(['z']);
  });

  it('a stream cut at a message boundary is refused: after the schema, and between two batches', () => {
    const whole = forestToArrowTable(small());
    const twoBatches = new Table([...whole.slice(0, 7).batches, ...whole.slice(7).batches]);
    const stream = tableToIPC(twoBatches, 'stream');
    const { frames, eos } = splitStream(stream);
    expect(eos).toBe(true);
    const batches = frames.filter(isRecordBatch);
    expect(batches).toHaveLength(2);
    expect(score(file('two.arrows', stream)).code).toBe(0);

    const afterSchema = joinStream(frames.filter((f) => !isRecordBatch(f)), { eos: false });
    const betweenBatches = joinStream(frames.slice(0, frames.indexOf(batches[1])), { eos: false });
    for (const [name, bytes] of [['after-schema.arrows', afterSchema], ['between.arrows', betweenBatches]] as const) {
      const r = score(file(name, bytes));
      expect(r.code, `${name}: ${r.stdout}`).toBe(2);
      expect(r.stderr).toContain('the stream ends without its end-of-stream marker (it is truncated)');
    }
    const s = serve(Buffer.concat([batch(1, betweenBatches), line({ id: 2, op: 'stats' })]));
    expect(s.replies[0].error).toMatchObject({ code: 'invalid_value' });
    expect(s.replies[1].result).toMatchObject({ trees: 0 });
  });

  it('a column given twice is refused', () => {
    // "visits" renamed "reward" in the schema (and the file footer's copy of it): two float64 columns of one name.
    for (const format of ['stream', 'file'] as const) {
      const bytes = Buffer.from(encodeArrow(small(), format));
      let at = -1, renamed = 0;
      while ((at = bytes.indexOf('visits', at + 1)) >= 0) { bytes.write('reward', at); renamed++; }
      expect(renamed).toBeGreaterThan(0);
      const r = score(file(`twice.${format === 'file' ? 'arrow' : 'arrows'}`, bytes));
      expect(r.code, r.stdout).toBe(2);
      expect(r.stderr).toContain('field "reward"');
      expect(r.stderr).toContain('has this column twice');
    }
  });
});

describe('.npz: complete, checked entries', () => {
  const plain = () => zipSync(Object.fromEntries(Object.entries(npyFiles()).map(([k, v]) => [k, [v, { level: 0 }]])));

  it('refuses an archive cut before an entry (embedding, tree_id) from a file, standard input, convert and add-columns', () => {
    const zip = plain();
    expect(score(file('whole.npz', zip)).code).toBe(0);
    for (const entry of ['embedding.npy', 'tree_id.npy']) {
      const cut = zip.subarray(0, localHeader(zip, entry));
      const path = file(`cut-${entry}.npz`, cut);
      const r = score(path);
      expect(r.code, `${entry}: ${r.stdout}`).toBe(2);
      expect(r.stderr).toContain('no end-of-central-directory record');
      const stdin = spawnSync(process.execPath, [CLI, 'score', '-', '--backend', 'cpu'], { input: cut, encoding: 'utf8' });
      expect(stdin.status).toBe(2);
      expect(runCli(['convert', path, join(dir, `cut-${entry}.json`)]).code).toBe(2);
      const s = serve(Buffer.concat([batch(1, cut), line({ id: 2, op: 'stats' })]));
      expect(s.replies[0].error?.code).toBe('invalid_value');
      expect(s.replies[1].result).toMatchObject({ trees: 0 });
    }
  });

  it('refuses a stored entry whose bytes fail their CRC-32, however the file arrives', () => {
    const zip = plain().slice();
    const at = localHeader(zip, 'reward.npy') + 30 + 'reward.npy'.length + 128 + 8; // reward[1], the high byte of its mantissa's low word
    zip[at] ^= 0x10;
    const path = file('flipped.npz', zip);
    const r = score(path);
    expect(r.code, r.stdout).toBe(2);
    expect(r.stderr).toContain('field "reward"');
    expect(r.stderr).toContain('fail their CRC-32 check');
    expect(spawnSync(process.execPath, [CLI, 'score', '-', '--backend', 'cpu'], { input: zip, encoding: 'utf8' }).status).toBe(2);
    expect(runCli(['convert', path, join(dir, 'flipped.arrow')]).code).toBe(2);
    const s = serve(Buffer.concat([batch(1, zip), line({ id: 2, op: 'stats' })]));
    expect(s.replies[0].error).toMatchObject({ code: 'invalid_value', field: 'reward' });
  });

  it('add-columns refuses an .npz whose header announces fewer bytes than the archive holds', () => {
    const zip = plain();
    const short = zip.length - 100;
    const input = Buffer.concat([line({ id: 1, op: 'add-columns', bytes: short }), Buffer.from(zip.subarray(0, short)), line({ id: 2, op: 'stats' })]);
    const s = serve(input);
    expect(s.replies[0]).toMatchObject({ id: 1, ok: false, error: { code: 'invalid_value' } });
    expect(s.replies.at(-1)).toMatchObject({ id: 2, ok: true, result: { trees: 0 } });
  });

  it('bounds what a compressed entry inflates to: by its .npy header, and by --max-inflated-bytes', () => {
    // reward.npy says 10 float64 values, then inflates 64 MiB of zeros (a 64 KB "zip bomb").
    const files = npyFiles();
    const header = files['reward.npy'];
    const deflated: Uint8Array[] = [];
    const deflate = new Deflate({ level: 9 }, (chunk) => { deflated.push(chunk); });
    deflate.push(header);
    for (let i = 0; i < 64; i++) deflate.push(new Uint8Array(1 << 20), i === 63);
    const bomb = Buffer.concat(deflated);
    expect(bomb.length).toBeLessThan(1 << 20);
    const zip = zipSync(Object.fromEntries(Object.entries(files).map(([k, v]) => [k, [v, { level: k === 'reward.npy' ? 6 : 0 }]])));
    // Swap the honest compressed reward entry for the bomb, sizes and CRC in both headers patched to match the bomb.
    const forged = swapDeflatedEntry(zip, 'reward.npy', bomb, header.length + (64 << 20));
    const r = score(file('bomb.npz', forged));
    expect(r.code, r.stdout).toBe(2);
    expect(r.stderr).toContain('field "reward"');
    expect(r.stderr).toMatch(/its \.npy header declares \d+ bytes, the archive holds/);

    // An honest compressed archive: read by default, refused under a lower cap (and the cap is a flag of serve too).
    const honest = encodeNpz(ndArraysOfForest(small()), true);
    const path = file('honest-compressed.npz', honest);
    expect(score(path).code).toBe(0);
    const capped = score(path, '--max-inflated-bytes', '300');
    expect(capped.code).toBe(2);
    expect(capped.stderr).toContain('inflate to more than 300 bytes (--max-inflated-bytes');
    const s = serve(Buffer.concat([batch(1, honest)]), '--max-inflated-bytes', '300');
    expect(s.replies[0].error?.code).toBe('invalid_value');
    expect(s.replies[0].error?.message).toContain('--max-inflated-bytes');
  });
});

describe('exit codes and error codes', () => {
  it('a <U tree_id holding code point 0x110000 exits 2 naming the column', () => {
    const files = npyFiles();
    const ids = Buffer.from(files['tree_id.npy']);
    const dataStart = ids.length - 3 * 4; // <U1: one code point per id
    ids.writeUInt32LE(0x110000, dataStart + 4);
    files['tree_id.npy'] = ids;
    const zip = zipSync(Object.fromEntries(Object.entries(files).map(([k, v]) => [k, [v, { level: 0 }]])));
    const r = score(file('codepoint.npz', zip));
    expect(r.code, r.stderr).toBe(2);
    expect(r.stderr).toContain('field "tree_id"');
    expect(r.stderr).toContain('code point 1114112');
  });

  it('an add-columns header announcing 1e15 bytes gets request_too_large with the request\'s id', () => {
    const s = serve(Buffer.concat([line({ id: 7, op: 'add-columns', bytes: 1e15 }), Buffer.from('some bytes of the payload')]));
    expect(s.code, s.stderr).toBe(0);
    expect(s.replies).toHaveLength(1);
    expect(s.replies[0]).toMatchObject({ id: 7, ok: false, error: { code: 'request_too_large' } });
    expect(s.replies[0].error!.message).toContain('1000000000000000 bytes');
    // Under a lower --max-batch-bytes: refused, its payload skipped, and the next request served.
    const payload = encodeArrow(small(), 'stream');
    const capped = serve(Buffer.concat([batch('big', payload), line({ id: 2, op: 'stats' })]), '--max-batch-bytes', '100');
    expect(capped.replies.map((x) => [x.id, x.ok, x.error?.code])).toEqual([['big', false, 'request_too_large'], [2, true, undefined]]);
  });
});

describe('live forests keep their trees when a batch is refused', () => {
  it('a refused add-columns with "replace": true removes nothing', async () => {
    const s = new LiveSession({ backend: 'cpu', threads: 1, maxGroupSize: 2 });
    const send = async (request: unknown) => JSON.parse((await s.handleLine(JSON.stringify(request)))!) as Reply;
    const sendBatch = async (payload: Uint8Array, extra: Record<string, unknown>) => {
      const frame = s.binaryFrame(JSON.stringify({ op: 'add-columns', bytes: payload.length, ...extra }))!;
      return JSON.parse(await frame.complete(payload)) as Reply;
    };
    try {
      const two = packForest({ dim: 2, trees: [
        { id: 'a', nodes: [{ embedding: [1, 0] }, { parent: 0, embedding: [1, 0.1], visits: 1, reward: 1 }] },
        { id: 'b', nodes: [{ embedding: [0, 1] }, { parent: 0, embedding: [0.5, 1] }] },
      ] });
      expect((await sendBatch(encodeArrow(two, 'stream'), {})).ok).toBe(true);
      const before = (await send({ op: 'plan', budget: 4 })).result;
      // Replaces "a" with a tree whose root has 3 children: over --max-group-size 2.
      const wide: PackedForest = packForest({ dim: 2, trees: [{ id: 'a', nodes: [{ embedding: [1, 0] }, { parent: 0, embedding: [1, 0] }, { parent: 0, embedding: [0, 1] }, { parent: 0, embedding: [1, 1] }] }] });
      const refused = await sendBatch(encodeArrow(wide, 'stream'), { id: 5, replace: true });
      expect(refused).toMatchObject({ id: 5, ok: false, error: { code: 'invalid_value', field: 'children', tree: 'a' } });
      expect((await send({ op: 'stats' })).result).toMatchObject({ trees: 2, nodes: 4 });
      const after = (await send({ op: 'plan', budget: 4 })).result;
      expect(after.trees).toEqual(before.trees);
      // A duplicate id inside the batch is refused whole too.
      const dup = ndArraysOfForest(two) as Map<string, NdArray>;
      dup.set('tree_id', { kind: 'string', dtype: '<U1', shape: [2], data: ['a', 'a'] });
      expect((await sendBatch(encodeNpz(dup), { replace: true })).error?.code).toBe('invalid_value');
      expect((await send({ op: 'stats' })).result).toMatchObject({ trees: 2, nodes: 4 });
    } finally {
      s.destroy();
    }
  });
});

describe('the empty forest', () => {
  it('round-trips through convert to .jsonl and back (and .npz, .arrow), scoring the same everywhere', () => {
    const json = join(dir, 'empty.json');
    writeFileSync(json, '{"dim":3,"trees":[]}');
    const expected = score(json);
    expect(expected.code, expected.stderr).toBe(0);
    let from = json;
    for (const to of ['empty.jsonl', 'empty2.json', 'empty.npz', 'empty.arrow', 'empty3.jsonl', 'empty4.json']) {
      const c = runCli(['convert', from, join(dir, to)]);
      expect(c.code, `${from} -> ${to}: ${c.stderr}`).toBe(0);
      expect(c.stderr).toContain('wrote 0 trees, 0 nodes (dim 3)');
      const r = score(join(dir, to));
      expect(r.code, `${to}: ${r.stderr}`).toBe(0);
      expect(r.stdout).toBe(expected.stdout);
      from = join(dir, to);
    }
    expect(JSON.parse(readFileSync(join(dir, 'empty4.json'), 'utf8'))).toEqual({ dim: 3, trees: [] });
  });
});

/**
 * The zip rebuilt by hand with entry `name`'s data replaced by `data` (raw deflate), its local
 * header and directory entry saying `size` bytes inflated, with the CRC-32 of what the bomb
 * inflates to: a forged archive whose only lie is the .npy header inside.
 */
function swapDeflatedEntry(zip: Uint8Array, name: string, data: Uint8Array, size: number): Uint8Array {
  const entries = readEntries(zip);
  const parts: Uint8Array[] = [];
  const central: Uint8Array[] = [];
  let offset = 0;
  for (const e of entries) {
    const isTarget = e.name === name;
    const body = isTarget ? data : e.data;
    const crc = isTarget ? crcOfBomb(e.raw, size) : e.crc;
    const usize = isTarget ? size : e.size;
    const local = Buffer.alloc(30 + e.name.length);
    local.writeUInt32LE(0x04034b50, 0); local.writeUInt16LE(20, 4); local.writeUInt16LE(0, 6); local.writeUInt16LE(e.method, 8);
    local.writeUInt32LE(crc, 14); local.writeUInt32LE(body.length, 18); local.writeUInt32LE(usize, 22); local.writeUInt16LE(e.name.length, 26);
    local.write(e.name, 30);
    const cd = Buffer.alloc(46 + e.name.length);
    cd.writeUInt32LE(0x02014b50, 0); cd.writeUInt16LE(20, 4); cd.writeUInt16LE(20, 6); cd.writeUInt16LE(e.method, 10);
    cd.writeUInt32LE(crc, 16); cd.writeUInt32LE(body.length, 20); cd.writeUInt32LE(usize, 24); cd.writeUInt16LE(e.name.length, 28);
    cd.writeUInt32LE(offset, 42); cd.write(e.name, 46);
    parts.push(local, body);
    central.push(cd);
    offset += local.length + body.length;
  }
  const cdSize = central.reduce((n, c) => n + c.length, 0);
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0); end.writeUInt16LE(entries.length, 8); end.writeUInt16LE(entries.length, 10);
  end.writeUInt32LE(cdSize, 12); end.writeUInt32LE(offset, 16);
  return Buffer.concat([...parts, ...central, end]);
}

/** CRC-32 of the bomb's output: its header bytes then zeros up to `size`. */
function crcOfBomb(header: Uint8Array, size: number): number {
  let crc = zlibCrc(header, 0);
  const zeros = new Uint8Array(1 << 20);
  for (let left = size - header.length; left > 0; left -= zeros.length) crc = zlibCrc(zeros.subarray(0, Math.min(left, zeros.length)), crc);
  return crc;
}

function zlibCrc(data: Uint8Array, previous: number): number {
  return crc32(data, previous) >>> 0;
}

/** The entries of a simple (non-zip64) archive as fflate writes it: name, method, CRC, sizes, raw data and the uncompressed bytes. */
function readEntries(zip: Uint8Array): { name: string; method: number; crc: number; size: number; data: Uint8Array; raw: Uint8Array }[] {
  const v = new DataView(zip.buffer, zip.byteOffset, zip.byteLength);
  const out = [];
  for (let at = 0; v.getUint32(at, true) === 0x04034b50;) {
    const method = v.getUint16(at + 8, true), crc = v.getUint32(at + 14, true), csize = v.getUint32(at + 18, true), size = v.getUint32(at + 22, true);
    const n = v.getUint16(at + 26, true), x = v.getUint16(at + 28, true);
    const name = Buffer.from(zip.subarray(at + 30, at + 30 + n)).toString();
    const data = zip.subarray(at + 30 + n + x, at + 30 + n + x + csize);
    out.push({ name, method, crc, size, data, raw: npyFiles()[name] });
    at += 30 + n + x + csize;
  }
  return out;
}
