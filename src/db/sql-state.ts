/**
 * What a database error says, however it reached us: wrapped by a driver adapter (Prisma's error,
 * PostgreSQL's code in a cause's `originalCode` or `code`) or as pg gives it (statements sent
 * straight to the pool: the SQLSTATE in `code`, a socket's failure as Node's error code).
 */

/** PostgreSQL's SQLSTATE of `error` (five characters), or undefined when it names none. */
export function sqlStateOf(error: unknown): string | undefined {
  let current: unknown = error;
  for (let depth = 0; depth < 4 && current && typeof current === 'object'; depth++) {
    const record = current as { code?: unknown; cause?: unknown; originalCode?: unknown };
    if (typeof record.originalCode === 'string') return record.originalCode;
    if (typeof record.code === 'string' && /^[0-9A-Z]{5}$/.test(record.code)) return record.code;
    current = record.cause;
  }
  return undefined;
}

const LOST_CONNECTION_CODES = new Set(['ECONNRESET', 'ECONNREFUSED', 'EPIPE', 'ETIMEDOUT']);

/** Whether `error` is a connection that could not be made or was lost (no SQLSTATE: the socket's code, or pg's message). */
export function isLostConnection(error: unknown): boolean {
  let current: unknown = error;
  for (let depth = 0; depth < 4 && current && typeof current === 'object'; depth++) {
    const record = current as { code?: unknown; cause?: unknown; message?: unknown };
    if (typeof record.code === 'string' && LOST_CONNECTION_CODES.has(record.code)) return true;
    if (typeof record.message === 'string' && /Connection terminated|connection is closed/i.test(record.message)) return true;
    current = record.cause;
  }
  return false;
}
