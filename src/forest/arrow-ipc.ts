import { ForestError } from './errors.js';
import { FlatBufferError, FlatTable } from './flatbuffers.js';

/**
 * The Apache Arrow IPC container (arrow.apache.org/docs/format/Columnar.html, "Serialization and
 * Interprocess Communication"), checked whole before any column is read: a stream is a schema
 * message, dictionary and record batch messages, and the end-of-stream marker; a file is
 * `ARROW1`, padding, that stream, a footer listing the batches, the footer's length and
 * `ARROW1`. Every message must start with the continuation marker, its metadata must fit and
 * leave its body 8-byte aligned, its body must fit, and the stream must end with the
 * end-of-stream marker — a stream cut at a message boundary is refused, not read as a shorter
 * forest; a file's footer must list exactly the messages found, with the same schema. Each
 * record batch's buffers must lie inside its body, 8-byte aligned and without overlap.
 * Compressed bodies, big-endian data and the pre-0.15 framing (no continuation marker) are
 * refused. What the columns hold is checked by `arrow.ts`.
 */

/** A column type as far as the forest reader needs it; anything else keeps only its name (for errors). */
export type ArrowType =
  | { kind: 'int'; bitWidth: number; signed: boolean }
  | { kind: 'float'; precision: number }
  | { kind: 'bool' }
  | { kind: 'utf8'; large: boolean }
  | { kind: 'fixed-size-list'; listSize: number; child: ArrowField | undefined }
  | { kind: 'other'; name: string };

export interface ArrowField {
  name: string;
  type: ArrowType;
  /** Set when the column is dictionary-encoded: the batch holds `indexType` indices into dictionary `id`. */
  dictionary?: { id: number; indexType: ArrowType & { kind: 'int' } };
}

/** One field node of a batch: a column's (or a list child's) row count and declared null count. */
export interface ArrowNode { length: number; nullCount: number }

/** A record batch's metadata and its body; buffers are [offset, length] into `body`, checked to fit. */
export interface ArrowBatch {
  length: number;
  nodes: ArrowNode[];
  buffers: { offset: number; length: number }[];
  body: Uint8Array;
}

export type ArrowMessage =
  | { kind: 'dictionary'; id: number; isDelta: boolean; batch: ArrowBatch }
  | { kind: 'batch'; batch: ArrowBatch };

export interface ArrowIpc { fields: ArrowField[]; messages: ArrowMessage[] }

const MAGIC = [0x41, 0x52, 0x52, 0x4f, 0x57, 0x31]; // ARROW1
const CONTINUATION = 0xffffffff;
/** MessageHeader union tags (Message.fbs). */
const HEADER = { schema: 1, dictionaryBatch: 2, recordBatch: 3 } as const;
/** Metadata versions V4 and V5 (the encoding of every writer since 2017) are read. */
const READ_VERSIONS = new Set([3, 4]);

/** Whether the bytes start like an Arrow IPC file. */
export function isArrowFile(bytes: Uint8Array): boolean {
  return bytes.length >= 6 && MAGIC.every((b, i) => bytes[i] === b);
}

/** Parses and checks the container; `source` names the input in errors. */
export function readArrowIpc(bytes: Uint8Array, source: string): ArrowIpc {
  const fail = (reason: string): never => { throw new ForestError({}, `${source}: not a valid Arrow IPC ${isArrowFile(bytes) ? 'file' : 'stream'}: ${reason}`); };
  try {
    return isArrowFile(bytes) ? readFile(bytes, fail) : readStream(bytes, 0, bytes.length, fail).ipc;
  } catch (err) {
    if (err instanceof FlatBufferError) return fail(`corrupt metadata (${err.message})`);
    throw err;
  }
}

type Fail = (reason: string) => never;

interface Walked {
  ipc: ArrowIpc;
  /** Per dictionary and record batch message, in order: where its prefix starts, its metadata length (prefix included) and body length. */
  blocks: { kind: 'dictionary' | 'batch'; offset: number; metaDataLength: number; bodyLength: number }[];
  end: number;
}

