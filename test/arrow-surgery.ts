// Test support: take valid Arrow IPC streams apart into messages and put them back together
// with one thing changed (a batch's declared lengths, a body byte, a missing end marker), the
// way a hostile or broken writer would. apache-arrow's own metadata classes encode the edited
// headers, so everything but the edit stays exactly what a real writer produces.
import { Message, MessageHeader } from 'apache-arrow';
import { BufferRegion, FieldNode, RecordBatch as BatchHeader } from 'apache-arrow/ipc/metadata/message';

export interface Frame {
  /** The flatbuffer metadata, without the 8-byte prefix or padding. */
  metadata: Uint8Array;
  body: Uint8Array;
  message: Message;
}

/** The messages of an Arrow IPC stream, and whether it ended with the end-of-stream marker. */
export function splitStream(bytes: Uint8Array): { frames: Frame[]; eos: boolean } {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const frames: Frame[] = [];
  let at = 0;
  while (at + 8 <= bytes.length) {
    const length = view.getInt32(at + 4, true);
    if (length === 0) return { frames, eos: true };
    const metadata = bytes.slice(at + 8, at + 8 + length);
    const message = Message.decode(metadata);
    const body = bytes.slice(at + 8 + length, at + 8 + length + message.bodyLength);
    frames.push({ metadata, body, message });
    at += 8 + length + message.bodyLength;
  }
  return { frames, eos: false };
}

/** A stream of these messages (metadata padded to 8 bytes), with the end-of-stream marker unless `eos` is false. */
export function joinStream(frames: Frame[], { eos = true } = {}): Uint8Array {
  const parts: Uint8Array[] = [];
  for (const f of frames) {
    const padded = Math.ceil(f.metadata.length / 8) * 8;
    const prefix = new Uint8Array(8 + padded);
    const v = new DataView(prefix.buffer);
    v.setUint32(0, 0xffffffff, true);
    v.setInt32(4, padded, true);
    prefix.set(f.metadata, 8);
    parts.push(prefix, f.body);
  }
  if (eos) parts.push(Uint8Array.of(0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0));
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) { out.set(p, at); at += p.length; }
  return out;
}

export interface BatchEdit { length: number; nodes: { length: number; nullCount: number }[]; buffers: { offset: number; length: number }[] }

/** A record batch message with its header's lengths, nodes or buffers changed by `edit` (the body kept). */
export function editBatch(frame: Frame, edit: (header: BatchEdit) => void): Frame {
  if (frame.message.headerType !== MessageHeader.RecordBatch) throw new Error('not a record batch message');
  const h = frame.message.header() as BatchHeader;
  const header: BatchEdit = {
    length: Number(h.length),
    nodes: h.nodes.map((n) => ({ length: Number(n.length), nullCount: Number(n.nullCount) })),
    buffers: h.buffers.map((b) => ({ offset: Number(b.offset), length: Number(b.length) })),
  };
  edit(header);
  const rebuilt = new BatchHeader(
    BigInt(header.length),
    header.nodes.map((n) => new FieldNode(BigInt(n.length), BigInt(n.nullCount))),
    header.buffers.map((b) => new BufferRegion(b.offset, b.length)),
    null,
  );
  const message = Message.from(rebuilt, frame.body.length);
  const metadata = Message.encode(message);
  return { metadata, body: frame.body, message: Message.decode(metadata) };
}

/** The record batch frames and the buffers of one of them (for body edits). */
export function batchBuffers(frame: Frame): { offset: number; length: number }[] {
  const h = frame.message.header() as BatchHeader;
  return h.buffers.map((b) => ({ offset: Number(b.offset), length: Number(b.length) }));
}

export const isRecordBatch = (f: Frame) => f.message.headerType === MessageHeader.RecordBatch;
export const isDictionaryBatch = (f: Frame) => f.message.headerType === MessageHeader.DictionaryBatch;
