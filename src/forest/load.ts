import { closeSync, fstatSync, openSync } from 'node:fs';
import { decodeArrow } from './arrow.js';
import { packNdArrays } from './columnar.js';
import { constants as bufferConstants } from 'node:buffer';
import { describeValue, ForestError } from './errors.js';
import { decodeNpz, type NpzOptions } from './npz.js';
import { DEFAULT_MAX_INPUT_BYTES, MAX_INPUT_BYTES_NAME } from './limits.js';
import { fileSource, readStreamCapped } from './source.js';
import type { ForestInput, TreeInput } from './input.js';
import { packForest, type PackOptions, type PackedForest } from './packed.js';

export type ForestFormat = 'json' | 'jsonl';
/** Binary columnar containers (one schema, see columnar.ts). */
export type ColumnarFormat = 'npz' | 'arrow';

/** The container by its first bytes: a zip (`.npz`), an Arrow IPC file (`ARROW1`) or stream (continuation marker). */
export function sniffColumnar(head: Uint8Array): ColumnarFormat | undefined {
  if (head[0] === 0x50 && head[1] === 0x4b && head[2] === 0x03 && head[3] === 0x04) return 'npz';
  if (head.length >= 6 && String.fromCharCode(...head.subarray(0, 6)) === 'ARROW1') return 'arrow';
  if (head[0] === 0xff && head[1] === 0xff && head[2] === 0xff && head[3] === 0xff) return 'arrow';
  return undefined;
}

/** The format a path's extension names, if any. */
export function formatOfPath(path: string): ForestFormat | ColumnarFormat | undefined {
  const lower = path.toLowerCase();
  if (lower.endsWith('.jsonl') || lower.endsWith('.ndjson')) return 'jsonl';
  if (lower.endsWith('.json')) return 'json';
  if (lower.endsWith('.npz')) return 'npz';
  if (lower.endsWith('.arrow') || lower.endsWith('.arrows') || lower.endsWith('.feather') || lower.endsWith('.ipc')) return 'arrow';
  return undefined;
}

/**
 * How forest files are read: packing options, the cap on what a compressed `.npz` inflates to,
 * and `maxInputBytes`, the most bytes the input may hold (default `DEFAULT_MAX_INPUT_BYTES`).
 */
export type LoadOptions = PackOptions & NpzOptions & { maxInputBytes?: number };

/** Packs a columnar forest held in memory (`.npz` or Arrow IPC, sniffed unless given). */
export function parseColumnarForest(bytes: Uint8Array, source: string, format = sniffColumnar(bytes), options: NpzOptions = {}): PackedForest {
  if (format === 'npz') return packNdArrays(decodeNpz(bytes, source, options), source);
  if (format === 'arrow') return packNdArrays(decodeArrow(bytes, source), source);
  throw new ForestError({}, `${source}: not an .npz archive or an Arrow IPC file or stream (unknown first bytes)`);
}

/**
 * Parses forest text (docs/ALGORITHM.md §5) and packs it. Without a format, a text that is one JSON object
 * with `trees` is JSON and anything else is JSON Lines. `NaN`/`Infinity` tokens, which Python's
 * `json` module writes by default, parse as numbers so that validation rejects them with the
 * tree, node and field named rather than a bare syntax error.
 */
export function parseForest(text: string, format?: ForestFormat, options: PackOptions = {}): PackedForest {
  if (text.trim().length === 0) throw new ForestError({}, 'the input is empty: expected a forest in JSON or JSON Lines');
  if (format === 'jsonl') return packForest(parseJsonLines(text.split('\n'), () => text), options);
  if (format === 'json') return packForest(parseJsonForest(text), options);
  let whole: unknown;
  try {
    whole = parseJsonLenient(text);
  } catch {
    return packForest(parseJsonLines(text.split('\n')), options);
  }
  if (whole !== null && typeof whole === 'object' && !Array.isArray(whole) && !Object.hasOwn(whole, 'trees') && Object.hasOwn(whole, 'nodes')) {
    return packForest({ trees: [whole as TreeInput] }, options); // a JSON Lines file of one tree
  }
  if (isDimLine(whole)) return packForest(parseJsonLines(text.split('\n')), options); // a JSON Lines file of no trees
  return packForest(asForestObject(whole), options);
}

/**
 * Reads a forest from a path (`-` reads stdin). A regular file's format is its extension's
 * (`.jsonl`/`.ndjson` JSON Lines, `.json` JSON, `.npz`, `.arrow`…); anything else is sniffed.
 * A stream that is not a regular file (standard input, a named pipe, a device) is read whole
 * first, under the same `maxInputBytes` cap, and told apart by its first bytes, whatever its
 * name: its extension cannot be checked against a size or read from the end. JSON Lines is
 * decoded line by line from the bytes, so files beyond V8's ~512 MiB string limit still load;
 * a line past that limit is refused, naming it.
 */
