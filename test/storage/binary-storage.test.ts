import { randomBytes, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { Database } from '../../src/db/database.js';
import { migrate } from '../../src/db/migrate.js';
import { CHUNK_BYTES, DatabaseBinaryStorage } from '../../src/storage/binary-storage.js';
import { testEnv } from '../helpers/server.js';

/** The database store's streams: what a bulk export file or a large Binary goes through. */
describe('DatabaseBinaryStorage streams', () => {
  let db: Database;
  let storage: DatabaseBinaryStorage;
  const prefix = `binary-storage-test-${randomUUID()}`;

  beforeAll(async () => {
    db = await Database.open(loadConfig(testEnv()));
    await migrate(db);
    storage = new DatabaseBinaryStorage(db);
  });

  afterAll(async () => {
    await db.execute('DELETE FROM binary_content WHERE key LIKE $1', [`${prefix}%`]);
    await db.execute('DELETE FROM binary_chunk WHERE key LIKE $1', [`${prefix}%`]);
    await db.close();
  });

  async function* pieces(bytes: Buffer, size: number): AsyncGenerator<Uint8Array> {
    for (let offset = 0; offset < bytes.byteLength; offset += size) yield bytes.subarray(offset, offset + size);
  }

  async function chunkSizes(key: string): Promise<number[]> {
    const rows = await db.query<{ n: number }>('SELECT length(data) AS n FROM binary_chunk WHERE key = $1 ORDER BY seq', [key]);
    return rows.map((row) => Number(row.n));
  }

  it('writes a stream of small pieces as chunks of the store size and reads it back in order', async () => {
    const key = `${prefix}/pieces`;
    const bytes = randomBytes(CHUNK_BYTES * 2 + 100);
    expect(await storage.putStream(key, 'p', 'application/x-ndjson', pieces(bytes, 1000))).toBe(bytes.byteLength);
    expect(await chunkSizes(key)).toEqual([CHUNK_BYTES, CHUNK_BYTES, 100]);
    const stream = (await storage.getStream(key))!;
    expect({ contentType: stream.contentType, size: stream.size }).toEqual({ contentType: 'application/x-ndjson', size: bytes.byteLength });
    const read: Uint8Array[] = [];
    for await (const chunk of stream.chunks) read.push(chunk);
    expect(read.map((chunk) => chunk.byteLength)).toEqual([CHUNK_BYTES, CHUNK_BYTES, 100]);
    expect(Buffer.concat(read).equals(bytes)).toBe(true);
  });

  it('replaces every chunk of an object written again under its key', async () => {
    const key = `${prefix}/again`;
    await storage.putStream(key, 'p', 'text/plain', pieces(randomBytes(CHUNK_BYTES * 3), CHUNK_BYTES));
    await storage.put(key, 'p', 'text/plain', Buffer.from('short'));
    expect(await chunkSizes(key)).toEqual([5]);
    expect(Buffer.from((await storage.get(key))!.data).toString()).toBe('short');
  });

  it('forgets an object and its chunks on delete', async () => {
    const key = `${prefix}/gone`;
    await storage.putStream(key, 'p', 'text/plain', pieces(randomBytes(CHUNK_BYTES + 1), 4096));
    await storage.delete(key);
    expect(await storage.getStream(key)).toBeUndefined();
    expect(await chunkSizes(key)).toEqual([]);
  });
});
