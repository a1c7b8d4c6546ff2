import { issue, OperationOutcomeError, outcome } from '../fhir/outcome.js';
import { exactCountQuery } from './exact-count.js';
import { drivenCount } from './plan/choose.js';
import type { TotalMode } from './plan/control.js';
import { readsPage, type SearchQuery } from './plan/query.js';
import type { SearchResult, SearchTotal } from './result.js';
import { statementKey } from '../cache/search-cache.js';

/**
 * The total of a search (`_total`, `_summary=count`). When the page shows the whole result (no
 * next page), it is known exactly without a count. `estimate`: the planner's row estimate for the
 * search (EXPLAIN, no rows read), never below what the page itself proves. `accurate`: the
 * estimate first; under ACCURATE_COUNT_THRESHOLD an exact count, otherwise the estimate (or a 400
 * `too-costly` when ACCURATE_COUNT_OVER_THRESHOLD=refuse). The estimate is the planner's: on data
 * written since the last ANALYZE it can be far below the truth, and the count it lets through
 * can then outlast the statement timeout: such a count answers as one over the threshold would.
 */
export async function searchTotal(query: SearchQuery, result: SearchResult): Promise<SearchTotal> {
  const { offset, summary, total } = query.control;
  const { matches, paging } = result;
  const known = readsPage(query) && query.paging.position === undefined && !paging.next && (offset === 0 || matches.length > 0);
  if (known) return { value: offset + matches.length, exact: true };
  const proven = matches.length + offset + (paging.next ? 1 : 0);
  return counted(query, summary === 'count' ? 'accurate' : total, proven);
}

async function counted(query: SearchQuery, mode: TotalMode, seen: number): Promise<SearchTotal> {
  const { services, dependency } = query;
  const counts = mode === 'accurate' && dependency ? services.searchCache : undefined;
  const statement = counts ? await countStatement(query) : undefined;
  const cacheKey = statement && statementKey(statement.sql, statement.args);
  const cached = cacheKey ? counts!.get(cacheKey) : undefined;
  if (cached !== undefined) return { value: cached, exact: true };
  const estimate = Math.max(await plannerEstimate(query), seen);
  if (mode !== 'accurate') return { value: estimate, exact: false };
  const threshold = services.config.accurateCountThreshold;
  const overThreshold = (): SearchTotal => {
    if (services.config.accurateCountOverThreshold === 'refuse') throw tooCostly(estimate, threshold);
    return { value: estimate, exact: false };
  };
  if (estimate >= threshold) return overThreshold();
  const { sql, args } = statement ?? (await countStatement(query));
  const take = async () => Number((await services.db.query<{ n: unknown }>(sql, args))[0]?.n ?? 0);
  try {
    return { value: await (counts && cacheKey ? counts.countOnce(cacheKey, dependency!, take) : take()), exact: true };
  } catch (error) {
    // A count that must be exact (a measure: no threshold) or runs in a transaction (which the
    // cancelled statement aborted) keeps the timeout's 503.
    if (!isStatementTimeout(error) || services.inTransaction || threshold === Number.MAX_SAFE_INTEGER) throw error;
    return overThreshold();
  }
}

/** The 503 `timeout` of a statement PostgreSQL cancelled at its statement_timeout (src/db/database.ts). */
function isStatementTimeout(error: unknown): boolean {
  return error instanceof OperationOutcomeError && error.status === 503 && error.outcome.issue[0]?.code === 'timeout';
}

function tooCostly(estimate: number, threshold: number): OperationOutcomeError {
  return new OperationOutcomeError(
    outcome([
      issue(
        'too-costly',
        `_total=accurate is refused: about ${estimate} resources match, and this server counts exactly only below ${threshold}. Use _total=estimate or narrow the search`,
        '_total',
      ),
    ]),
    400,
  );
}

/** The planner's row estimate for the search (EXPLAIN, no rows read), kept a few seconds (search-cache.ts). */
async function plannerEstimate({ services, where, ctx }: SearchQuery): Promise<number> {
  const sql = `EXPLAIN (FORMAT JSON) SELECT 1 FROM resource r WHERE ${where}`;
  const key = services.searchCache && statementKey(sql, ctx.args.values);
  const kept = key ? services.searchCache!.getEstimate(key) : undefined;
  if (kept !== undefined) return kept;
  const rows = await services.db.query<{ 'QUERY PLAN': unknown }>(sql, ctx.args.values);
  const plan = rows[0]?.['QUERY PLAN'];
  const parsed = (typeof plan === 'string' ? JSON.parse(plan) : plan) as { Plan: { 'Plan Rows': number } }[];
  const estimate = Math.round(parsed[0]?.Plan?.['Plan Rows'] ?? 0);
  if (key) services.searchCache!.setEstimate(key, estimate);
  return estimate;
}

/**
 * The statement of an exact count: from the index tables when the search allows, else through
 * `resource`, of the candidates of a `_has` when its referencing rows are few enough, or of a
 * chain's few targets' references (drivenCount: probing every resource of the type took longer
 * than 30 s without statistics).
 */
async function countStatement(query: SearchQuery): Promise<{ sql: string; args: unknown[] }> {
  const exact = await exactCountQuery(query);
  if (exact) return exact;
  const driven = await drivenCount(query);
  if (driven) return { sql: `SELECT count(*)::int AS n FROM resource r WHERE ${driven.where}`, args: driven.args.values };
  return { sql: `SELECT count(*)::int AS n FROM resource r WHERE ${query.where}`, args: query.ctx.args.values };
}
