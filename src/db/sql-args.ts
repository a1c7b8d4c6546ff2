/** Collects positional arguments while SQL text is assembled: `add(value)` returns its `$n`. */
export class SqlArgs {
  readonly values: unknown[] = [];

  add(value: unknown, cast?: string): string {
    this.values.push(value);
    return cast ? `$${this.values.length}::${cast}` : `$${this.values.length}`;
  }
}
