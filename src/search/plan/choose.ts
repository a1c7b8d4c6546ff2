import type { DrivenSearch } from '../pages/driven.js';
import { everyProject } from '../pages/every-project.js';
import { pageRows } from '../pages/general.js';
import { deepPage } from '../pages/growing-windows.js';
import { keyDrivenConditions, valueListConditions } from '../pages/key-driven.js';
import { chainAt, readChain, type ChainCandidates, type ChainRead, type ChainSearch } from '../pages/chain-driven.js';
import { chainSortedPage, chainWindowPage } from '../pages/chain-windows.js';
import { chainTargetCandidates, chainTargetsDriven } from '../pages/chain-targets.js';
import { HAS_SOURCE_ROWS_FEW, HAS_SOURCE_ROWS_MANY, WINDOWS_BEFORE_HAS_DRIVEN, hasDrivenConditions, type HasDriven } from '../pages/has-driven.js';
import { sortsByIndexRows } from '../pages/candidates-sorted.js';
import { DATE_BOUND_FEW, DATE_BOUND_MANY, dateBoundDriven } from '../pages/date-bound-driven.js';
import { tokenCodeDriven } from '../pages/code-driven.js';
import type { SqlArgs } from '../../db/sql-args.js';
import { COLUMNS, KEY_COLUMNS, type PageRows, type PageShape } from '../pages/rows.js';
import { prefixRangeOf } from '../pages/string-prefix.js';
import { policyCriteria } from '../../identity/policy.js';
import { searchedProject, type Filter } from './filters.js';
import type { SearchQuery } from './query.js';
import { chooseStrategy, everyProjectStrategy, longChainWalk, missingWalks, readsGrowingWindows, unreadChainWalks, windowedSort } from './strategies.js';

/**
 * The page of a search: read by the strategy that suits it (pages/), when one does and answers,
 * else by the general statement. Strategies read a search of one type in one project from an
 * index in an order of their own, so that the statement stops at the page.
 */
export async function readPage(query: SearchQuery, withoutContent: boolean): Promise<PageRows> {
  const { control, services } = query;
  const kept = services.searchCache?.keepsPages && query.dependency ? { cache: services.searchCache, dependency: query.dependency } : undefined;
  const page: PageShape = { count: control.count, offset: control.offset, columns: withoutContent ? KEY_COLUMNS : COLUMNS, kept };
  const { project, oneProject, everyOne } = searchedProjects(query);
  const listed = await valueListDriven(query, oneProject);
  if (listed) return generalPage(query, page, oneProject, everyOne, listed);
  const strategy = oneProject ? chooseStrategy(query, oneProject, page) : everyProjectStrategy(query, project, page);
  // A chain to few targets, or a `_has` of few referencing rows: its candidates drive the page
  // whatever its order, as a key's rows do; a `_has` of more, once a strategy's windows fell short.
  const before = strategy || probesFillPage(query) ? HAS_SOURCE_ROWS_FEW : HAS_SOURCE_ROWS_MANY;
  const chain = await chainRead(query, oneProject, everyOne);
  const chained = (chain && 'driven' in chain ? chain.driven : undefined) ?? (await hasDriven(query, oneProject, everyOne, before));
  if (chained) return generalPage(query, page, oneProject, everyOne, chained);
  // A rare one-sided date bound: its few resources are sorted, not sought along the sort's windows.
  const bounded = oneProject && windowedSort(query) ? await dateBoundDriven(oneProject, query.filters, DATE_BOUND_FEW) : undefined;
  if (bounded) return generalPage(query, page, oneProject, everyOne, bounded);
  const early = await hasDrivenAfterFirstWindows(query, oneProject, page, before);
  if (early?.read) return early.read;
  if (early?.driven) return generalPage(query, page, oneProject, everyOne, early.driven);
  // A chain to common targets: once no strategy answered (a sorted page's walks its sort parameter's
  // rows, probing the chain on each), from its candidates.
  const read = strategy && (await strategy());
  if (read) return read;
  const common = chain && 'common' in chain ? await commonChainPage(query, chain, page) : undefined;
  if (common) return common;
  const long = chain && 'common' in chain ? longChainWalk(query, oneProject, everyOne, page) : undefined;
  const walked = long && (await long());
  if (walked) return walked;
  // A chain readChain could not read: its first walk, then its few targets' references, then the long walk.
  const [firstWalk, ...longerWalks] = chain ? [] : unreadChainWalks(query, oneProject, everyOne, page);
  const first = firstWalk && (await firstWalk());
  if (first) return first;
  const targeted = chain ? undefined : await chainTargets(query, oneProject);
  if (targeted) return generalPage(inWalkOrder(query), page, oneProject, everyOne, targeted);
  for (const walk of chain ? [] : [...longerWalks, ...missingWalks(query, oneProject, page)]) {
    const rows = await walk();
    if (rows) return rows;
  }
  const after =
    strategy && before < HAS_SOURCE_ROWS_MANY && !probesFillPage(query) && early === undefined
      ? await hasDriven(query, oneProject, everyOne, HAS_SOURCE_ROWS_MANY)
      : undefined;
  const boundAfter = !after && strategy && oneProject && windowedSort(query) ? await dateBoundDriven(oneProject, query.filters, DATE_BOUND_MANY) : undefined;
  const sortedAfter = after ?? boundAfter ?? (strategy && oneProject && sortedByOneKey(query) ? await tokenCodeDriven(oneProject, query.filters, HAS_SOURCE_ROWS_MANY) : undefined);
  return generalPage(query, page, oneProject, everyOne, sortedAfter);
}

