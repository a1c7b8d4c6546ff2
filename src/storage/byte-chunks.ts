/**
 * Pieces of any sizes regrouped into chunks of exactly `size` bytes (the last one shorter):
 * at most one chunk is held at a time, whatever the source's pieces.
 */
export async function* rechunk(source: AsyncIterable<Uint8Array> | Iterable<Uint8Array>, size: number): AsyncGenerator<Uint8Array> {
  let buffer = new Uint8Array(size);
  let filled = 0;
  for await (const piece of source) {
    let offset = 0;
    // A whole chunk inside the piece goes out as a view of it, without a copy.
    while (filled === 0 && piece.byteLength - offset >= size) {
      yield piece.subarray(offset, offset + size);
      offset += size;
    }
    while (offset < piece.byteLength) {
      const taken = Math.min(size - filled, piece.byteLength - offset);
      buffer.set(piece.subarray(offset, offset + taken), filled);
      filled += taken;
      offset += taken;
      if (filled === size) {
        yield buffer;
        buffer = new Uint8Array(size);
        filled = 0;
      }
    }
  }
  if (filled > 0) yield buffer.subarray(0, filled);
}

/** Every chunk in one array of the known size. */
export async function collect(chunks: AsyncIterable<Uint8Array>, size: number): Promise<Uint8Array> {
  const whole = new Uint8Array(size);
  let offset = 0;
  for await (const chunk of chunks) {
    whole.set(chunk, offset);
    offset += chunk.byteLength;
  }
  return whole;
}
