import pg from 'pg';

/**
 * Server-side prepared statements for PostgreSQL, as pgjdbc does by default: a statement text the
 * server sends again is given a name, so each connection parses and analyses it once and then only
 * binds and executes it (with pgbench on the subject-and-code search of 1,000,000 Observations,
 * named statements run more per second than unnamed ones; measured: see bench/RESULTS.md).
 *
 * Each execution is still planned for its values (the main pool sets plan_cache_mode to
 * force_custom_plan; statements driven by a key go to a pool that plans once, see database.ts):
 * after five executions PostgreSQL may otherwise switch to a generic plan,
 * which estimates every value as an average one and misreads skew: a page of the Observations of
 * a code shared by 50,000 is far slower with the generic plan (it aggregates every match) than
 * planned for the value (measured: see bench/RESULTS.md).
 *
 * Bounded: at most `perConnection` names per connection (later texts run unnamed there), and
 * connections are replaced after an hour, so long-running servers prepare what is frequent now.
 */
export class StatementNames {
  private readonly uses = new Map<string, number>();
  private readonly names = new Map<string, string>();

  /** Sent twice: worth a name (one-off statements are not prepared). */
  private static readonly USES_BEFORE_NAMING = 2;
  /** Distinct unnamed texts counted before the counts start over (bounds the memory they take). */
  private static readonly COUNTED_TEXTS = 10_000;

  /** The name of `text`, or undefined while it has not been seen often enough. */
  nameFor(text: string): string | undefined {
    const name = this.names.get(text);
    if (name !== undefined) return name;
    const uses = (this.uses.get(text) ?? 0) + 1;
    if (uses < StatementNames.USES_BEFORE_NAMING) {
      if (this.uses.size >= StatementNames.COUNTED_TEXTS) this.uses.clear();
      this.uses.set(text, uses);
      return undefined;
    }
    this.uses.delete(text);
    const named = `flint_${this.names.size + 1}`;
    this.names.set(text, named);
    return named;
  }
}

/** The part of a query config this module reads and sets (pg's own types are overloads on `any`). */
interface NameableConfig {
  text?: unknown;
  name?: unknown;
  values?: unknown;
  submit?: unknown;
}

/**
 * A pg Client class that names the statements `names` picks, up to `perConnection` per connection.
 * Only statements with parameters: they are the repeated ones worth parsing once (BEGIN, COMMIT
 * and the like stay on the simple protocol).
 */
export function preparingClient(names: StatementNames, perConnection: number): typeof pg.Client {
  const NamedQuery = layoutRememberingQuery(new Map());
  return class PreparingClient extends pg.Client {
    private readonly prepared = new Set<string>();

    // pg's query() is a set of overloads over untyped configs (an untyped boundary): `any` here.
    override query(config: any, ...rest: any[]): any {
      if (isNameable(config, rest[0])) {
        const name = names.nameFor(config.text as string);
        if (name !== undefined && (this.prepared.has(name) || this.prepared.size < perConnection)) {
          this.prepared.add(name);
          const callback: unknown = rest[1];
          if (rest[0] === undefined && typeof callback === 'function' && onlyTextAndValues(config)) return super.query(namedQuery(NamedQuery, config, name, callback));
          return (super.query as (...args: unknown[]) => unknown)({ ...config, name }, ...rest);
        }
      }
      return (super.query as (...args: unknown[]) => unknown)(config, ...rest);
    }
  };
}

/** What pg's row description says of a column (pg-protocol's Field), as far as a layout depends on it. */
interface FieldLike {
  readonly name: string;
  readonly dataTypeID: number;
  readonly format: string;
}

/** The parts of pg's Query and Result (pg/lib/query.js, result.js) a remembered layout sets. */
interface QueryInternals {
  name?: string;
  _accumulateRows: boolean;
  _result: { fields: readonly FieldLike[]; _parsers: unknown; _prebuiltEmptyResultObject: unknown };
}

/** How pg reads a statement's rows: its columns, a parser for each, and the empty row it copies for each row. */
interface RowLayout {
  readonly fields: readonly FieldLike[];
  readonly parsers: unknown;
  readonly emptyRow: unknown;
}

type QueryClass = new (text: unknown, values: unknown, callback: unknown) => pg.Query & { name?: string };

/**
 * pg's Query, made to remember how it read the rows of each named statement. PostgreSQL describes
 * the columns again at every execution, and pg builds the rows' layout from each description anew:
 * a parser looked up per column and an empty row built key by key in dictionary mode, with
 * every column name a new string that V8 must look up in its string table (together more than
 * the rest of pg's work on a read by id, in profiles). A description with the same columns as the
 * statement's last (names, types and formats) takes that layout again; any other is read as pg
 * reads it and becomes the statement's layout. Only for statements of one command, with a callback
 * (rows are then always kept), which namedQuery makes.
 */
function layoutRememberingQuery(layouts: Map<string, RowLayout>): QueryClass {
  // pg's type declarations leave out the message handlers a Query implements.
  const Query = pg.Query as unknown as new (text: unknown, values: unknown, callback: unknown) => { handleRowDescription(message: { fields: FieldLike[] }): void };
  return class LayoutRememberingQuery extends Query {
    override handleRowDescription(message: { fields: FieldLike[] }): void {
      const query = this as unknown as QueryInternals;
      const name = query.name!;
      const known = layouts.get(name);
      if (known === undefined || !sameFields(known.fields, message.fields)) {
        super.handleRowDescription(message);
        const result = query._result;
        // A pg whose Result no longer keeps these parts is read as it reads itself, never from a stale layout.
        if (Array.isArray(result._parsers) && typeof result._prebuiltEmptyResultObject === 'object' && result._prebuiltEmptyResultObject !== null) {
          layouts.set(name, { fields: result.fields, parsers: result._parsers, emptyRow: result._prebuiltEmptyResultObject });
        }
        return;
      }
      const result = query._result;
      result.fields = known.fields;
      result._parsers = known.parsers;
      result._prebuiltEmptyResultObject = known.emptyRow;
      query._accumulateRows = true;
    }
  } as unknown as QueryClass;
}

function sameFields(known: readonly FieldLike[], fields: readonly FieldLike[]): boolean {
  if (known.length !== fields.length) return false;
  for (let i = 0; i < fields.length; i++) {
    const a = known[i];
    const b = fields[i];
    if (a.name !== b.name || a.dataTypeID !== b.dataTypeID || a.format !== b.format) return false;
  }
  return true;
}

/**
 * A statement of text and values as pg's Query made from the text itself: pg copies every config
 * object it is given, property descriptors and all (twice with the copy that adds the name), which
 * showed in profiles of reads by id; a Query object is taken as it is. Only for configs with
 * nothing else (rowMode and types shape the Query's result when it is made).
 */
function namedQuery(Query: QueryClass, config: NameableConfig, name: string, callback: unknown): pg.Query {
  const query = new Query(config.text, config.values, callback);
  query.name = name;
  return query;
}

function onlyTextAndValues(config: object): boolean {
  let keys = 0;
  for (const key in config) if (++keys > 2 || (key !== 'text' && key !== 'values')) return false;
  return true;
}

function isNameable(config: unknown, values: unknown): config is NameableConfig {
  if (typeof config !== 'object' || config === null) return false;
  const c = config as NameableConfig;
  if (typeof c.text !== 'string' || c.name !== undefined || typeof c.submit === 'function') return false;
  const args = Array.isArray(values) ? values : c.values;
  return Array.isArray(args) && args.length > 0;
}