/**
 * A page of one project read from growing windows (readsGrowingWindows) with a `_has` of more
 * referencing rows than a first page is read from: its windows up to WINDOWS_BEFORE_HAS_DRIVEN rows
 * first, then the `_has`'s candidates (up to HAS_SOURCE_ROWS_MANY referencing rows), before the
 * last, largest window. That window probes the `_has` on each of its thousands of resources, and
 * when it falls short too (the sort's first resources have no match: `_has:..&_sort=-family`), the
 * candidates answer all the same.
 * Undefined when this does not apply; neither read nor driven when neither answered: the usual
 * order goes on, without asking for the candidates again.
 */
async function hasDrivenAfterFirstWindows(
  query: SearchQuery,
  oneProject: DrivenSearch | undefined,
  page: PageShape,
  before: number,
): Promise<{ read?: PageRows; driven?: { args: SqlArgs; where: string } } | undefined> {
  if (!oneProject || before >= HAS_SOURCE_ROWS_MANY || deepPage(page) || !hasMayDrive(query.filters)) return undefined;
  if (!readsGrowingWindows(query, oneProject)) return undefined;
  const first = chooseStrategy(query, oneProject, { ...page, windowCap: WINDOWS_BEFORE_HAS_DRIVEN });
  if (!first) return undefined;
  const read = await first();
  if (read) return { read };
  return { driven: await hasDriven(query, oneProject, false, HAS_SOURCE_ROWS_MANY) };
}

/**
 * The conditions of a page of one project driven by a value list of few index rows
 * (valueListConditions), whatever its order; none with a key (planOnce: the key drives), a one-value
 * string prefix (its own index drives), a chain or a `_has` (their candidates drive).
 */
function valueListDriven({ filters, planOnce }: SearchQuery, oneProject: DrivenSearch | undefined): Promise<{ args: SqlArgs; where: string } | undefined> {
  const others = filters.some((filter) => prefixRangeOf(filter) || filter.resolved.kind === 'chain' || filter.resolved.kind === 'has');
  if (!oneProject || planOnce || others) return Promise.resolve(undefined);
  return valueListConditions(oneProject, filters);
}

/** The one project a search reads (a search of one type there: `oneProject`), or whether it is a super admin's of every project. */
function searchedProjects(query: SearchQuery): { project: string | undefined; oneProject: DrivenSearch | undefined; everyOne: boolean } {
  const project = searchedProject(query.scope, query.filters);
  const oneProject: DrivenSearch | undefined =
    query.typeList?.length === 1 && project !== undefined
      ? { services: query.services, type: query.typeList[0], scope: query.scope, projectId: project, ctx: query.ctx }
      : undefined;
  return { project, oneProject, everyOne: query.scope.projectIds === undefined && project === undefined };
}

