import { SqlArgs } from '../../db/sql-args.js';
import { conditionsOnCandidates, conditionsOnResource, firstWindow, freshContext, joinByPrimaryKey, type AnyProjectSearch } from './driven.js';
import { drivingTokenCode, everyCodeRowPage, fewCodeRowsPage, type DrivingCode } from './every-project-codes.js';
import { everyProjectId, mergedHeadsRows, type EveryProjectSorted } from './every-project-heads.js';
import { pageOfCandidates, pageRows } from './general.js';
import { growingWindows, impliedByIndexRows } from './growing-windows.js';
import { KEY_COLUMNS, type PageRows, type PageShape } from './rows.js';
import { projectSortWindow, sortRowsUpTo, sortWalk, type ProjectSortWindow, type SortWalk } from './sorted-window.js';
import { chainAt } from './chain-driven.js';
import { chainSortedProjects } from './chain-windows.js';

/**
 * What one window statement found: the first rows of the projects it answered for, the projects
 * whose windows fell short among those with fewer sort rows than the next window would read
 * (`small`: the every-project statement sorts their few matches instead) and the others
 * (`larger`: the next window reads them).
 */
interface WindowRead {
  ids: string[];
  small: string[];
  larger: string[];
}

/**
 * A super admin's page of every project in the order of one date or string parameter
 * (`Observation?code=..&_sort=-date`), however many projects there are: one statement reads each
 * project's first offset + count + 1 resources from a window of its sort parameter's index rows,
 * the filters tested on them, as a search of that project alone reads them (growingWindowPage),
 * and keeps the first of their merge. Of the projects whose windows fell short (few of its rows
 * meet the filters, or it has few rows), those with fewer rows of the sort parameter than the next
 * window would read are read by the every-project statement restricted to them, which sorts their
 * matches (fewer than that many rows each, whatever its plan: its indexes lead with the project;
 * and its matches without a sort value, which no window holds, come last); the others by the next
 * window, and past the largest by that statement too. With a token code among the filters, the
 * projects with few rows of the code are read from those rows first (fewCodeRowsPage) and the
 * windows read only the others; those past the largest window are read from every row of the code
 * (everyCodeRowPage), not by that statement, as are all projects when the page is deeper than the
 * largest window. With a chain among the filters, the projects left to that statement are first
 * read as a search of each alone is past its walk (chainSortedProjects). Before all of that, filters that most rows meet are probed on the
 * merged heads of every project's sort rows (mergedHeadsRows), which answer with a few rows of
 * each project. Undefined when the parameter has no sort window.
 */
export async function everyProjectSortedPage(search: EveryProjectSorted, page: PageShape): Promise<PageRows | undefined> {
  const { services, type, sort } = search;
  const rows = projectSortWindow(type, sort);
  if (!rows) return undefined;
  const each: PageShape = { count: page.offset + page.count + 1, offset: 0, columns: KEY_COLUMNS, kept: page.kept };
  const every = await everyProjectId(services.db);
  const merged = await mergedHeadsRows(search, rows, each, every);
  if (merged) return pageOfCandidates(services.db, page, type, merged, sort);
  // A chain is probed on each resource it reaches: each project's rows are walked to its first
  // matches (sortWalk, walkedSortPage), in one window, the largest, as the smaller ones would be walked again.
  const walk = chainAt(search.filters) >= 0 ? sortWalk(sort, type) : undefined;
  const windows = walk ? growingWindows(each).slice(-1) : growingWindows(each);
  const { ids, others, code } = await rowsOfFewCodeRows(search, each, windows, every);
  const sorted: string[] = [];
  let projects = others;
  for (const [i, window] of windows.entries()) {
    if (projects.length === 0) break;
    const read = await windowOfProjects(search, walk ? { walk } : { window: rows }, { size: window, next: windows[i + 1] ?? window }, each.count, projects);
    ids.push(...read.ids);
    sorted.push(...read.small);
    projects = read.larger;
  }
  if (code && projects.length > 0) ids.push(...(await everyCodeRowPage(search, code, each.count, projects)));
  else sorted.push(...projects);
  // With a chain, those projects are read as a search of each alone reads it past its walk: the
  // every-project statement started from their references to the chain's targets without
  // statistics, even in a project of 5,200 Observations.
  const fallen = walk ? await chainSortedProjects(search, sorted, each) : { ids: [], rest: sorted };
  ids.push(...fallen.ids);
  if (fallen.rest.length > 0) ids.push(...(await fallenProjectsRows(search, fallen.rest, each)));
  return pageOfCandidates(services.db, page, type, ids, sort);
}

/**
 * Before the windows: the first rows of the projects with fewer rows of the search's token code
 * than the first window (fewCodeRowsPage), the projects the windows read, and the code. A page
 * deeper than the largest window reads no window: every project is left to the code's rows.
 */
