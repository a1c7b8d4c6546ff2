import { filterCondition, type Filter } from '../plan/filters.js';
import { resolveParameter } from '../query/conditions.js';
import { criteriaOn, parseHas } from '../query/conditions/chain-has.js';
import type { IndexRowsCondition } from '../query/conditions/types.js';
import { indexRowsSource } from '../query/conditions/shared.js';
import type { SqlArgs } from '../../db/sql-args.js';
import type { ChainSearch } from './chain-driven.js';
import { freshContext } from './driven.js';
import { everyProject } from './every-project.js';
import { GROWING_WINDOW_MAX } from './growing-windows.js';
import { drivenWhere } from './key-driven.js';
import { candidatesSortedPage, candidatesSource } from './candidates-sorted.js';
import type { SortKey } from '../plan/control.js';
import type { PageRows, PageShape } from './rows.js';

/** The most referencing rows (`_has:Observation:subject:code=..`: the code's rows) a first page is read from. */
export const HAS_SOURCE_ROWS_FEW = GROWING_WINDOW_MAX;
/**
 * The most referencing rows a page that probing would not fill soon (sorted, deep, with filters
 * that may drop most resources) or an exact count is read from: reading 50,000 of them costs less
 * than probing the 100,000 resources of the type they may reference for a count, a page sorted
 * where few matches are, or a filter that no match meets.
 */
export const HAS_SOURCE_ROWS_MANY = 51_200;
/**
 * The sort windows a page with a `_has` of more than HAS_SOURCE_ROWS_FEW referencing rows reads
 * before its candidates (plan/choose.ts): the next window, of 6,400 resources each probed for the
 * `_has`, cost more than reading up to HAS_SOURCE_ROWS_MANY referencing rows.
 */
export const WINDOWS_BEFORE_HAS_DRIVEN = 800;

/**
 * The conditions of a search with a `_has` (`Patient?_has:Observation:subject:code=..`) whose
 * referencing resources' matches are index rows, when there are at most `most` of them
 * (HAS_SOURCE_ROWS_FEW or HAS_SOURCE_ROWS_MANY) in the project: the resources they reference are
 * the candidates (each once), the other
 * filters are tested on them, and the resources are read by primary key, as chainDrivenConditions
 * reads a chain's. A rare code, a day of Observations, a code nobody has: the page no longer
 * depends on how many resources of the searched type there are. Undefined otherwise: the `_has` is
 * common, and is probed per resource of the page (query/conditions/chain-has.ts compileHas).
 * Every project is read one project at a time (references never cross projects).
 */
export async function hasDrivenConditions(search: ChainSearch, filters: readonly Filter[], most: number): Promise<HasDriven | undefined> {
  for (const [at, filter] of filters.entries()) {
    if (filter.resolved.kind !== 'has') continue;
    const candidates = await hasCandidates(search, filter, most);
    if (!candidates) continue;
    const ctx = freshContext(search);
    const source = candidatesSource(search.type, candidates, ctx.args);
    const others = filters.filter((_, i) => i !== at);
    const { projectId } = search;
    const sortedPage = projectId === undefined ? undefined : (sort: readonly SortKey[], page: PageShape) => candidatesSortedPage({ ...search, projectId }, candidates, others, sort, page);
    return { ...drivenWhere(search, others, ctx, source), sortedPage };
  }
  return undefined;
}

/** The conditions of a page a `_has`'s candidates drive, and in one project the reader of a page of them sorted by index rows (candidatesSortedPage). */
export interface HasDriven {
  args: SqlArgs;
  where: string;
  sortedPage?: (sort: readonly SortKey[], page: PageShape) => Promise<PageRows>;
}

/**
 * The resources of the searched type that the `_has` filter's matching referencing resources
 * reference (each once, with its project), or undefined when its condition is not index rows
 * (a nested `_has`, a chain, `:missing`) or has more than `most` rows (counted first, up to
 * `most` + 1). An index row
 * stands for a live resource of its project (the store's invariant, as exact counts rely on), and
 * their reference rows are read by their primary key, all in one read: no resource row is read, but
 * where the caller's criteria narrow the referencing type (each source's row is then tested on them).
 */
