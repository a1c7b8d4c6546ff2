import { codeSortedPage } from '../pages/code-sorted.js';
import { dateRangePage, dateRangePair } from '../pages/date-range.js';
import type { DrivenSearch } from '../pages/driven.js';
import { everyProjectSortedPage } from '../pages/every-project-windows.js';
import { everyProjectUpdatedWalk } from '../pages/every-project-walk.js';
import { growingWindowPage } from '../pages/growing-windows.js';
import { isValueList } from '../pages/value-list.js';
import { chainAt, SORTED_CHAIN_CANDIDATES_MAX } from '../pages/chain-driven.js';
import { missingTrueFilter, noneMissingPage } from '../pages/missing-rows.js';
import { numericDriver } from '../pages/numeric.js';
import { orderedMatchesPage } from '../pages/ordered-matches.js';
import type { PageRows, PageShape } from '../pages/rows.js';
import { hasSortWindow, sortWalk, sortWindow } from '../pages/sorted-window.js';
import { walkedSortPage } from '../pages/sorted-walk.js';
import { byLastUpdatedAlone, updatedWalkPage } from '../pages/updated-walk.js';
import { prefixDriver, prefixRangeOf } from '../pages/string-prefix.js';
import { isTokenCodeFilter, tokenCodeDriver } from '../pages/token-code.js';
import type { Filter } from './filters.js';
import type { SearchQuery } from './query.js';

/**
 * The page strategies readPage (choose.ts) tries before the general statement: each reads a
 * search of one type in one project (or each project, merged) from an index in an order of its
 * own, so that the statement stops at the page; none needs statistics.
 */

/** A page strategy chosen for a search: its page, or undefined when it cannot answer after all. */
type PageReader = () => Promise<PageRows | undefined>;

/**
 * Whether chooseStrategy's page is read from growing windows alone, so that a smaller last window
 * bounds it: sorted without a chain (a chain walks its sort rows), or unsorted with a token code
 * driving and no prefix, date range or key.
 */
export function readsGrowingWindows({ control, filters, planOnce }: SearchQuery, search: DrivenSearch): boolean {
  if (chainAt(filters) >= 0) return false;
  if (control.sort.length > 0) return true;
  return !planOnce && !prefixDriver(search, filters) && !dateRangePair(filters) && filters.some(isTokenCodeFilter);
}

/**
 * A super admin's search of one type in every project sorted by one parameter: each project's
 * first rows by growing windows, as a search of that project reads them (everyProjectSortedPage).
 */
export function everyProjectStrategy(query: SearchQuery, project: string | undefined, page: PageShape): PageReader | undefined {
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
export function windowedSort(query: SearchQuery): boolean {
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
export function chooseStrategy(query: SearchQuery, search: DrivenSearch, page: PageShape): PageReader | undefined {
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
export function longChainWalk(query: SearchQuery, search: DrivenSearch | undefined, everyOne: boolean, page: PageShape): PageReader | undefined {
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
export function unreadChainWalks(query: SearchQuery, search: DrivenSearch | undefined, everyOne: boolean, page: PageShape): PageReader[] {
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
export function missingWalks(query: SearchQuery, search: DrivenSearch | undefined, page: PageShape): PageReader[] {
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