async function rowsOfFewCodeRows(search: EveryProjectSorted, each: PageShape, windows: readonly number[], every: string[]): Promise<{ ids: string[]; others: readonly string[]; code?: DrivingCode }> {
  if (windows.length === 0) return { ids: [], others: every, code: await drivingTokenCode(search, firstWindow(each), every) };
  const few = await fewCodeRowsPage(search, each.count, windows[0], every);
  return few ?? { ids: [], others: every };
}

/**
 * One window statement over `projects`: each project's first `first` resources among its
 * window's rows that meet the search; the first `first` of those of the projects that have as
 * many, and the other projects, small or larger than `window.next` (WindowRead). Each project's
 * window is an index scan of its own, stopped at `window.size` rows (a walk of them, `rows.walk`,
 * stops at its first matches); a project that fell short is counted up to `window.next` rows, no
 * more than the next window would read of it.
 */
async function windowOfProjects(
  search: EveryProjectSorted,
  rows: { walk: SortWalk } | { window: ProjectSortWindow },
  window: { size: number; next: number },
  first: number,
  projects: readonly string[],
): Promise<WindowRead> {
  const { services, type, sort } = search;
  const driven: AnyProjectSearch = { services, type, scope: search.scope, ctx: search.ctx };
  const ctx = freshContext(driven);
  const candidates = conditionsOnCandidates(driven, search.filters, ctx);
  const direction = sort[0].descending ? 'DESC' : 'ASC';
  const limit = ctx.args.add(first);
  const list = `${ctx.args.add(projects)}::text[]`;
  // Arguments only for conditions the statement holds: PostgreSQL cannot type one it never mentions.
  const resources = impliedByIndexRows(driven, search.filters)
    ? ''
    : ` ${joinByPrimaryKey(driven, ctx, 'd.id', conditionsOnResource(driven, search.filters, ctx).join(' AND '))}`;
  const test = candidates.length > 0 ? candidates.join(' AND ') : undefined;
  // A walk's rows are tested as they come and stop at the first matches, which a sort would not.
  const tested =
    'walk' in rows
      ? `SELECT d.id, d.first FROM (${rows.walk(ctx, window.size, 'p.id', test)}) d${resources} LIMIT ${limit}`
      : `SELECT d.id, d.first FROM (SELECT p.id AS "projectId", ${ctx.args.add(type)}::text AS "resourceType", g."resourceId" AS id, g.first` +
        ` FROM (${rows.window(ctx, window.size, 'p.id')}) g) d${resources}${test ? ` WHERE (${test}) IS TRUE` : ''}` +
        ` ORDER BY d.first ${direction}, d.id LIMIT ${limit}`;
  const next = ctx.args.add(window.next);
  const sql =
    `WITH firsts AS MATERIALIZED (SELECT p.id AS project, u.id, u.first FROM unnest(${list}) p(id) LEFT JOIN LATERAL (${tested}) u ON true),` +
    ` fell AS MATERIALIZED (SELECT e.project, ${sortRowsUpTo(type, sort, ctx, window.next, 'e.project')} AS n` +
    ` FROM firsts e GROUP BY e.project HAVING count(e.id) < ${limit})` +
    ` SELECT t.id, NULL::text AS small, NULL::text AS larger FROM (SELECT e.id, e.first FROM firsts e` +
    ` WHERE e.id IS NOT NULL AND e.project NOT IN (SELECT s.project FROM fell s)` +
    ` ORDER BY e.first ${direction}, e.id LIMIT ${limit}) t` +
    ` UNION ALL SELECT NULL, s.project, NULL FROM fell s WHERE s.n < ${next}` +
    ` UNION ALL SELECT NULL, NULL, s.project FROM fell s WHERE s.n >= ${next}`;
  const read = await services.db.query<{ id: string | null; small: string | null; larger: string | null }>(sql, ctx.args.values);
  const present = (values: (string | null)[]): string[] => values.filter((value): value is string => value !== null);
  return { ids: present(read.map(({ id }) => id)), small: present(read.map(({ small }) => small)), larger: present(read.map(({ larger }) => larger)) };
}

/** The first rows of the projects whose windows fell short, by the every-project statement over just them. */
async function fallenProjectsRows(search: EveryProjectSorted, projects: readonly string[], each: PageShape): Promise<string[]> {
  const args = new SqlArgs();
  args.values.push(...search.args.values);
  const read = await pageRows(search.services.db, {
    ...each,
    args,
    where: search.where,
    sort: search.sort,
    position: undefined,
    multiType: false,
    planOnce: false,
    projects: `${args.add(projects)}::text[]`,
  });
  return read.rows.map(({ id }) => id);
}
