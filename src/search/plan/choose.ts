import { codeSortedPage } from '../pages/code-sorted.js';
import { dateRangePage, dateRangePair } from '../pages/date-range.js';
import type { DrivenSearch } from '../pages/driven.js';
import { everyProject } from '../pages/every-project.js';
import { everyProjectSortedPage } from '../pages/every-project-windows.js';
import { everyProjectUpdatedWalk } from '../pages/every-project-walk.js';
import { pageRows } from '../pages/general.js';
import { deepPage, growingWindowPage } from '../pages/growing-windows.js';
import { keyDrivenConditions, valueListConditions } from '../pages/key-driven.js';
import { isValueList } from '../pages/value-list.js';
import { chainAt, readChain, SORTED_CHAIN_CANDIDATES_MAX, type ChainCandidates, type ChainRead, type ChainSearch } from '../pages/chain-driven.js';
import { chainSortedPage, chainWindowPage } from '../pages/chain-windows.js';
import { chainTargetCandidates, chainTargetsDriven } from '../pages/chain-targets.js';
import { HAS_SOURCE_ROWS_FEW, HAS_SOURCE_ROWS_MANY, WINDOWS_BEFORE_HAS_DRIVEN, hasDrivenConditions, type HasDriven } from '../pages/has-driven.js';
import { sortsByIndexRows } from '../pages/candidates-sorted.js';
import { DATE_BOUND_FEW, DATE_BOUND_MANY, dateBoundDriven } from '../pages/date-bound-driven.js';
import type { SqlArgs } from '../../db/sql-args.js';
import { missingTrueFilter, noneMissingPage } from '../pages/missing-rows.js';
import { numericDriver } from '../pages/numeric.js';
import { orderedMatchesPage } from '../pages/ordered-matches.js';
import { COLUMNS, KEY_COLUMNS, type PageRows, type PageShape } from '../pages/rows.js';
import { hasSortWindow, sortWalk, sortWindow } from '../pages/sorted-window.js';
import { walkedSortPage } from '../pages/sorted-walk.js';
import { byLastUpdatedAlone, updatedWalkPage } from '../pages/updated-walk.js';
import { prefixDriver, prefixRangeOf } from '../pages/string-prefix.js';
import { isTokenCodeFilter, tokenCodeDriver } from '../pages/token-code.js';
import { policyCriteria } from '../../identity/policy.js';
import { searchedProject, type Filter } from './filters.js';
import type { SearchQuery } from './query.js';

/** A page strategy chosen for a search: its page, or undefined when it cannot answer after all. */
type PageReader = () => Promise<PageRows | undefined>;

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
  return generalPage(query, page, oneProject, everyOne, after ?? boundAfter);
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

/**
 * Whether chooseStrategy's page is read from growing windows alone, so that a smaller last window
 * bounds it: sorted without a chain (a chain walks its sort rows), or unsorted with a token code
 * driving and no prefix, date range or key.
 */
