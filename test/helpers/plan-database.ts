import pg from 'pg';
import { loadConfig } from '../../src/config.js';
import { Database, planSettings, type QueryOptions, type SqlExecutor } from '../../src/db/database.js';
import { migrate } from '../../src/db/migrate.js';
import type { Identity } from '../../src/identity/identity.js';
import type { SearchResult } from '../../src/search/result.js';
import { search, searchServicesFor } from '../../src/search/service.js';
import { createOwnDatabase, type OwnDatabase } from './own-database.js';
import { testEnv } from './server.js';

/** What the writers below need of a connection: pg's client, or the database itself (PGlite or PostgreSQL). */
export interface SqlClient {
  query(sql: string, values: unknown[]): Promise<unknown>;
}

/** A statement a search sent and its plan. */
/** A chain's reference rows read by the project, type and code alone (alias c1): every subject reference of the project. */
export const EVERY_SUBJECT_ROW = /on reference_index c1\s+Index Cond: \(\("projectId" = [^\n]*\(code = 'subject'::text\) AND \("targetType" = 'Patient'::text\)\)\n/;

export interface ExplainedStatement {
  sql: string;
  plan: string;
  args: readonly unknown[];
  /** Whether PostgreSQL would compile it (JIT), which only EXPLAIN with costs shows. */
  jit: boolean;
}

/** The statements of a search, explained, and what it answered: its matches' ids, its included resources' (`Type/id`) and its total. */
export interface ExplainedSearch {
  statements: ExplainedStatement[];
  ids: string[];
  included: string[];
  total: number | undefined;
}

/**
 * A PostgreSQL database of its own, migrated and never analyzed, with a connection for each plan
 * kind the server uses: `custom` plans each statement for its values, `generic` has the settings
 * of the plan-once pool (QueryOptions.planOnce).
 */
export interface PlanDatabase {
  custom: pg.Client;
  generic: pg.Client;
  /** Every statement a search sends (as `identity`), each explained as the server plans it after it ran. */
  plansOf(identity: Identity, resourceType: string, query: string): Promise<ExplainedStatement[]>;
  /** The search (as `identity`): its statements explained and its answer. */
  explain(identity: Identity, resourceType: string, query: string): Promise<ExplainedSearch>;
  /** Every statement `work` sends through the executor it is given, each explained after it ran. */
  capture(work: (executor: SqlExecutor) => Promise<unknown>): Promise<ExplainedStatement[]>;
  close(): Promise<void>;
}

export async function openPlanDatabase(prefix: string): Promise<PlanDatabase> {
  const own: OwnDatabase = await createOwnDatabase(prefix);
  const db = await Database.open(loadConfig(testEnv({ DATABASE_URL: own.url })));
  await migrate(db);
  await db.close();
  const custom = new pg.Client({ connectionString: own.url, options: planSettings('force_custom_plan').join(' ') });
  const generic = new pg.Client({ connectionString: own.url, options: planSettings('force_generic_plan').join(' ') });
  await custom.connect();
  await generic.connect();
  let prepared = 0;
  const capture = async (work: (executor: SqlExecutor) => Promise<unknown>): Promise<ExplainedStatement[]> => {
    const plans: ExplainedStatement[] = [];
    await work(explainingExecutor(custom, generic, plans, () => `s${++prepared}`));
    return plans;
  };
  const explain = async (identity: Identity, resourceType: string, query: string): Promise<ExplainedSearch> => {
    const config = { ...loadConfig(testEnv({ DATABASE_URL: own.url })), fhirBaseUrl: 'http://flint.test/fhir/R4' };
    let result: SearchResult | undefined;
    const statements = await capture(async (database) => {
      result = await search(searchServicesFor({ database, identity, config }), resourceType, [...new URLSearchParams(query).entries()]);
    });
    return {
      statements,
      ids: result!.matches.map(({ id }) => id),
      included: result!.includes.map(({ resourceType, id }) => `${resourceType}/${id}`),
      total: result!.total?.value,
    };
  };
  const plansOf = async (identity: Identity, resourceType: string, query: string) => (await explain(identity, resourceType, query)).statements;
  const close = async () => {
    await custom.end();
    await generic.end();
    await own.drop();
  };
  return { custom, generic, plansOf, explain, capture, close };
}

/** An executor that runs each statement as the server would (planOnce ones on `generic`), then explains it into `plans`. */
function explainingExecutor(custom: pg.Client, generic: pg.Client, plans: ExplainedStatement[], nextName: () => string): SqlExecutor {
  return {
    query: async <R>(sql: string, args: readonly unknown[] = [], options?: QueryOptions) => {
      const client = options?.planOnce ? generic : custom;
      const name = nextName();
      const result = await client.query({ name, text: sql, values: [...args] });
      if (!sql.startsWith('EXPLAIN')) {
        const values = args.length > 0 ? `(${args.map(literal).join(', ')})` : '';
        const explained = await client.query(`EXPLAIN (COSTS OFF) EXECUTE ${name}${values}`);
        const costed = await client.query(`EXPLAIN EXECUTE ${name}${values}`);
        const jit = costed.rows.some((row: Record<string, string>) => row['QUERY PLAN'].startsWith('JIT:'));
        plans.push({ sql, plan: explained.rows.map((row: Record<string, string>) => row['QUERY PLAN']).join('\n'), args, jit });
      }
      return result.rows as R[];
    },
    execute: async (sql: string, args: readonly unknown[] = []) => (await custom.query(sql, [...args])).rowCount ?? 0,
  };
}

/** The plans of the statements that read the searched type's resources or their index rows (not the project's SearchParameters). */
export function searchPlans(statements: readonly ExplainedStatement[]): string {
  return statements
    .filter(({ sql }) => !sql.includes(`'SearchParameter'`))
    .map(({ plan }) => plan)
    .join('\n');
}

/**
 * What writeObservations writes besides the resources. Each index row costs its table's indexes
 * (a date row six, one of them GiST): a file writes only the rows its searches read.
 */
export interface ObservationShape {
  /** The index rows written: `status` and `code` token rows, `date` rows. All three by default. */
  rows?: readonly ('status' | 'code' | 'date')[];
  /** Observations that share each lastUpdated second, in number order (1 by default). */
  perSecond?: number;
  /** Seconds added to every lastUpdated (0 by default; negative moves the Observations earlier). */
  firstSecond?: number;
}

/**
 * `count` Observations of `projectId` (ids `<prefix>o<n>`), updated `firstSecond + n / perSecond`
 * seconds after 2025-01-01, and of `shape.rows` (every one by default): their status (final), code
 * (8867-4 for every twentieth, else 2339-0) and an hourly date from 2023, as the store writes them.
 */
export async function writeObservations(client: SqlClient, projectId: string, count: number, prefix = '', shape: ObservationShape = {}): Promise<void> {
  const { rows = ['status', 'code', 'date'], perSecond = 1, firstSecond = 0 } = shape;
  await client.query(
    `INSERT INTO resource ("resourceType", id, "projectId", "versionId", "lastUpdated", deleted, content)
     SELECT 'Observation', $3 || 'o' || g, $1, gen_random_uuid(), timestamptz '2025-01-01' + ($5::int + g / $4::int) * interval '1 second', false,
            json_build_object('resourceType', 'Observation', 'id', $3 || 'o' || g, 'status', 'final')
     FROM generate_series(1, $2::int) g`,
    [projectId, count, prefix, perSecond, firstSecond],
  );
  const tokens = rows.filter((row) => row !== 'date');
  if (tokens.length > 0) {
    await client.query(
      `INSERT INTO token_index ("projectId", "resourceType", "resourceId", seq, code, system, value, text)
       SELECT $1, 'Observation', $3 || 'o' || g, s.seq, s.code, s.system, s.value, NULL FROM generate_series(1, $2::int) g,
         LATERAL (VALUES (1, 'status', NULL, 'final'), (2, 'code', 'http://loinc.org', CASE WHEN g % 20 = 0 THEN '8867-4' ELSE '2339-0' END))
           AS s(seq, code, system, value)
       WHERE s.code = ANY($4::text[])`,
      [projectId, count, prefix, tokens],
    );
  }
  if (rows.includes('date')) {
    await client.query(
      `INSERT INTO date_index ("projectId", "resourceType", "resourceId", seq, code, start, "end")
       SELECT $1, 'Observation', $3 || 'o' || g, 1, 'date', d, d + interval '999 milliseconds'
       FROM generate_series(1, $2::int) g, LATERAL (SELECT timestamptz '2023-01-01' + g * interval '1 hour' AS d) t`,
      [projectId, count, prefix],
    );
  }
}

/**
 * `patients` Patients (`<prefix>pat<n>`, family `smith<n>`) and the subject of each of
 * the Observations (writeObservations) numbered `firstObservation` to `observations`: `<prefix>pat<g % patients + 1>`.
 */
export async function writeSubjects(client: SqlClient, projectId: string, observations: number, patients: number, prefix: string, firstObservation = 1): Promise<void> {
  await client.query(
    `INSERT INTO resource ("resourceType", id, "projectId", "versionId", "lastUpdated", deleted, content)
     SELECT 'Patient', $2 || 'pat' || g, $1, gen_random_uuid(), timestamptz '2025-01-01' + g * interval '1 second', false,
            json_build_object('resourceType', 'Patient', 'id', $2 || 'pat' || g)
     FROM generate_series(1, $3::int) g`,
    [projectId, prefix, patients],
  );
  await client.query(
    `INSERT INTO string_index ("projectId", "resourceType", "resourceId", seq, code, value, exact)
     SELECT $1, 'Patient', $2 || 'pat' || g, 1, 'family', 'smith' || g, 'Smith' || g FROM generate_series(1, $3::int) g`,
    [projectId, prefix, patients],
  );
  await client.query(
    `INSERT INTO reference_index ("projectId", "resourceType", "resourceId", seq, code, "targetType", "targetId", url)
     SELECT $1, 'Observation', $2 || 'o' || g, 1, 'subject', 'Patient', $2 || 'pat' || (g % $4::int + 1), NULL FROM generate_series($5::int, $3::int) g`,
    [projectId, prefix, observations, patients, firstObservation],
  );
}

/** Every Observation of LOINC `code`, in every project, newest date first, ties by id: what a super admin's `_sort=-date` pages hold. */
export async function newestWithCode(client: pg.Client, code: string): Promise<string[]> {
  const { rows } = await client.query<{ id: string }>(
    `SELECT t."resourceId" AS id FROM token_index t
     JOIN date_index d ON d."projectId" = t."projectId" AND d."resourceType" = t."resourceType" AND d."resourceId" = t."resourceId" AND d.code = 'date'
     WHERE t."resourceType" = 'Observation' AND t.code = 'code' AND t.system = 'http://loinc.org' AND t.value = $1
     ORDER BY COALESCE(d."end", d.start) DESC, t."resourceId"`,
    [code],
  );
  return rows.map(({ id }) => id);
}

/** A bind value as an SQL literal, for EXPLAIN EXECUTE (which takes no bind parameters). */
function literal(value: unknown): string {
  if (value === null || value === undefined) return 'NULL';
  if (Array.isArray(value)) return value.length === 0 ? `'{}'` : `ARRAY[${value.map(literal).join(', ')}]`;
  if (value instanceof Date) return `'${value.toISOString()}'`;
  return `'${String(value).replace(/'/g, "''")}'`;
}
