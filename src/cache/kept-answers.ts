/** The store of kept search answers (src/cache/search-cache.ts says when they stay valid). */

export interface Entry<T> {
  readonly value: T;
  readonly keys: readonly string[];
  readonly at: number;
  readonly expires: number;
  /** What it counts against the store's limit (rows of a page). */
  readonly weight: number;
}

/** Answers by statement, least recently used first, within a number of entries and a total weight. */
export class Kept<T> {
  private readonly entries = new Map<string, Entry<T>>();
  private weight = 0;

  constructor(
    private readonly maxEntries: number,
    private readonly maxWeight: number,
  ) {}

  get(statement: string, valid: (entry: Entry<T>) => boolean, now: number): T | undefined {
    const entry = this.entries.get(statement);
    if (!entry) return undefined;
    this.remove(statement, entry);
    if (entry.expires <= now || !valid(entry)) return undefined;
    // Least recently used goes first: this one goes back at the end.
    this.add(statement, entry);
    return entry.value;
  }

  set(statement: string, entry: Entry<T>): void {
    const old = this.entries.get(statement);
    if (old) this.remove(statement, old);
    this.add(statement, entry);
    for (const [oldest, first] of this.entries) {
      if (this.entries.size <= this.maxEntries && this.weight <= this.maxWeight) break;
      this.remove(oldest, first);
    }
  }

  clear(): void {
    this.entries.clear();
    this.weight = 0;
  }

  private add(statement: string, entry: Entry<T>): void {
    this.entries.set(statement, entry);
    this.weight += entry.weight;
  }

  private remove(statement: string, entry: Entry<T>): void {
    this.entries.delete(statement);
    this.weight -= entry.weight;
  }
}
