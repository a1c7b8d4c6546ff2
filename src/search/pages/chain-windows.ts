import type { Filter } from '../plan/filters.js';
import type { SortKey } from '../plan/control.js';
import type { SqlArgs } from '../../db/sql-args.js';
import { CHAIN_CANDIDATES_MAX, chainAt, chainCandidates, type ChainCandidates, type ChainSearch } from './chain-driven.js';
import type { CursorPosition } from '../query/cursor.js';
import { orderBy, type OrderKey } from './every-project.js';
import { cursorKeys, positionCondition, sortKeys } from './general.js';
import { candidateConditions, freshContext, type AnyProjectSearch } from './driven.js';
import { runPage, type PageRows, type PageShape } from './rows.js';
import { candidatesSortedPage, candidatesSource, sortsByIndexRows } from './candidates-sorted.js';
import { sortedChainDriver } from './sorted-chain-driver.js';

/** The first window of a common chain's candidates (those readChain read), and how many times each next one is larger. */
const FIRST_CHAIN_WINDOW = CHAIN_CANDIDATES_MAX;
const CHAIN_WINDOW_GROWTH = 8;
/** The most candidates an unsorted page of a common chain reads before the general statement answers. */
export const CHAIN_WINDOW_MAX = 409_600;

/**
 * An unsorted page of a chain whose targets are common (`subject:Patient.name=smi`,
 * `subject:Patient.gender=female`): the first candidates (the reference rows to the chain's
 * matching targets) are read in growing windows, the other filters tested on them, and the
 * resources read by primary key, until a window holds the page and one more row, or holds every
 * candidate there is. Undefined past CHAIN_WINDOW_MAX candidates: the general statement answers.
 * Without statistics the general statement tested the chain on each reference row of the project
 * and ran past 15 s; with them it stops at the page. The page is in the candidates' order, so the
 * windows are of fixed sizes (whatever the page) and each page's window begins as the last one's.
 * The first window is `first`, the candidates readChain read, when it has them.
 */
export async function chainWindowPage(search: ChainSearch, filters: readonly Filter[], page: PageShape, first?: ChainCandidates): Promise<PageRows | undefined> {
  const at = chainAt(filters);
  if (at < 0) return undefined;
  const others = filters.filter((_, i) => i !== at);
  for (let window = FIRST_CHAIN_WINDOW; window <= CHAIN_WINDOW_MAX; window *= CHAIN_WINDOW_GROWTH) {
    const found = window === FIRST_CHAIN_WINDOW && first ? first : await chainCandidates(search, filters[at], window);
    if (!found) return undefined;
    const rows = await pageOfCandidates(search, others, found, page);
    if (rows.more || found.complete) return rows;
  }
  return undefined;
}

/**
 * A sorted page of a chain whose targets are common: the resources of its filter with the fewest,
 * up to SORTED_CHAIN_CANDIDATES_MAX (sortedChainDriver: the chain's, or another filter's), are
 * tested as chainWindowPage's are and sorted, each sort value probed by its own rows; a cursor's
 * page (`position`) keeps those after (or before) its position, in its keyset order. In one
 * project, a page sorted by parameters (not `_lastUpdated`) sorts the candidates on their own
 * index rows and reads only the page's resources (candidatesSortedPage); otherwise each
 * candidate's resource row is read before the sort. Undefined
 * when every filter has more: the general statement answers. Handed to the general statement as
 * an array of 16,660 ids (`name=smi`), the same page ran past 15 s without statistics (a generic
 * plan); read here it took about a second.
 */
export async function chainSortedPage(
  search: ChainSearch,
  filters: readonly Filter[],
  sort: readonly SortKey[],
  page: PageShape,
  position?: CursorPosition,
): Promise<PageRows | undefined> {
  const driver = await sortedChainDriver(search, filters);
  if (!driver) return undefined;
  const others = filters.filter((filter) => filter !== driver.filter);
  const { projectId } = search;
  if (!position && projectId !== undefined && sortsByIndexRows(sort)) return candidatesSortedPage({ ...search, projectId }, driver.found, others, sort, page);
  const order: CandidateOrder = position
    ? { keys: () => cursorKeys(position, false), after: (args) => positionCondition(position, false, args), backwards: position.direction === 'p' }
    : { keys: (args) => sortKeys(sort, false, args) };
  return pageOfCandidates(search, others, driver.found, page, order);
}

/** The order of a page of candidates, and for a cursor's page the condition of its rows and whether they come backwards (a previous page). */
interface CandidateOrder {
  keys: (args: SqlArgs) => OrderKey[];
  after?: (args: SqlArgs) => string;
  backwards?: boolean;
}

/**
 * Of a super admin's sorted page of every project, the first `each.count` resources of each of
 * `projects` (those whose walk fell short) as a search of that project alone reads them
 * (chainSortedPage), and the projects left to the general statement, where none was read.
 */
export async function chainSortedProjects(
  search: AnyProjectSearch & { filters: readonly Filter[]; sort: readonly SortKey[] },
  projects: readonly string[],
  each: PageShape,
): Promise<{ ids: string[]; rest: string[] }> {
  const ids: string[] = [];
  const rest: string[] = [];
  for (const projectId of projects) {
    const read = await chainSortedPage({ ...search, projectId }, search.filters, search.sort, each);
    if (read) ids.push(...read.rows.map(({ id }) => id));
    else rest.push(projectId);
  }
  return { ids, rest };
}

/**
 * The page among candidates that meet `others` and the base conditions: in the order of `order`,
 * or without one in their array's order.
 */
async function pageOfCandidates(
  search: ChainSearch,
  others: readonly Filter[],
  { projects, ids }: { projects: string[]; ids: string[] },
  page: PageShape,
  order?: CandidateOrder,
): Promise<PageRows> {
  const ctx = freshContext(search);
  const { candidates, onResource } = candidateConditions(search, others, ctx);
  if (order?.after) onResource.push(order.after(ctx.args));
  const source = candidatesSource(search.type, { projects, ids }, ctx.args);
  // `IS TRUE` keeps the tests per candidate (a subplan each), as drivenWhere does. No ORDER BY:
  // the candidates come in their array's order through the nested loop, which stops at the page;
  // ordering by their position sorted (and tested) every candidate of the window first.
  const tested = `SELECT d.id FROM (${source}) d${candidates.length > 0 ? ` WHERE (${candidates.join(' AND ')}) IS TRUE` : ''}`;
  const where = onResource.length > 0 ? onResource.join(' AND ') : 'TRUE';
  const sql =
    `SELECT ${page.columns} FROM (${tested}) p` +
    ` CROSS JOIN LATERAL (SELECT * FROM resource r WHERE r."resourceType" = ${ctx.args.add(search.type)} AND r.id = p.id AND (${where}) IS TRUE LIMIT 1) r` +
    `${order ? orderBy(order.keys(ctx.args), (key) => key.expression) : ''} LIMIT ${ctx.args.add(page.count + 1)} OFFSET ${ctx.args.add(page.offset)}`;
  return runPage(search.services.db, sql, ctx.args, page.count, order?.backwards ?? false, page.kept, false);
}