function readsGrowingWindows({ control, filters, planOnce }: SearchQuery, search: DrivenSearch): boolean {
  if (chainAt(filters) >= 0) return false;
  if (control.sort.length > 0) return true;
  return !planOnce && !prefixDriver(search, filters) && !dateRangePair(filters) && filters.some(isTokenCodeFilter);
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
 * A super admin's search of one type in every project sorted by one parameter: each project's
 * first rows by growing windows, as a search of that project reads them (everyProjectSortedPage).
 */
function everyProjectStrategy(query: SearchQuery, project: string | undefined, page: PageShape): PageReader | undefined {
  const { control, filters, typeList } = query;
  const everyOne = query.scope.projectIds === undefined && project === undefined && !filters.some(({ name }) => name === '_project');
  if (!everyOne || typeList?.length !== 1) return undefined;
  // A chain by `_lastUpdated`, a cursor's page too: each project walked from its position, as one project's is.
  if (chainAt(filters) >= 0 && byLastUpdatedAlone(control.sort) && walkableSort(query)) return everyProjectWalk(query, typeList[0], page);
  if (control.sort.length === 0 && !query.planOnce && walkedUnsorted(filters, false)) {
    return firstReadOf(walkShapes(page).map((shape) => everyProjectWalk(query, typeList[0], shape)));
  }
  if (!windowedSort(query) || !hasSortWindow(control.sort)) return undefined;
  return () =>
    everyProjectSortedPage({ services: query.services, type: typeList[0], scope: query.scope, ctx: query.ctx, filters, sort: control.sort, where: query.where, args: query.ctx.args }, page);
}

/** A super admin's page of every project by `_lastUpdated` alone (or unsorted, in that order), each project's walk from the cursor's position merged (everyProjectUpdatedWalk). */
function everyProjectWalk(query: SearchQuery, type: string, page: PageShape): PageReader {
  const { services, scope, ctx, control, filters, paging } = query;
  return () => everyProjectUpdatedWalk({ services, type, scope, ctx }, control.sort[0]?.descending === true, filters, page, paging.position);
}

/**
 * Whether a sorted page may be read by growing windows: one sort key (walkableSort), and no cursor
 * (its own order).
 */
function windowedSort(query: SearchQuery): boolean {
  return walkableSort(query) && !query.paging.cursorMode;
}

/**
 * Whether a sorted page may be read in its order from an index: one sort key, no key (planOnce)
 * or string prefix, whose few matches sorting serves better than walking rows few of them meet.
 */
function walkableSort({ control: { sort }, planOnce, filters }: SearchQuery): boolean {
  return sort.length === 1 && !planOnce && !filters.some(prefixRangeOf);
}

/** The strategy for a search of one type in one project, if one suits it. */
function chooseStrategy(query: SearchQuery, search: DrivenSearch, page: PageShape): PageReader | undefined {
  const { sort } = query.control;
  if (sort.length === 0) return unsortedStrategy(query, search, page);
  // A chain is probed on each resource it reaches: walked, a page probes no more of them than it
  // needs. So are other filters by `_lastUpdated` alone: without statistics, the general statement
  // read every match of a common code (`status=final`, 1,000,000) to sort them for a page.
  const chained = chainAt(query.filters) >= 0;
  if (query.filters.length > 0 && byLastUpdatedAlone(sort) && walkableSort(query)) {
    // A cursor's page too: the walk starts at its position, in the keyset order the cursor walks.
    return () => updatedWalkPage(search, sort[0].descending, query.filters, page, query.paging.position);
  }
  if (!windowedSort(query)) return undefined;
  const direction = sort[0].descending ? 'DESC' : 'ASC';
  const walk = chained ? sortWalk(sort, search.type) : undefined;
  const rows = sortWindow(search, sort);
  const windows: PageReader | undefined =
    walk ? () => walkedSortPage(search, walk, direction, query.filters, page) : rows && (() => growingWindowPage(search, rows, direction, query.filters, page));
  return windows && (async () => (await codeSortedPage(search, query.filters, sort, page)) ?? windows());
}

/**
 * A sorted page of one project with a chain to common targets that neither its walk nor a filter's
 * candidates answered (the chain, and every other filter, name more than 51,200 resources, and few
 * of them are among the first of the order): the same walk, on to SORTED_CHAIN_CANDIDATES_MAX
 * resources, as many as a driver's candidates. Each resource is probed once and the walk stops at
 * the page, so it costs what the matches' depth in the order costs, whatever the statistics; the
 * general statement started from the chain's references without them. A walk eight times longer
 * (409,600, as an unsorted page's windows go) probed for 17 s when nothing matched, before the
 * general statement all the same. A super admin's page of every project (no `search`) by
 * `_lastUpdated` alone: each project's walk as far (everyProjectUpdatedWalk).
 */
function longChainWalk(query: SearchQuery, search: DrivenSearch | undefined, everyOne: boolean, page: PageShape): PageReader | undefined {
  const { control: { sort }, filters, paging, typeList } = query;
  if (!walkableSort(query)) return undefined;
  const long = { ...page, windowFloor: SORTED_CHAIN_CANDIDATES_MAX };
  if (!search) return everyOne && typeList?.length === 1 && byLastUpdatedAlone(sort) ? everyProjectWalk(query, typeList[0], long) : undefined;
  if (byLastUpdatedAlone(sort)) return () => updatedWalkPage(search, sort[0].descending, filters, long, paging.position);
  const walk = sortWalk(sort, search.type);
  return walk && (() => walkedSortPage(search, walk, sort[0].descending ? 'DESC' : 'ASC', filters, long));
}

/**
 * The walks of an unsorted page with a chain that readChain could not read first, as its target's
 * condition is not plain index rows (`subject:Patient._lastUpdated=ge..`, `gender:not=male`,
 * `identifier:missing=true`) or it has two steps: the resources in (lastUpdated, id) order (the
 * project's index; a super admin's, every project's merged), the chain probed on each, to the
 * last window, then on to SORTED_CHAIN_CANDIDATES_MAX, as a sorted page of a common chain walks
 * (longChainWalk). Without statistics the general statement started from every reference of the
 * chain's code in the project and probed its target for each (a page of 20 ran past 30 s among
 * 1,000,000 Observations). None with a key (planOnce) or a string prefix, whose rows drive.
 */
function unreadChainWalks(query: SearchQuery, search: DrivenSearch | undefined, everyOne: boolean, page: PageShape): PageReader[] {
  const { control, filters, planOnce, typeList } = query;
  if (control.sort.length > 0 || planOnce || chainAt(filters) < 0 || filters.some(prefixRangeOf)) return [];
  const shapes = walkShapes(page);
  if (search) return shapes.map((shape) => () => updatedWalkPage(search, false, filters, shape));
  return everyOne && typeList?.length === 1 ? shapes.map((shape) => everyProjectWalk(query, typeList[0], shape)) : [];
}

/**
 * The reads of a page of one project with a `:missing=true` filter that no strategy answered, before
 * the general statement probes every resource of the type for its rows: unsorted, the resources in
 * (lastUpdated, id) order to the last window, each probed in turn (a page of common misses stops
 * early); then, sorted or not, the empty page when every resource has a row (noneMissingPage).
 * None with a key (planOnce) or a string prefix, whose rows drive.
 */
function missingWalks(query: SearchQuery, search: DrivenSearch | undefined, page: PageShape): PageReader[] {
  const { control, filters, planOnce } = query;
  const missing = search && !planOnce && !filters.some(prefixRangeOf) ? missingTrueFilter(filters, search.type) : undefined;
  if (!search || !missing) return [];
  const none: PageReader = () => noneMissingPage(search, missing);
  return control.sort.length > 0 || query.paging.cursorMode ? [none] : [() => updatedWalkPage(search, false, filters, page), none];
}

/**
 * A page without _sort: a string prefix's, a date range's, a token code's (the rarest of
 * several), a lone number comparison's (each in its index's order); the last three only without
 * a key, whose few rows the general statement reads best.
 */
function unsortedStrategy({ filters, planOnce }: SearchQuery, search: DrivenSearch, page: PageShape): PageReader | undefined {
  const prefix = prefixDriver(search, filters);
  if (prefix) return () => orderedMatchesPage(search, prefix, page);
  if (planOnce) return undefined;
  const dates = dateRangePair(filters);
  if (dates) return () => dateRangePage(search, dates, page);
  if (filters.some(isTokenCodeFilter)) {
    return async () => {
      const code = (await tokenCodeDriver(search, filters, page))!;
      return code.alone ? orderedMatchesPage(search, code, page) : growingWindowPage(search, code.matches, 'ASC', code.others, page, code.holdsEveryRow);
    };
  }
  const numeric = numericDriver(search, filters);
  if (numeric) return async () => ((await numeric.unranged()) ? orderedMatchesPage(search, numeric, page) : undefined);
  return walkedUnsorted(filters) ? firstReadOf(walkShapes(page).map((shape) => () => updatedWalkPage(search, false, filters, shape))) : undefined;
}

/**
 * Whether an unsorted page with no driver of its own walks the resources in (lastUpdated, id)
 * order, testing its filters on each: a `:not` (`code:not=..`, which most resources meet) or a
 * value list too common to drive (valueListDriven), no chain or `_has`. Planned for its values
 * without statistics, the general statement read every row of the excluded code to anti-join
 * them (50,000 for a page of 20). A super admin's page of every project walks for a `:not` alone
 * (`lists` false): a list of few rows is no value list page there (valueListDriven is one
 * project's), and walking every project for its few matches cost more than the general statement.
 */
function walkedUnsorted(filters: readonly Filter[], lists = true): boolean {
  if (filters.some(({ resolved }) => resolved.kind === 'chain' || resolved.kind === 'has')) return false;
  return filters.some(({ resolved }) => resolved.kind === 'indexed' && resolved.modifier === 'not') || (lists && filters.some(isValueList));
}

/** The shapes of an unsorted walk: to the page's last window, then on to SORTED_CHAIN_CANDIDATES_MAX resources. */
function walkShapes(page: PageShape): PageShape[] {
  return [page, { ...page, windowFloor: SORTED_CHAIN_CANDIDATES_MAX }];
}

/** The first of `readers` that answers, tried in turn. */
function firstReadOf(readers: readonly PageReader[]): PageReader {
  return async () => {
    for (const read of readers) {
      const rows = await read();
      if (rows) return rows;
    }
    return undefined;
  };
}

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
