import type { Database, SqlExecutor } from '../db/database.js';
import { Prisma } from '../generated/prisma/client.js';

export interface StoredBinary {
  contentType: string;
  data: Uint8Array;
}

/**
 * Where the bytes of Binary resources live. The database store is the default; a file system or
 * S3 store implements the same three methods.
 */
export interface BinaryStorage {
  /** `within`: the transaction the Binary's version is written in, when the bytes must join it (a transaction Bundle). */
  put(key: string, projectId: string, contentType: string, data: Uint8Array, within?: SqlExecutor): Promise<void>;
  get(key: string): Promise<StoredBinary | undefined>;
  delete(key: string): Promise<void>;
}

/**
 * Bytes in the binary_content table, through the generated Prisma client (src/db/database.ts): a
 * Binary's bytes are written before its version (repository.ts), outside the version's
 * transaction, and read once per Binary read, not per resource read or search. Project/$clone
 * copies rows in its own transaction, on the adapter (admin/project-clone.ts).
 */
export class DatabaseBinaryStorage implements BinaryStorage {
  constructor(private readonly db: Database) {}

  /**
   * A key names one version's bytes, so it is new every time but for a retried write: an insert,
   * then an update if the key was taken (an upsert would send the bytes twice).
   */
  async put(key: string, projectId: string, contentType: string, data: Uint8Array, within?: SqlExecutor): Promise<void> {
    if (within) return putWithin(within, key, projectId, contentType, data);
    const fields = { contentType, size: data.byteLength, data: overArrayBuffer(data) };
    try {
      await this.db.prisma.binaryContent.create({ data: { key, projectId, ...fields }, select: { key: true } });
    } catch (error) {
      if (!(error instanceof Prisma.PrismaClientKnownRequestError && error.code === 'P2002')) throw error;
      await this.db.prisma.binaryContent.update({ where: { key }, data: fields, select: { key: true } });
    }
  }

  async get(key: string): Promise<StoredBinary | undefined> {
    const row = await this.db.prisma.binaryContent.findUnique({ where: { key }, select: { contentType: true, data: true } });
    return row ?? undefined;
  }

  async delete(key: string): Promise<void> {
    await this.db.prisma.binaryContent.deleteMany({ where: { key } });
  }
}

/**
 * The same row written on an open transaction's connection: Prisma calls never join our
 * transactions, and on the embedded database one would wait for the transaction to end.
 */
async function putWithin(tx: SqlExecutor, key: string, projectId: string, contentType: string, data: Uint8Array): Promise<void> {
  await tx.execute(
    `INSERT INTO binary_content (key, "projectId", "contentType", size, data) VALUES ($1, $2, $3, $4, $5)
     ON CONFLICT (key) DO UPDATE SET "contentType" = EXCLUDED."contentType", size = EXCLUDED.size, data = EXCLUDED.data`,
    [key, projectId, contentType, data.byteLength, data],
  );
}

/** Prisma's Bytes is a Uint8Array over an ArrayBuffer; copied only when over a SharedArrayBuffer. */
function overArrayBuffer(data: Uint8Array): Uint8Array<ArrayBuffer> {
  return data.buffer instanceof ArrayBuffer ? (data as Uint8Array<ArrayBuffer>) : new Uint8Array(data);
}

export function binaryKey(projectId: string, id: string, versionId: string): string {
  return `${projectId}/${id}/${versionId}`;
}