export function loadForestFile(path: string, options: LoadOptions = {}): PackedForest {
  const maxBytes = options.maxInputBytes ?? DEFAULT_MAX_INPUT_BYTES;
  if (!(Number.isSafeInteger(maxBytes) && maxBytes >= 1)) throw new ForestError({}, `maxInputBytes must be an integer >= 1, got ${describeValue(maxBytes)}`);
  const source = path === '-' ? 'standard input' : path;
  let fd: number;
  try {
    fd = path === '-' ? 0 : openSync(path, 'r');
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    throw new ForestError({}, `cannot read ${source}: ${e.code ?? e.message}`);
  }
  try {
    const stat = fstatSync(fd);
    if (stat.isDirectory()) throw new ForestError({}, `${source} is a folder, not a forest file`);
    if (!stat.isFile()) {
      const bytes = readStreamCapped(fd, maxBytes, source, MAX_INPUT_BYTES_NAME);
      return parseForestBytes(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length), source, textFormatOf(path), options);
    }
    if (stat.size > maxBytes) throw new ForestError({}, `${source} is ${stat.size} bytes, more than the ${maxBytes} that ${MAX_INPUT_BYTES_NAME} allows; raise it to read it`);
    const named = path === '-' ? undefined : formatOfPath(path);
    const file = fileSource(fd, stat.size, source);
    // Each array read once, aligned, into its own buffer: never the whole file and its arrays at once.
    if (named === 'npz') return packNdArrays(decodeNpz(file, path, options), path);
    // In place: an Arrow file's buffers are aligned within it, so columns are views of this one buffer.
    if (named === 'arrow') return packNdArrays(decodeArrow(file.aligned(0, stat.size, 8), path), path);
    if (stat.size > MAX_BUFFER_BYTES) throw new ForestError({}, `${source} is ${stat.size} bytes, more than one buffer holds (${MAX_BUFFER_BYTES}); write it as .npz or Arrow, whose arrays are read one by one`);
    return parseForestBytes(Buffer.from(file.view(0, stat.size).buffer), source, named === 'json' || named === 'jsonl' ? named : undefined, options);
  } finally {
    if (path !== '-') closeSync(fd);
  }
}

/** The text format a path's extension names (JSON or JSON Lines), if any. */
function textFormatOf(path: string): ForestFormat | undefined {
  const named = path === '-' ? undefined : formatOfPath(path);
  return named === 'json' || named === 'jsonl' ? named : undefined;
}

/** A forest from bytes read just now: a columnar container by its first bytes, else JSON text (`format`, or sniffed). */
function parseForestBytes(bytes: Buffer, source: string, format: ForestFormat | undefined, options: LoadOptions): PackedForest {
  // These bytes are ours: an .npz's misaligned arrays may move within them.
  if (sniffColumnar(bytes) !== undefined) return parseColumnarForest(bytes, source, undefined, { ...options, movable: true });
  bytes = withoutByteOrderMark(bytes);
  const whole = () => (bytes.length < MAX_STRING_BYTES ? bytes.toString('utf8') : undefined);
  if (format === 'jsonl') return packForest(parseJsonLines(linesOf(bytes), whole), options);
  if (bytes.length >= MAX_STRING_BYTES) {
    if (format === 'json') throw new ForestError({}, `${source} is ${bytes.length} bytes, too large for one JSON document; write it as JSON Lines (.jsonl) instead`);
    return packForest(parseJsonLines(linesOf(bytes)), options);
  }
  return parseForest(bytes.toString('utf8'), format, options);
}

/** The longest Buffer Node can allocate (4 GiB in Node 20). */
const MAX_BUFFER_BYTES = bufferConstants.MAX_LENGTH;

/** A UTF-8 byte-order mark (some Windows tools write one) is not JSON. */
function withoutByteOrderMark(bytes: Buffer): Buffer {
  return bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf ? bytes.subarray(3) : bytes;
}

/** V8's maximum string length in UTF-16 units (bytes are an upper bound on that). */
const MAX_STRING_BYTES = 0x1fffffe8;

/**
 * The lines of JSON Lines bytes as strings. A line longer than V8's string limit cannot be
 * decoded at all (past 2 GiB, decoding it aborts the process): it is refused, naming the line.
 */