async function hasCandidates(search: ChainSearch, filter: Filter, most: number): Promise<{ projects: string[]; ids: string[] } | undefined> {
  const ctx = freshContext(search);
  const { type, code, rest } = parseHas(filter.name, ctx);
  let rows: IndexRowsCondition | undefined;
  const inner: Filter = { name: rest, value: filter.value, resolved: resolveParameter(rest, [type], ctx.parameters) };
  const condition = filterCondition(inner, [type], 's', { ...ctx, onRows: (found) => (rows = found.depth === 0 ? found : rows) });
  if (!rows || !condition.startsWith('EXISTS (')) return undefined;
  // Every project: the projects are read one at a time, `p.id` the one being read (below).
  const project = search.projectId === undefined ? 'p.id' : ctx.args.add(search.projectId);
  const limit = ctx.args.add(most + 1);
  const scope = `${rows.alias}."projectId" = ${project} AND ${rows.alias}."resourceType" = ${ctx.args.add(type)}`;
  const each = `SELECT d.id FROM (${indexRowsSource(rows, scope)}) d LIMIT ${limit}`;
  const sources = search.projectId === undefined ? `SELECT c.id FROM unnest(${everyProject('resource')}) p(id) CROSS JOIN LATERAL (${each}) c LIMIT ${limit}` : each;
  // The sources' reference rows in one read of the primary key (resourceType, resourceId, seq) for
  // all their ids at once: a bitmap that visits each page of the table once, in its order, where a
  // lookup per source visited a page per source (the rows of resources written together share
  // pages). A resource id is unique within its type, so its rows are of its project. Compiled when
  // its statement is sent: a statement takes every argument added before it. The sources are their
  // ids alone, and the targets of one project too, compared byte by byte: narrow rows, so that the
  // sources (50,000) are kept and their targets made distinct in memory, where rows with their
  // project and type went to disk.
  const targetsOf = (from: string, within: string) => {
    const criteria = criteriaOn(type, 'k', ctx);
    const readable = criteria ? ` WHERE (SELECT ${criteria} FROM resource k WHERE k."resourceType" = ${ctx.args.add(type)} AND k.id = g.id LIMIT 1) IS TRUE` : '';
    const columns = search.projectId === undefined ? `h."projectId", h."targetId" COLLATE "C" AS id` : `h."targetId" COLLATE "C" AS id`;
    return (
      `SELECT DISTINCT ${columns} FROM reference_index h` +
      ` WHERE ${within} AND h."resourceType" = ${ctx.args.add(type)} AND h."resourceId" = ANY(ARRAY(SELECT g.id FROM ${from} g${readable}))` +
      ` AND (h.code = ${ctx.args.add(code)} AND h."targetType" = ${ctx.args.add(search.type)}) IS TRUE`
    );
  };
  const db = search.services.db;
  let found: { projectId?: string | null; id: string | null }[];
  if (most < HAS_SOURCE_ROWS_MANY) {
    // Counted first: most codes have more rows than a first page is read from, and counting them
    // costs less than keeping them for the mapping.
    const [{ n }] = await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM (${sources}) c`, ctx.args.values);
    if (n > most) return undefined;
    found = await db.query(targetsOf(`(${sources})`, 'true'), ctx.args.values);
  } else {
    // Asked for once fewer did not do: the sources are read once, counted up to the bound, then
    // mapped when within it (one row without a target when too many, or none, reference).
    const [first, ...rest] = await db.query<{ n: number; projectId?: string | null; id: string | null }>(
      `WITH s AS MATERIALIZED (${sources}) SELECT c.n, m.* FROM (SELECT count(*)::int AS n FROM s) c` +
        ` LEFT JOIN LATERAL (${targetsOf('s', `c.n <= ${ctx.args.add(most)}`)}) m ON true`,
      ctx.args.values,
    );
    if (first.n > most) return undefined;
    found = [first, ...rest];
  }
  const unique = new Map(found.flatMap(({ projectId = search.projectId, id }) => (projectId != null && id !== null ? [[id, projectId] as const] : [])));
  return { projects: [...unique.values()], ids: [...unique.keys()] };
}