function readFile(bytes: Uint8Array, fail: Fail): ArrowIpc {
  const n = bytes.length;
  if (n < 8 + 4 + 6 || !MAGIC.every((b, i) => bytes[n - 6 + i] === b)) fail('the file does not end with ARROW1 (it is truncated, or not an Arrow file)');
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const footerLength = view.getInt32(n - 10, true);
  const footerStart = n - 10 - footerLength;
  if (footerLength <= 0 || footerStart < 8) fail(`the footer length ${footerLength} does not fit the file`);
  const footer = FlatTable.root(bytes.subarray(footerStart, footerStart + footerLength));
  const schema = footer.table(1);
  if (schema === undefined) fail('the footer has no schema');
  // The footer's schema is the file's; writers may also repeat it at the start of the stream (pyarrow does, apache-arrow's JS writer does not).
  const walked = readStream(bytes, 8, footerStart, fail, readSchema(schema!, fail));
  const listed = [...footer.structs(2, 24).map((b) => ({ kind: 'dictionary' as const, b })), ...footer.structs(3, 24).map((b) => ({ kind: 'batch' as const, b }))];
  const found = walked.blocks;
  const key = (kind: string, offset: number, meta: number, body: number) => `${kind}@${offset}:${meta}+${body}`;
  const expected = new Set(found.map((f) => key(f.kind, f.offset, f.metaDataLength, f.bodyLength)));
  if (listed.length !== found.length) fail(`the footer lists ${listed.length} dictionary and record batches, the file holds ${found.length}`);
  for (const { kind, b } of listed) {
    const k = key(kind, b.int64(0, 'a block offset'), b.int32(8), b.int64(16, 'a block body length'));
    if (!expected.has(k)) fail(`the footer lists a ${kind === 'batch' ? 'record' : 'dictionary'} batch the file does not hold where it says`);
    expected.delete(k);
  }
  return walked.ipc;
}

/**
 * Walks the messages in bytes [start, end): the whole range must be messages and the
 * end-of-stream marker. `fileFields`: a file's schema (from its footer); a schema message in
 * the stream must then agree with it, and the marker may be left out (the footer lists the
 * batches).
 */
function readStream(bytes: Uint8Array, start: number, end: number, fail: Fail, fileFields?: ArrowField[]): Walked {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let at = start;
  let fields: ArrowField[] | undefined = fileFields;
  let streamSchema = false;
  const messages: ArrowMessage[] = [];
  const blocks: Walked['blocks'] = [];
  for (;;) {
    if (at === end && fileFields !== undefined) break; // a file's footer lists its batches; the marker before it is optional
    if (at + 8 > end) fail(at === end ? 'the stream ends without its end-of-stream marker (it is truncated)' : `the stream is truncated inside a message prefix at byte ${at}`);
    if (view.getUint32(at, true) !== CONTINUATION) fail(`no continuation marker at byte ${at} (a corrupt message, or the Arrow format before 0.15, which is not read)`);
    const metaLength = view.getInt32(at + 4, true);
    if (metaLength === 0) { at += 8; break; } // end-of-stream marker
    if (metaLength < 0 || (8 + metaLength) % 8 !== 0) fail(`a message at byte ${at} has metadata length ${metaLength} (not a multiple of 8 that fits)`);
    if (at + 8 + metaLength > end) fail(`the stream is truncated inside the metadata of a message at byte ${at}`);
    const message = FlatTable.root(bytes.subarray(at + 8, at + 8 + metaLength));
    const version = message.int16(0);
    if (!READ_VERSIONS.has(version)) fail(`a message at byte ${at} has metadata version V${version + 1} (V4 and V5 are read)`);
    const headerType = message.uint8(1);
    const header = message.table(2);
    const bodyLength = message.int64(3, 'a body length');
    const bodyStart = at + 8 + metaLength;
    if (bodyLength < 0 || bodyStart + bodyLength > end) fail(`the stream is truncated inside the body of a message at byte ${at} (${bodyLength} bytes announced)`);
    if (header === undefined) fail(`a message at byte ${at} has no header`);
    const body = bytes.subarray(bodyStart, bodyStart + bodyLength);
    if (headerType === HEADER.schema) {
      if (streamSchema || blocks.length > 0) fail(`a schema at byte ${at} that is not the stream's first message`);
      if (bodyLength !== 0) fail('the schema message has a body');
      const read = readSchema(header!, fail);
      if (fields !== undefined && !sameFields(read, fields)) fail("the footer's schema differs from the stream's");
      fields = read;
      streamSchema = true;
    } else if (headerType === HEADER.dictionaryBatch || headerType === HEADER.recordBatch) {
      if (fields === undefined) fail(`a batch at byte ${at} comes before the schema`);
      if (headerType === HEADER.recordBatch) {
        messages.push({ kind: 'batch', batch: readBatch(header!, body, fail) });
      } else {
        const data = header!.table(1);
        if (data === undefined) fail(`the dictionary batch at byte ${at} has no data`);
        messages.push({ kind: 'dictionary', id: header!.int64(0, 'a dictionary id'), isDelta: header!.bool(2), batch: readBatch(data!, body, fail) });
      }
      blocks.push({ kind: headerType === HEADER.recordBatch ? 'batch' : 'dictionary', offset: at, metaDataLength: 8 + metaLength, bodyLength });
    } else {
      fail(`a message at byte ${at} is of type ${headerType}, not a schema, dictionary or record batch`);
    }
    at = bodyStart + bodyLength;
  }
  if (fields === undefined) fail('there is no schema message');
  if (at !== end) fail(`${end - at} bytes follow the end-of-stream marker`);
  return { ipc: { fields: fields!, messages }, blocks, end: at };
}

function readSchema(schema: FlatTable, fail: Fail): ArrowField[] {
  if (schema.int16(0) !== 0) fail('the data is big-endian; write it little-endian');
  return schema.tables(1).map((field) => readField(field, fail, true));
}

