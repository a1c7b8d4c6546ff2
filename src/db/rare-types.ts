/**
 * The statistics keeper's second rule (postgres-statistics.ts): a resource type whose rows in a
 * search table far outnumber what the table's statistics believe. The first rule (changes since
 * the last ANALYZE above 10% of the rows) never fires for a few thousand rows of a rare type in a
 * big table, yet the planner sizes its plans for that type from statistics that saw none of them:
 * one Practitioner believed, a thousand there, and a join ran once per Practitioner.
 *
 * What the statistics believe is the planner's own estimate for `"resourceType" = <type>` (its
 * share among the most common values, or the rest spread over the other distinct values), times
 * the rows the table had at its last ANALYZE. A type is due when its rows reach MIN_ROWS and
 * RATIO times that belief, and RATIO times the rows it had when it last made the table due here
 * (`counted`): a type whose rows the ANALYZE sample still misses (a few rows in millions) does not
 * make every round analyze again, and a growing type re-analyzes at 500, 2,000, 8,000... rows, a
 * few times in its life. Cheap: the types come from the primary key (resourceType first) in one
 * index descent each, and each is counted by an index-only scan that stops at its threshold; only
 * types believed to hold at most MAX_COUNTED / RATIO rows are counted (larger ones are in the
 * statistics' common values, and the first rule answers for them).
 */

/** What a search table's rows must at least hold of a type before it is worth an ANALYZE. */
export const MIN_ROWS = 500;
/** How far the rows may outgrow the belief before the plans built on it are in doubt. */
export const RATIO = 4;
/** The most rows one type's count may read in a round. */
const MAX_COUNTED = 20_000;

export interface RowQuery {
  query<R>(sql: string, args?: readonly unknown[]): Promise<R[]>;
}

/**
 * Whether some resource type's rows in `table` outgrew its statistics (outgrownTypes); records the
 * rows of each such type in `counted`, which paces the next time it can make the table due.
 */
export async function typesOutgrew(db: RowQuery, table: string, counted: Map<string, number>): Promise<boolean> {
  const outgrown = await outgrownTypes(db, table, counted);
  for (const { type, rows } of outgrown) counted.set(`${table}|${type}`, rows);
  return outgrown.length > 0;
}

/** The planner statistics of a table's resourceType column (pg_stats), with the rows it had when they were made. */
interface TypeStatistics {
  rows: number;
  values: string[];
  freqs: number[];
  nullFrac: number;
  nDistinct: number;
}

/**
 * The types whose rows in `table` (one of the search tables, a constant) outgrew its statistics,
 * with their rows; none when the table has no statistics yet (the first rule analyzes it).
 * `counted`: the rows of each `table|type` when it was last found due, kept by the caller.
 */
export async function outgrownTypes(db: RowQuery, table: string, counted: ReadonlyMap<string, number>): Promise<{ type: string; rows: number }[]> {
  const stats = await typeStatistics(db, table);
  if (!stats) return [];
  const types = await db.query<{ type: string }>(
    `WITH RECURSIVE types(t) AS (
       SELECT min("resourceType") FROM ${table}
       UNION ALL
       SELECT (SELECT min("resourceType") FROM ${table} WHERE "resourceType" > t) FROM types WHERE t IS NOT NULL)
     SELECT t AS type FROM types WHERE t IS NOT NULL`,
  );
  const checked = types.flatMap(({ type }) => {
    const threshold = Math.ceil(Math.max(MIN_ROWS, RATIO * believedRows(stats, type), RATIO * (counted.get(`${table}|${type}`) ?? 0)));
    return threshold <= MAX_COUNTED ? [{ type, threshold }] : [];
  });
  if (checked.length === 0) return [];
  // In the primary key's order, which only the primary key gives without sorting: planned for any
  // type at once, a plain LIMIT was read by a sequential scan, or through an index by lastUpdated.
  const key = table === 'resource' ? 'x.id' : 'x."resourceId", x.seq';
  const rows = await db.query<{ type: string; rows: number; threshold: number }>(
    `SELECT t.type, t.threshold,
            (SELECT count(*)::int FROM (SELECT 1 FROM ${table} x WHERE x."resourceType" = t.type ORDER BY x."resourceType", ${key} LIMIT t.threshold) c) AS rows
     FROM unnest($1::text[], $2::int[]) AS t(type, threshold)`,
    [checked.map((c) => c.type), checked.map((c) => c.threshold)],
  );
  return rows.filter((row) => row.rows >= row.threshold).map(({ type, rows: n }) => ({ type, rows: n }));
}

async function typeStatistics(db: RowQuery, table: string): Promise<TypeStatistics | undefined> {
  // One row per common value (scalars only: drivers differ on arrays of floats).
  const rows = await db.query<{ rows: number; null_frac: number; n_distinct: number; value: string | null; freq: number | null }>(
    `SELECT c.reltuples::float8 AS rows, s.null_frac::float8 AS null_frac, s.n_distinct::float8 AS n_distinct, v.value, v.freq::float8 AS freq
     FROM pg_stats s JOIN pg_class c ON c.relname = s.tablename AND c.relnamespace = s.schemaname::regnamespace
     LEFT JOIN LATERAL unnest(s.most_common_vals::text::text[], s.most_common_freqs) AS v(value, freq) ON true
     WHERE s.schemaname = current_schema() AND s.tablename = $1 AND s.attname = 'resourceType'`,
    [table],
  );
  const first = rows[0];
  if (!first || Number(first.rows) <= 0) return undefined;
  const common = rows.filter((row) => row.value !== null);
  return {
    rows: Number(first.rows),
    values: common.map((row) => row.value!),
    freqs: common.map((row) => Number(row.freq)),
    nullFrac: Number(first.null_frac),
    nDistinct: Number(first.n_distinct),
  };
}

/** The planner's estimate of a table's rows of `type` (PostgreSQL's var_eq_const): a common value's share, else the rest shared by the other values. */
export function believedRows({ rows, values, freqs, nullFrac, nDistinct }: TypeStatistics, type: string): number {
  const common = values.indexOf(type);
  if (common >= 0) return freqs[common] * rows;
  const distinct = nDistinct >= 0 ? nDistinct : -nDistinct * rows;
  const others = distinct - values.length;
  let share = Math.max(0, 1 - freqs.reduce((sum, f) => sum + f, 0) - nullFrac);
  if (others > 1) share /= others;
  if (freqs.length > 0) share = Math.min(share, Math.min(...freqs));
  return share * rows;
}
