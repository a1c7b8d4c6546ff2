import type { SqlExecutor } from '../../db/database.js';
import { SqlArgs } from '../../db/sql-args.js';
import type { SortKey } from '../plan/control.js';
import type { Filter } from '../plan/filters.js';
import type { CompileContext } from '../query/conditions/types.js';
import type { SearchServices } from '../search-services.js';
import type { DrivenSearch } from './driven.js';
import { everyProject } from './every-project.js';
import { pageOfCandidates, pageRows } from './general.js';
import { growingWindowPage } from './growing-windows.js';
import { KEY_COLUMNS, type PageRows, type PageShape } from './rows.js';
import { sortWindow } from './sorted-window.js';

/**
 * Up to this many projects, a super admin's search of every project sorted by a parameter reads
 * each project's first rows by growing windows (a few statements per project); beyond it, the
 * one statement over every project (everyProjectStatement) answers, sorting each project's matches.
 */
export const EVERY_PROJECT_WINDOWS_MAX = 32;

/** A search of one type over every project, sorted by one parameter (sortWindow). */
export interface EveryProjectSorted {
  services: SearchServices;
  type: string;
  ctx: CompileContext;
  filters: readonly Filter[];
  sort: readonly SortKey[];
  /** The search's general statement: its conditions on the resource `r` and their arguments. */
  where: string;
  args: SqlArgs;
}

/**
 * A super admin's page of every project in the order of one date or string parameter
 * (`Observation?code=..&_sort=-date`): each project's first offset + count + 1 resources in that
 * order, read as a search of that project alone reads them (growingWindowPage: the parameter's
 * index rows in order, the filters tested on them), then the page of their merge. A project whose
 * windows fall short (few of its rows meet the filters) is read by the every-project statement,
 * restricted to those projects. Undefined when the parameter has no sort window or there are more
 * than EVERY_PROJECT_WINDOWS_MAX projects.
 */
export async function everyProjectSortedPage(search: EveryProjectSorted, page: PageShape): Promise<PageRows | undefined> {
  const { services, type, sort } = search;
  const projects = await projectIds(services.db);
  if (projects.length > EVERY_PROJECT_WINDOWS_MAX) return undefined;
  const each: PageShape = { count: page.offset + page.count + 1, offset: 0, columns: KEY_COLUMNS, kept: page.kept };
  const ids: string[] = [];
  const fallen: string[] = [];
  for (const projectId of projects) {
    const driven: DrivenSearch = { services, type, scope: { projectIds: [projectId] }, projectId, ctx: search.ctx };
    const rows = sortWindow(driven, sort);
    if (!rows) return undefined;
    const read = await growingWindowPage(driven, rows, sort[0].descending ? 'DESC' : 'ASC', search.filters, each);
    if (read) ids.push(...read.rows.map(({ id }) => id));
    else fallen.push(projectId);
  }
  if (fallen.length > 0) ids.push(...(await fallenProjectsRows(search, fallen, each)));
  return pageOfCandidates(services.db, page, type, ids, sort);
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

/** Every project with resources (a loose index scan, everyProject). */
async function projectIds(db: SqlExecutor): Promise<string[]> {
  return (await db.query<{ id: string }>(`SELECT unnest(${everyProject('resource')}) AS id`)).map(({ id }) => id);
}