function readField(field: FlatTable, fail: Fail, topLevel: boolean): ArrowField {
  const name = field.string(0) ?? '';
  const type = readType(field, fail, topLevel);
  const encoding = field.table(4);
  if (encoding === undefined) return { name, type };
  const indexTable = encoding.table(1);
  // The default index type is a signed 32-bit integer (Schema.fbs, DictionaryEncoding).
  const indexType = indexTable === undefined ? { kind: 'int' as const, bitWidth: 32, signed: true } : { kind: 'int' as const, bitWidth: indexTable.int32(0), signed: indexTable.bool(1) };
  return { name, type, dictionary: { id: encoding.int64(0, 'a dictionary id'), indexType } };
}

/** Type union tags (Schema.fbs) and the names used in errors for those not read. */
const TYPE_NAMES = ['NONE', 'Null', 'Int', 'FloatingPoint', 'Binary', 'Utf8', 'Bool', 'Decimal', 'Date', 'Time', 'Timestamp', 'Interval', 'List', 'Struct',
  'Union', 'FixedSizeBinary', 'FixedSizeList', 'Map', 'Duration', 'LargeBinary', 'LargeUtf8', 'LargeList', 'RunEndEncoded', 'BinaryView', 'Utf8View', 'ListView', 'LargeListView'];

function readType(field: FlatTable, fail: Fail, topLevel: boolean): ArrowType {
  const tag = field.uint8(2);
  const t = field.table(3);
  switch (tag) {
    case 2: return { kind: 'int', bitWidth: t?.int32(0) ?? 0, signed: t?.bool(1) ?? false };
    case 3: return { kind: 'float', precision: t?.int16(0) ?? 0 };
    case 5: return { kind: 'utf8', large: false };
    case 20: return { kind: 'utf8', large: true };
    case 6: return { kind: 'bool' };
    case 16: {
      // Only a top-level list's one child is followed: the forest schema nests no deeper.
      const children = field.tables(5);
      if (children.length !== 1) fail(`a fixed-size list field has ${children.length} children (1 expected)`);
      return { kind: 'fixed-size-list', listSize: t?.int32(0) ?? 0, child: topLevel ? readField(children[0], fail, false) : undefined };
    }
    default: return { kind: 'other', name: TYPE_NAMES[tag] ?? `type #${tag}` };
  }
}

function readBatch(batch: FlatTable, body: Uint8Array, fail: Fail): ArrowBatch {
  if (batch.has(3)) fail('the record batch body is compressed (LZ4/ZSTD); write it without compression');
  const length = batch.int64(0, 'a batch length');
  const nodes = batch.structs(1, 16).map((s) => ({ length: s.int64(0, 'a column length'), nullCount: s.int64(8, 'a null count') }));
  const buffers = batch.structs(2, 16).map((s) => ({ offset: s.int64(0, 'a buffer offset'), length: s.int64(8, 'a buffer length') }));
  if (length < 0) fail(`a record batch has length ${length}`);
  for (const n of nodes) if (n.length < 0 || n.nullCount < 0) fail(`a column has length ${n.length} and null count ${n.nullCount}`);
  const used: { offset: number; length: number }[] = [];
  for (const b of buffers) {
    if (b.offset < 0 || b.length < 0 || b.offset + b.length > body.length) fail(`a buffer [${b.offset}, +${b.length}) lies outside its message body of ${body.length} bytes`);
    if (b.offset % 8 !== 0) fail(`a buffer starts at body offset ${b.offset}, not a multiple of 8`);
    if (b.length > 0) used.push(b);
  }
  used.sort((a, b) => a.offset - b.offset);
  for (let i = 1; i < used.length; i++) if (used[i].offset < used[i - 1].offset + used[i - 1].length) fail('two buffers of a record batch overlap');
  return { length, nodes, buffers, body };
}

/** Same names and types, in order (the footer's schema against the stream's). */
function sameFields(a: ArrowField[], b: ArrowField[]): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

/** A type as written in errors: `Int32`, `Uint8`, `Float64`, `FixedSizeList[4]<Float32>`, `Dictionary<Int32, Utf8>`. */
export function typeName(field: ArrowField): string {
  const name = plainTypeName(field.type);
  return field.dictionary ? `Dictionary<${plainTypeName(field.dictionary.indexType)}, ${name}>` : name;
}

function plainTypeName(type: ArrowType): string {
  switch (type.kind) {
    case 'int': return `${type.signed ? 'Int' : 'Uint'}${type.bitWidth}`;
    case 'float': return ['Float16', 'Float32', 'Float64'][type.precision] ?? `Float(precision ${type.precision})`;
    case 'bool': return 'Bool';
    case 'utf8': return type.large ? 'LargeUtf8' : 'Utf8';
    case 'fixed-size-list': return `FixedSizeList[${type.listSize}]<${type.child ? typeName(type.child) : '?'}>`;
    case 'other': return type.name;
  }
}
