import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readCredential, writeCredential } from '../../src/auth/accounts.js';
import { loadConfig } from '../../src/config.js';
import { Database, toInstant } from '../../src/db/database.js';
import { migrate } from '../../src/db/migrate.js';
import { DatabaseBinaryStorage } from '../../src/storage/binary-storage.js';
import { testEnv } from '../helpers/server.js';

/**
 * The generated Prisma client over the database the tests run on (the embedded PGlite through its
 * worker, or PostgreSQL through @prisma/adapter-pg): the two adapters hand values over in
 * different forms, and Prisma's model types must come out the same on both.
 */
describe(`Prisma client on ${process.env.DATABASE_URL ? 'PostgreSQL' : 'PGlite'}`, () => {
  let db: Database;
  const prefix = `prisma-test-${randomUUID()}`;

  beforeAll(async () => {
    db = await Database.open(loadConfig(testEnv()));
    await migrate(db);
  });

  afterAll(async () => {
    await db.prisma.authCredential.deleteMany({ where: { id: { startsWith: prefix } } });
    await db.prisma.binaryContent.deleteMany({ where: { key: { startsWith: prefix } } });
    await db.prisma.binaryChunk.deleteMany({ where: { key: { startsWith: prefix } } });
    await db.prisma.terminologySystem.deleteMany({ where: { resourceId: { startsWith: prefix } } });
    await db.close();
  });

  it('reads and writes timestamps as the instants the adapter path reads', async () => {
    const id = `${prefix}/time`;
    const at = new Date('2026-03-04T05:06:07.891Z');
    await db.prisma.authCredential.create({ data: { id, projectId: 'p', hash: 'h', updatedAt: at } });
    const row = await db.prisma.authCredential.findUniqueOrThrow({ where: { id } });
    expect(row.updatedAt).toBeInstanceOf(Date);
    expect(row.updatedAt.toISOString()).toBe(at.toISOString());
    const [raw] = await db.query<{ updatedAt: unknown }>('SELECT "updatedAt" FROM auth_credential WHERE id = $1', [id]);
    expect(toInstant(raw.updatedAt)).toBe(at.toISOString());

    // Written by SQL (with an offset, and by the database clock), read by Prisma.
    await db.execute(`UPDATE auth_credential SET "updatedAt" = '2026-03-04T07:06:07.123+02:00' WHERE id = $1`, [id]);
    expect((await db.prisma.authCredential.findUniqueOrThrow({ where: { id } })).updatedAt.toISOString()).toBe('2026-03-04T05:06:07.123Z');
    const before = Date.now();
    await db.execute('UPDATE auth_credential SET "updatedAt" = now() WHERE id = $1', [id]);
    const now = (await db.prisma.authCredential.findUniqueOrThrow({ where: { id } })).updatedAt.getTime();
    expect(Math.abs(now - before)).toBeLessThan(60_000);
  });

  it('upserts credentials, and keeps an existing one when asked to', async () => {
    const id = `${prefix}/credential`;
    expect(await readCredential(db, id)).toBeUndefined();
    expect(await writeCredential(db, { id, projectId: 'p', hash: 'first', sealed: 'sealed' }, true)).toBe(true);
    expect(await writeCredential(db, { id, projectId: 'p', hash: 'second', sealed: null }, true)).toBe(false);
    expect(await readCredential(db, id)).toEqual({ id, projectId: 'p', hash: 'first', sealed: 'sealed' });
    await Promise.all([
      writeCredential(db, { id, projectId: 'q', hash: 'third', sealed: null }),
      writeCredential(db, { id, projectId: 'q', hash: 'third', sealed: null }),
    ]);
    expect(await readCredential(db, id)).toEqual({ id, projectId: 'q', hash: 'third', sealed: null });
  });

  it('stores every byte value of a Binary, and reads bytes written by SQL', async () => {
    const storage = new DatabaseBinaryStorage(db);
    const data = Uint8Array.from({ length: 512 }, (_, i) => i % 256);
    await storage.put(`${prefix}/bytes`, 'p', 'application/octet-stream', data);
    const stored = await storage.get(`${prefix}/bytes`);
    expect(stored?.contentType).toBe('application/octet-stream');
    expect(stored?.data).toBeInstanceOf(Uint8Array);
    expect(Array.from(stored!.data)).toEqual(Array.from(data));
    // A slice of a larger buffer: only its own bytes are stored.
    await storage.put(`${prefix}/bytes`, 'p', 'text/plain', Buffer.from('xxhello').subarray(2));
    expect(Buffer.from((await storage.get(`${prefix}/bytes`))!.data).toString()).toBe('hello');
    expect((await db.prisma.binaryContent.findUniqueOrThrow({ where: { key: `${prefix}/bytes` } })).size).toBe(5);

    await db.execute('INSERT INTO binary_chunk (key, seq, data) VALUES ($1, 0, $2)', [`${prefix}/raw`, new Uint8Array([0, 92, 255])]);
    await db.execute('INSERT INTO binary_content (key, "projectId", "contentType", size) VALUES ($1, $2, $3, $4)', [`${prefix}/raw`, 'p', 'application/octet-stream', 3]);
    expect(Array.from((await storage.get(`${prefix}/raw`))!.data)).toEqual([0, 92, 255]);
    await storage.delete(`${prefix}/raw`);
    expect(await storage.get(`${prefix}/raw`)).toBeUndefined();
  });

  it('reads bigint, uuid and json columns', async () => {
    const [raw] = await db.query<{ revision: string }>('SELECT revision::text AS revision FROM terminology_revision WHERE id = 1');
    const revision = await db.prisma.terminologyRevision.findUniqueOrThrow({ where: { id: 1 } });
    expect(typeof revision.revision).toBe('bigint');
    expect(revision.revision >= BigInt(raw.revision)).toBe(true);

    const systemId = randomUUID();
    const resourceId = `${prefix}-codesystem`;
    const properties = [{ code: 'parent', type: 'code' }, { code: 'note', description: 'ünïcode "quoted"', type: 'string' }];
    await db.execute(
      `INSERT INTO terminology_system (id, "projectId", url, version, "resourceId", name, properties) VALUES ($1::uuid, 'p', 'http://example.org/cs', '', $2, 'Name', $3::json)`,
      [systemId, resourceId, JSON.stringify(properties)],
    );
    const system = await db.prisma.terminologySystem.findUnique({
      where: { resourceId },
      select: { id: true, url: true, version: true, name: true, properties: true, caseSensitive: true },
    });
    expect(system).toEqual({ id: systemId, url: 'http://example.org/cs', version: '', name: 'Name', properties, caseSensitive: true });
  });

  it('counts its statements with the adapter path, and a call waits out an open transaction', async () => {
    const before = db.statementCount;
    await readCredential(db, `${prefix}/none`);
    expect(db.statementCount - before).toBe(1);

    const id = `${prefix}/in-transaction`;
    let read: Promise<unknown> | undefined;
    await db.transaction(async (tx) => {
      await tx.execute('INSERT INTO auth_credential (id, "projectId", hash) VALUES ($1, $2, $3)', [id, 'p', 'h']);
      // Outside the transaction: on PGlite (one connection) it runs once the transaction has ended.
      read = readCredential(db, id);
    });
    await read;
    expect(await readCredential(db, id)).toMatchObject({ id, hash: 'h' });
  });
});
