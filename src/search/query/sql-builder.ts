/** Collects positional arguments while SQL text is assembled: `add(value)` returns its `$n`. */
export class SqlArgs {
  readonly values: unknown[] = [];

  add(value: unknown, cast?: string): string {
    this.values.push(value);
    return cast ? `$${this.values.length}::${cast}` : `$${this.values.length}`;
  }
}

/** Escapes `%`, `_` and `\` for a LIKE pattern (the default escape character is `\`). */
export function likeEscape(text: string): string {
  return text.replace(/[\\%_]/g, (char) => `\\${char}`);
}

/**
 * `column` starts with `prefix`. PostgreSQL turns `LIKE 'abc%'` into an index range only when the
 * pattern is a constant, which it is not in a prepared statement's generic plan: the range is
 * written out (text_pattern_ops operators, as the string and uri indexes use) and LIKE stays as
 * the exact test.
 */
export function startsWithSql(column: string, prefix: string, args: SqlArgs): string {
  const like = `${column} LIKE ${args.add(`${likeEscape(prefix)}%`)}`;
  if (prefix === '') return like;
  const upper = prefixUpperBound(prefix);
  const below = upper === undefined ? '' : ` AND ${column} ~<~ ${args.add(upper)}`;
  return `${column} ~>=~ ${args.add(prefix)}${below} AND ${like}`;
}

/**
 * The least string above every string that starts with `prefix`, in byte (UTF-8, so code point)
 * order: the prefix with its last character incremented; none after U+10FFFF.
 */
function prefixUpperBound(prefix: string): string | undefined {
  const chars = [...prefix];
  let next = chars.pop()!.codePointAt(0)! + 1;
  if (next >= 0xd800 && next <= 0xdfff) next = 0xe000;
  if (next > 0x10ffff) return undefined;
  return chars.join('') + String.fromCodePoint(next);
}

/** Project scope of a resource alias: every project (super admin) or the listed ones. */
export interface Scope {
  /** undefined: every project. */
  projectIds: readonly string[] | undefined;
}

export function scopeSql(alias: string, column: string, scope: Scope, args: SqlArgs): string | undefined {
  if (scope.projectIds === undefined) return undefined;
  if (scope.projectIds.length === 1) return `${alias}."${column}" = ${args.add(scope.projectIds[0])}`;
  if (scope.projectIds.length === 0) return 'false';
  return `${alias}."${column}" IN (SELECT json_array_elements_text(${args.add(JSON.stringify(scope.projectIds))}::json))`;
}
