/**
 * Search index rows produced for one resource on every write, one array per index table
 * (prisma/schema.prisma). `code` is the SearchParameter code. Written in the same transaction as
 * the resource. Dates are ISO instants (UTC); decimals are strings to keep their precision.
 */
export interface IndexRows {
  token: TokenRow[];
  string: StringRow[];
  date: DateRow[];
  number: NumberRow[];
  quantity: QuantityRow[];
  reference: ReferenceRow[];
  uri: UriRow[];
  composite: CompositeRow[];
}

export interface TokenRow {
  code: string;
  system: string | null;
  value: string | null;
  /** Display text, lower-cased with accents removed, for `:text`. */
  text: string | null;
}

export interface StringRow {
  code: string;
  /** Lower-cased, accents removed: the default (starts-with) and `:contains` matches use it. */
  value: string;
  /** As written, for `:exact`. */
  exact: string;
}

export interface DateRow {
  code: string;
  /** First instant covered (inclusive), or null when open at the start. */
  start: string | null;
  /** Last instant covered (inclusive), or null when open at the end. */
  end: string | null;
}

export interface NumberRow {
  code: string;
  /** The value, or a Range's low (`-Infinity` when it has none). */
  value: string;
  /**
   * A Range's high (`Infinity` when it has none; RiskAssessment `probability`); absent for a
   * decimal or integer, as in QuantityRow. Never below `value`.
   */
  high?: string;
}

export interface QuantityRow {
  code: string;
  /** The value, or a Range's low (`-Infinity` when it has none). */
  value: string;
  system: string | null;
  unit: string | null;
  /**
   * A Range's high (`Infinity` when it has none); absent for a Quantity, whose rows keep the shape
   * (and the search conditions the form) they had before Ranges were indexed. Never below `value`.
   */
  high?: string;
}

export interface ReferenceRow {
  code: string;
  targetType: string | null;
  targetId: string | null;
  /** Absolute or canonical URL when the target is not a local `Type/id`. */
  url: string | null;
}

export interface UriRow {
  code: string;
  value: string;
}

/** Components a composite row holds at most (R4's composites have two or three). */
export const MAX_COMPONENTS = 3;

/** The columns of one component of a composite row; `n` is the component's position (1-based). */
export type ComponentColumn = `${'system' | 'value' | 'number' | 'high' | 'start' | 'end'}${1 | 2 | 3}`;

/**
 * One tuple of a composite parameter (`code-value-quantity`): values of its components taken from
 * the same element (the same Observation.component, the same useContext), component `n` in the
 * columns ending in `n`, laid out by the component's kind:
 *
 * | kind | system | value | number | high | start, end |
 * |---|---|---|---|---|---|
 * | token | system | code | | | |
 * | quantity | system | unit code | value | | |
 * | quantity (a Range) | system | unit code | low | high | |
 * | number | | | value | | |
 * | date | | | | | range |
 * | string | | normalised text | | | |
 * | reference | target type | target id, or the URL | | | |
 * | uri | | uri | | | |
 *
 * A Range open at one end has `-Infinity` as its low or `Infinity` as its high; `high` is null for
 * anything but a Range. An element gives one row per combination of its components' values;
 * unused columns are null.
 */
export type CompositeRow = { code: string } & Record<ComponentColumn, string | null>;

export function emptyIndexRows(): IndexRows {
  return { token: [], string: [], date: [], number: [], quantity: [], reference: [], uri: [], composite: [] };
}
