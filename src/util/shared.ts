type TypedArray = Int8Array | Uint8Array | Int16Array | Uint16Array | Int32Array | Uint32Array | Float32Array | Float64Array;
type TypedArrayConstructor<T extends TypedArray> = { new (buffer: ArrayBufferLike, byteOffset?: number, length?: number): T; new (length: number): T; BYTES_PER_ELEMENT: number };

/** Whether this runtime has SharedArrayBuffer (Node does; browsers only when cross-origin isolated). */
export const HAS_SHARED_MEMORY = typeof SharedArrayBuffer === 'function';

/**
 * A zeroed typed array over a SharedArrayBuffer where the runtime has one (else an ordinary
 * one). Packed forests are allocated this way so the CPU scorer's worker threads read them in
 * place: copying W1's 186 MiB into shared memory per call would cost half a single-threaded
 * scoring.
 */
export function sharedArray<T extends TypedArray>(Ctor: TypedArrayConstructor<T>, length: number): T {
  if (!HAS_SHARED_MEMORY) return new Ctor(length);
  return new Ctor(new SharedArrayBuffer(length * Ctor.BYTES_PER_ELEMENT), 0, length);
}

export function isShared(view: ArrayBufferView): boolean {
  return HAS_SHARED_MEMORY && view.buffer instanceof SharedArrayBuffer;
}

/** `view` itself when it is over shared memory, else a shared copy of it. */
export function toShared<T extends TypedArray>(view: T): T {
  if (isShared(view)) return view;
  const copy = sharedArray(view.constructor as TypedArrayConstructor<T>, view.length);
  copy.set(view as never);
  return copy;
}
