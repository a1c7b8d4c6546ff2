import type { SqlExecutor } from '../db/database.js';

export interface StoredBinary {
  contentType: string;
  data: Uint8Array;
}

/**
 * Where the bytes of Binary resources live. The database store is the default; a file system or
 * S3 store implements the same three methods.
 */
export interface BinaryStorage {
  put(key: string, projectId: string, contentType: string, data: Uint8Array): Promise<void>;
  get(key: string): Promise<StoredBinary | undefined>;
  delete(key: string): Promise<void>;
}

export class DatabaseBinaryStorage implements BinaryStorage {
  constructor(private readonly db: SqlExecutor) {}

  async put(key: string, projectId: string, contentType: string, data: Uint8Array): Promise<void> {
    await this.db.execute(
      `INSERT INTO binary_content (key, "projectId", "contentType", size, data) VALUES ($1, $2, $3, $4, $5)
       ON CONFLICT (key) DO UPDATE SET "contentType" = EXCLUDED."contentType", size = EXCLUDED.size, data = EXCLUDED.data`,
      [key, projectId, contentType, data.byteLength, data],
    );
  }

  async get(key: string): Promise<StoredBinary | undefined> {
    const rows = await this.db.query<{ contentType: string; data: unknown }>(
      'SELECT "contentType", data FROM binary_content WHERE key = $1',
      [key],
    );
    if (rows.length === 0) return undefined;
    return { contentType: rows[0].contentType, data: toBytes(rows[0].data) };
  }

  async delete(key: string): Promise<void> {
    await this.db.execute('DELETE FROM binary_content WHERE key = $1', [key]);
  }
}

/** Adapters return bytea as Buffer, Uint8Array or a byte array depending on the driver. */
function toBytes(value: unknown): Uint8Array {
  if (value instanceof Uint8Array) return value;
  if (Array.isArray(value)) return Uint8Array.from(value as number[]);
  if (typeof value === 'string' && value.startsWith('\\x')) return Buffer.from(value.slice(2), 'hex');
  throw new Error('Unexpected bytea value from the database driver');
}

export function binaryKey(projectId: string, id: string, versionId: string): string {
  return `${projectId}/${id}/${versionId}`;
}