function* linesOf(bytes: Buffer): Generator<string> {
  let start = 0;
  for (let line = 1; start < bytes.length; line++) {
    let end = bytes.indexOf(10, start);
    if (end < 0) end = bytes.length;
    if (end - start > MAX_STRING_BYTES) {
      throw new ForestError({ line }, `the line is ${end - start} bytes, longer than the longest line JSON Lines can hold here (${MAX_STRING_BYTES} bytes, V8's string limit): one tree per line, each shorter`);
    }
    yield bytes.toString('utf8', start, end);
    start = end + 1;
  }
}

function parseJsonForest(text: string): ForestInput {
  let value: unknown;
  try {
    value = parseJsonLenient(text);
  } catch (err) {
    throw new ForestError({}, `not valid JSON: ${(err as Error).message}`);
  }
  return asForestObject(value);
}

function asForestObject(value: unknown): ForestInput {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new ForestError({}, `a JSON forest must be an object {"dim", "trees"}, got ${describeValue(value)}`);
  }
  return value as ForestInput;
}

/** A JSON Lines header line: an object with `dim` and nothing else. */
function isDimLine(value: unknown): value is { dim: number } {
  return value !== null && typeof value === 'object' && !Array.isArray(value) && Object.keys(value).length === 1 && Object.hasOwn(value, 'dim');
}

/**
 * One tree per line, optionally after a first line `{"dim": D}` (what `convert` writes for a
 * forest of no trees, whose dim no embedding carries). `wholeText` (for files named .jsonl)
 * gives the whole input for a hint when a line is not JSON: a single JSON document spread over
 * lines (pretty-printed) parses as a whole, and the error then says so.
 */
function parseJsonLines(lines: Iterable<string>, wholeText?: () => string | undefined): ForestInput {
  const trees: TreeInput[] = [];
  let dim: number | undefined;
  let lineNumber = 0;
  let first = true;
  for (const line of lines) {
    lineNumber++;
    if (line.trim().length === 0) continue;
    let value: unknown;
    try {
      value = parseJsonLenient(line);
    } catch (err) {
      const hint = wholeText !== undefined && isOneJsonDocument(wholeText())
        ? ' (the whole input is one JSON document spread over several lines: JSON Lines needs one tree object per line; name the file .json to read it as one document)'
        : '';
      throw new ForestError({ line: lineNumber, tree: trees.length }, `not valid JSON: ${(err as Error).message}${hint}`);
    }
    if (first && isDimLine(value)) {
      dim = value.dim;
      first = false;
      continue;
    }
    first = false;
    if (value === null || typeof value !== 'object' || Array.isArray(value)) {
      throw new ForestError({ line: lineNumber, tree: trees.length }, `each line must be a tree object {"id", "nodes"}, got ${describeValue(value)}`);
    }
    trees.push(value as TreeInput);
  }
  if (trees.length === 0 && dim === undefined) throw new ForestError({}, 'the input is empty: expected one tree object per line');
  return dim === undefined ? { trees } : { dim, trees };
}

function isOneJsonDocument(text: string | undefined): boolean {
  if (text === undefined || !text.includes('\n')) return false;
  try {
    parseJsonLenient(text);
    return true;
  } catch {
    return false;
  }
}

/**
 * NaN has no JSON spelling, so the token becomes an object with this one key and the reviver
 * turns that object back into NaN. Only an object can collide with it, and a collision yields
 * NaN, which every field rejects, so no input can become a valid number this way. Infinity
 * becomes 1e999999, which JSON.parse itself reads as Infinity. Strings are never touched.
 */
const NAN_KEY = '\u0000trace-alloc:NaN';
const NAN_JSON = `{${JSON.stringify(NAN_KEY)}:0}`;

function reviveNaN(_key: string, value: unknown): unknown {
  if (value === null || typeof value !== 'object' || Array.isArray(value) || !Object.hasOwn(value, NAN_KEY)) return value;
  return Object.keys(value).length === 1 ? NaN : value;
}

/** JSON.parse, plus the non-standard number tokens NaN, Infinity and -Infinity outside strings. */
export function parseJsonLenient(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch (err) {
    if (!/NaN|Infinity/.test(text)) throw err;
  }
  let out = '';
  let last = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const ch = text.charCodeAt(i);
    if (inString) {
      if (ch === 92 /* \ */) i++;
      else if (ch === 34 /* " */) inString = false;
      continue;
    }
    if (ch === 34) { inString = true; continue; }
    for (const [token, replacement] of LENIENT_TOKENS) {
      if (text.startsWith(token, i)) {
        out += `${text.slice(last, i)}${replacement}`;
        i += token.length - 1;
        last = i + 1;
        break;
      }
    }
  }
  out += text.slice(last);
  return JSON.parse(out, reviveNaN);
}

const LENIENT_TOKENS: ReadonlyArray<readonly [string, string]> = [['-Infinity', '-1e999999'], ['Infinity', '1e999999'], ['NaN', NAN_JSON]];
