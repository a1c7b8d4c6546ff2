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
  return class PreparingClient extends pg.Client {
    private readonly prepared = new Set<string>();

    // pg's query() is a set of overloads over untyped configs (an untyped boundary): `any` here.
    override query(config: any, ...rest: any[]): any {
      if (isNameable(config, rest[0])) {
        const name = names.nameFor(config.text as string);
        if (name !== undefined && (this.prepared.has(name) || this.prepared.size < perConnection)) {
          this.prepared.add(name);
          const callback: unknown = rest[1];
          if (rest[0] === undefined && typeof callback === 'function' && onlyTextAndValues(config)) return super.query(namedQuery(config, name, callback));
          return (super.query as (...args: unknown[]) => unknown)({ ...config, name }, ...rest);
        }
      }
      return (super.query as (...args: unknown[]) => unknown)(config, ...rest);
    }
  };
}

/**
 * A statement of text and values as pg's Query made from the text itself: pg copies every config
 * object it is given, property descriptors and all (twice with the copy that adds the name), which
 * showed in profiles of reads by id; a Query object is taken as it is. Only for configs with
 * nothing else (rowMode and types shape the Query's result when it is made).
 */
function namedQuery(config: NameableConfig, name: string, callback: unknown): pg.Query {
  const Query = pg.Query as unknown as new (text: unknown, values: unknown, callback: unknown) => pg.Query & { name?: string };
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
