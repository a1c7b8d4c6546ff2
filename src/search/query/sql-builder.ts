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