/**
 * The conditions of an exact count driven by candidates: a `_has`'s (hasDriven), if its
 * referencing rows are few enough, else an unread chain's few targets' references (chainTargets).
 */
export async function drivenCount(query: SearchQuery): Promise<{ args: SqlArgs; where: string } | undefined> {
  const { oneProject, everyOne } = searchedProjects(query);
  return (await hasDriven(query, oneProject, everyOne, HAS_SOURCE_ROWS_MANY)) ?? (await chainTargets(query, oneProject));
}

/**
 * An unsorted search read in the order its walks read it, (lastUpdated, id), so that a page read
 * from candidates follows a page a walk read: the general statement has no order of its own there.
 */
function inWalkOrder(query: SearchQuery): SearchQuery {
  return query.control.sort.length > 0 ? query : { ...query, control: { ...query.control, sort: [{ code: '_lastUpdated', descending: false }] } };
}

/**
 * The conditions of a search of one project whose chain readChain could not read, driven by the
 * references to its matching targets when those are few (chainTargetsDriven); none with a key
 * (planOnce), whose rows drive.
 */
async function chainTargets(query: SearchQuery, search: DrivenSearch | undefined): Promise<HasDriven | undefined> {
  if (!search || query.planOnce || chainAt(query.filters) < 0) return undefined;
  let candidates = chainTargetsRead.get(query);
  if (!candidates) chainTargetsRead.set(query, (candidates = chainTargetCandidates(search, query.filters)));
  const ids = await candidates;
  return ids && chainTargetsDriven(search, query.filters, ids);
}

/** Each search's chainTargetCandidates, read once for its page and its exact count. */
const chainTargetsRead = new WeakMap<SearchQuery, Promise<string[] | undefined>>();

/**
 * The general statement over the resources, with the search's own conditions, or a driving
 * filter's (`driven`, a chain's: chainDriven; else a key's in one project, keyDrivenConditions:
 * its index rows are the candidates, whatever the order; an unsorted string prefix never gets
 * here, its strategy always answers); a super admin's search of every project reads each
 * project's rows through its project-first indexes. A `_has`'s candidates of one project sorted by
 * parameters (not `_lastUpdated`) are read by their own page (candidatesSortedPage) instead.
 */
function generalPage(
  query: SearchQuery,
  page: PageShape,
  oneProject: DrivenSearch | undefined,
  everyOne: boolean,
  driven: HasDriven | undefined,
): Promise<PageRows> {
  const sortedPage = sortsByIndexRows(query.control.sort) && !query.paging.cursorMode ? driven?.sortedPage : undefined;
  if (sortedPage) return sortedPage(query.control.sort, page);
  const keyed = driven ?? (oneProject && query.planOnce ? keyDrivenConditions(oneProject, query.filters) : undefined);
  return pageRows(query.services.db, {
    ...page,
    args: keyed?.args ?? query.ctx.args,
    where: keyed?.where ?? query.where,
    sort: query.control.sort,
    position: query.paging.position,
    multiType: query.typeList === undefined || query.typeList.length > 1,
    planOnce: query.planOnce || keyed !== undefined || (oneProject !== undefined && inLastUpdatedOrderAlone(query, oneProject)),
    // Driven pages read their candidates by primary key, whatever their project.
    projects: everyOne && keyed === undefined ? everyProject('resource') : undefined,
  });
}

/**
 * A search of one type's chain read first (readChain): the conditions of a page its few candidates
 * drive, or its first candidates of many, with the search that read them; in one project (unless a
 * key drives it) or a super admin's search of every project.
 */
async function chainRead(
  query: SearchQuery,
  oneProject: DrivenSearch | undefined,
  everyOne: boolean,
): Promise<({ search: ChainSearch } & ChainRead) | undefined> {
  if (!query.filters.some(({ resolved }) => resolved.kind === 'chain')) return undefined;
  const search = drivenSearchOf(query, oneProject, everyOne);
  const read = search && (await readChain(search, query.filters));
  return read && { search, ...read };
}

