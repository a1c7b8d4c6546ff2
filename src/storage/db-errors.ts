/** True for PostgreSQL's unique_violation (23505), however the driver adapter wrapped it. */
export function isUniqueViolation(error: unknown): boolean {
  return sqlStateOf(error) === '23505';
}

function sqlStateOf(error: unknown): string | undefined {
  let current: unknown = error;
  for (let depth = 0; depth < 4 && current && typeof current === 'object'; depth++) {
    const record = current as { code?: unknown; cause?: unknown; originalCode?: unknown };
    if (typeof record.originalCode === 'string') return record.originalCode;
    if (typeof record.code === 'string' && /^[0-9A-Z]{5}$/.test(record.code)) return record.code;
    current = record.cause;
  }
  return undefined;
}

/** True for PostgreSQL's invalid_regular_expression (2201B): a pattern that does not compile. */
export function isInvalidRegularExpression(error: unknown): boolean {
  return sqlStateOf(error) === '2201B';
}

/**
 * SQLSTATE classes a later attempt may not meet: connection failures (08), serialization failures
 * and deadlocks (40001, 40P01), too many connections (53300), an administrator's or a crash's
 * shutdown (57P01-57P03); and a connection the driver saw drop.
 */
const TRANSIENT_STATES = /^(08...|40001|40P01|53300|57P0[123])$/;
const TRANSIENT_CODES = new Set(['ECONNRESET', 'ECONNREFUSED', 'EPIPE', 'ETIMEDOUT']);

/** True for a database error that trying again later may not meet (see TRANSIENT_STATES). */
export function isTransientDatabaseError(error: unknown): boolean {
  const state = sqlStateOf(error);
  if (state !== undefined) return TRANSIENT_STATES.test(state);
  let current: unknown = error;
  for (let depth = 0; depth < 4 && current && typeof current === 'object'; depth++) {
    const record = current as { code?: unknown; cause?: unknown; message?: unknown };
    if (typeof record.code === 'string' && TRANSIENT_CODES.has(record.code)) return true;
    if (typeof record.message === 'string' && /Connection terminated|connection is closed/i.test(record.message)) return true;
    current = record.cause;
  }
  return false;
}
