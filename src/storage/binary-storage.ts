import type { Database, SqlExecutor } from '../db/database.js';
import { rechunk, collect } from './byte-chunks.js';

export interface StoredBinary {
  contentType: string;
  data: Uint8Array;
}

/** A stored object read a chunk at a time: nothing is read until `chunks` is iterated. */
export interface BinaryStream {
  contentType: string;
  /** In bytes: an HTTP answer's Content-Length. */
  size: number;
  chunks: AsyncIterable<Uint8Array>;
}

/**
 * Where the bytes of Binary resources (and other stored files) live, by key. The database store
 * is the default; a file system or S3 store implements the same interface (docs/storage.md).
 * `within`: the transaction the object must join (a transaction Bundle's Binary, a clone, an
 * expunge); a store outside the database treats it as a hint and acts at once.
 */
export interface BinaryStorage {
  /** Writes the object from `source` with bounded memory; a retried write replaces it. Answers its size. */
  putStream(key: string, projectId: string, contentType: string, source: AsyncIterable<Uint8Array> | Iterable<Uint8Array>, within?: SqlExecutor): Promise<number>;
  getStream(key: string): Promise<BinaryStream | undefined>;
  put(key: string, projectId: string, contentType: string, data: Uint8Array, within?: SqlExecutor): Promise<void>;
  get(key: string): Promise<StoredBinary | undefined>;
  delete(key: string, within?: SqlExecutor): Promise<void>;
}

/** Chunks of 512 KiB: a few rows for a typical document, a bounded buffer for a large file. */
export const CHUNK_BYTES = 512 * 1024;

/**
 * Objects in two tables: binary_content (what and how large), binary_chunk (the bytes by key and
 * seq). Chunks are written first and the binary_content row last, so a reader never sees an
 * object whose chunks are still being written; an interrupted write leaves chunks no row names,
 * which the next write of the key replaces. A Binary's bytes are written before its version
 * (repository.ts), so a failed write leaves unreferenced bytes, never a version without bytes.
 * Chunks are written on the adapter (they may join a transaction); the metadata row is read
 * through the Prisma client.
 */
export class DatabaseBinaryStorage implements BinaryStorage {
  constructor(private readonly db: Database) {}

  async putStream(key: string, projectId: string, contentType: string, source: AsyncIterable<Uint8Array> | Iterable<Uint8Array>, within?: SqlExecutor): Promise<number> {
    const sql = within ?? this.db;
    await sql.execute('DELETE FROM binary_content WHERE key = $1', [key]);
    await sql.execute('DELETE FROM binary_chunk WHERE key = $1', [key]);
    let seq = 0;
    let size = 0;
    for await (const chunk of rechunk(source, CHUNK_BYTES)) {
      await sql.execute('INSERT INTO binary_chunk (key, seq, data) VALUES ($1, $2, $3)', [key, seq++, chunk]);
      size += chunk.byteLength;
    }
    await sql.execute('INSERT INTO binary_content (key, "projectId", "contentType", size) VALUES ($1, $2, $3, $4)', [key, projectId, contentType, size]);
    return size;
  }

  async getStream(key: string): Promise<BinaryStream | undefined> {
    const row = await this.db.prisma.binaryContent.findUnique({ where: { key }, select: { contentType: true, size: true } });
    if (!row) return undefined;
    return { contentType: row.contentType, size: row.size, chunks: this.chunksOf(key, row.size) };
  }

  async put(key: string, projectId: string, contentType: string, data: Uint8Array, within?: SqlExecutor): Promise<void> {
    await this.putStream(key, projectId, contentType, [data], within);
  }

  async get(key: string): Promise<StoredBinary | undefined> {
    const stream = await this.getStream(key);
    return stream && { contentType: stream.contentType, data: await collect(stream.chunks, stream.size) };
  }

  async delete(key: string, within?: SqlExecutor): Promise<void> {
    const sql = within ?? this.db;
    await sql.execute('DELETE FROM binary_content WHERE key = $1', [key]);
    await sql.execute('DELETE FROM binary_chunk WHERE key = $1', [key]);
  }

  /**
   * One chunk per statement, each read only when the reader asks for it. As base64 text: the
   * driver adapters hand `bytea` over as an array of numbers, eight bytes or more per byte.
   */
  private async *chunksOf(key: string, size: number): AsyncGenerator<Uint8Array> {
    let read = 0;
    for (let seq = 0; read < size; seq++) {
      const [row] = await this.db.query<{ data: string }>(
        `SELECT encode(data, 'base64') AS data FROM binary_chunk WHERE key = $1 AND seq = $2`,
        [key, seq],
        { planOnce: true },
      );
      if (!row) throw new Error(`Binary object ${key} lacks chunk ${seq} (${read} of ${size} bytes read)`);
      const chunk = Buffer.from(row.data, 'base64');
      read += chunk.byteLength;
      yield chunk;
    }
  }
}

/**
 * A stored object copied in the database under a new key (Project/$clone, in its transaction): the
 * bytes never leave the database. The clone copies rows of the database store only.
 */
export async function copyBinary(tx: SqlExecutor, fromKey: string, toKey: string, projectId: string): Promise<void> {
  await tx.execute('INSERT INTO binary_chunk (key, seq, data) SELECT $1, seq, data FROM binary_chunk WHERE key = $2', [toKey, fromKey]);
  await tx.execute(
    `INSERT INTO binary_content (key, "projectId", "contentType", size) SELECT $1, $2, "contentType", size FROM binary_content WHERE key = $3`,
    [toKey, projectId, fromKey],
  );
}

export function binaryKey(projectId: string, id: string, versionId: string): string {
  return `${projectId}/${id}/${versionId}`;
}
