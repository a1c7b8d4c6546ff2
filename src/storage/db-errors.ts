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