/**
 * A page of a chain to common targets (more candidates than readChain reads at once, `common`
 * its first): unsorted, from growing windows of its candidates (chainWindowPage); sorted, from up
 * to 51,200 of them or of a rarer filter's resources (chainSortedPage), a cursor's page in its
 * keyset order after its position.
 */
function commonChainPage(query: SearchQuery, { search, common }: { search: ChainSearch; common: ChainCandidates }, page: PageShape): Promise<PageRows | undefined> {
  const { control, paging, filters } = query;
  if (control.sort.length === 0) return chainWindowPage(search, filters, page, common);
  return chainSortedPage(search, filters, control.sort, page, paging.cursorMode ? paging.position : undefined);
}

/** Whether a `_has` may drive the page: there is one, and no string prefix (which always drives itself). */
function hasMayDrive(filters: readonly Filter[]): boolean {
  return filters.some(({ resolved }) => resolved.kind === 'has') && !filters.some((filter) => prefixRangeOf(filter));
}

/**
 * The conditions of a search of one type driven by a `_has` with at most `most` referencing rows
 * (hasDrivenConditions), in one project (unless a key drives it) or a super admin's of every
 * project; never when a string prefix filter is among the filters (a name names few resources,
 * each probed for the `_has`, and its own index drives: prefixDriver, growing windows).
 */
async function hasDriven(query: SearchQuery, oneProject: DrivenSearch | undefined, everyOne: boolean, most: number): Promise<{ args: SqlArgs; where: string } | undefined> {
  if (!hasMayDrive(query.filters)) return undefined;
  const search = drivenSearchOf(query, oneProject, everyOne);
  return search && hasDrivenConditions(search, query.filters, most);
}

/**
 * Whether a page with a `_has` is filled by probing its first resources (the general statement),
 * so that a `_has` of many referencing rows does not drive it: unsorted, within the first hundred
 * matches, and no filter besides `_project`, `_has` or a string prefix. A sorted page may find its matches only far down its order,
 * and a filter no match meets (`gender` of another sex) probes every resource of the type.
 */
function probesFillPage({ control, filters }: SearchQuery): boolean {
  const others = filters.every((filter) => filter.name === '_project' || filter.resolved.kind === 'has' || prefixRangeOf(filter) !== undefined);
  return control.sort.length === 0 && control.offset + control.count < 100 && others;
}

/** The search a chain or `_has` drives: one project's (unless a key drives it), or a super admin's of every project. */
function drivenSearchOf(query: SearchQuery, oneProject: DrivenSearch | undefined, everyOne: boolean): ChainSearch | undefined {
  if (oneProject) return query.planOnce ? undefined : oneProject;
  if (!everyOne || query.typeList?.length !== 1) return undefined;
  return { services: query.services, type: query.typeList[0], scope: query.scope, ctx: query.ctx, projectId: undefined };
}

/**
 * A page of one type in one project in `_lastUpdated` order (ascending, which cursors walk, or
 * descending) with no filter but `_project` and no AccessPolicy criteria: the project's
 * (projectId, resourceType, lastUpdated, id) index gives it in order and stops at the page,
 * whatever the values, so it is planned once. Planned for its values with statistics older than
 * the data, PostgreSQL guessed a few dozen resources of the type and read and sorted every one of
 * them whenever the page asked for more rows than that (a cursor walk's pages of 1,000).
 */
function inLastUpdatedOrderAlone({ control: { sort }, filters, services }: SearchQuery, search: DrivenSearch): boolean {
  return (
    sort.length === 1 &&
    sort[0].code === '_lastUpdated' &&
    filters.every(({ name }) => name === '_project') &&
    !policyCriteria(services.identity, search.type)
  );
}

/** Whether a page is sorted by one key, not planned once (no key drives it): its walk or windows may fall short of a page that a token code's few resources hold. */
function sortedByOneKey({ control: { sort }, planOnce }: SearchQuery): boolean {
  return sort.length === 1 && !planOnce;
}
