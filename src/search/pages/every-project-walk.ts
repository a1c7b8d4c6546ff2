import type { Filter } from '../plan/filters.js';
import type { CursorPosition } from '../query/cursor.js';
import type { SqlArgs } from '../../db/sql-args.js';
import { candidateConditions, freshContext, type AnyProjectSearch } from './driven.js';
import { everyProjectId } from './every-project-heads.js';
import { positionCondition } from './general.js';
import { lastWindow } from './growing-windows.js';
import { runPage, type PageRows, type PageShape } from './rows.js';

/**
 * A super admin's page of every project sorted by `_lastUpdated` alone whose filters are costly
 * to test on each resource (a chain to common targets,
 * `Observation?subject:Patient.gender=female&_sort=_lastUpdated`), as a search of one project
 * reads it (updatedWalkPage), in every project at once: each project's (lastUpdated, id) index
 * is walked from the cursor's position (or the start), at most lastWindow(page) resources, the
 * filters tested on each in turn, until offset + count + 1 of them meet them; then the merge of
 * those in the page's order. A project whose walk fell short of that many matches with more
 * resources past its window bounds the merge: its later matches come after its window's end, so
 * only the merged matches before the earliest such end are the page's. When those are fewer than
 * the page and one more row, undefined (a rarer filter's candidates, a longer walk or the general
 * statement answer); unless no project has more (the last page). Without statistics the general
 * statement over every project started from the chain's references to its targets and took
 * 11-16 s for a page of 100.
 */
export async function everyProjectUpdatedWalk(
  search: AnyProjectSearch,
  descending: boolean,
  filters: readonly Filter[],
  page: PageShape,
  position?: CursorPosition,
): Promise<PageRows | undefined> {
  const projects = await everyProjectId(search.services.db);
  // A previous page walks back from its cursor; its rows are turned round (runPage).
  const backwards = position?.direction === 'p';
  const direction = descending !== backwards ? 'DESC' : 'ASC';
  const first = page.offset + page.count + 1;
  const merged = await mergedWalks(search, { projects, direction, window: lastWindow(page), first }, filters, position);
  if (merged.ids.length < first && merged.bounded) return undefined;
  const args = freshContext(search).args;
  const sql =
    `SELECT ${page.columns} FROM unnest(${args.add(merged.ids, 'text[]')}) WITH ORDINALITY c(id, n)` +
    ` CROSS JOIN LATERAL (SELECT * FROM resource r WHERE r."resourceType" = ${args.add(search.type)} AND r.id = c.id LIMIT 1) r` +
    ` ORDER BY c.n LIMIT ${args.add(page.count + 1)} OFFSET ${args.add(page.offset)}`;
  return runPage(search.services.db, sql, args, page.count, backwards, page.kept, false);
}

/** How every project's walk is read: its projects, the order's direction, how far each project's walk goes and how many matches the merge keeps. */
interface Walks {
  projects: readonly string[];
  direction: 'ASC' | 'DESC';
  window: number;
  first: number;
}

/**
 * One statement: the first `walks.first` merged matches of every project's walk that come before
 * the end of every walk that fell short with resources past it, in the page's order, and whether
 * there was such a walk (`bounded`). A walk's end is the first resource past its window, so its
 * project's resources before that end were all tested.
 */
async function mergedWalks(search: AnyProjectSearch, walks: Walks, filters: readonly Filter[], position: CursorPosition | undefined): Promise<{ ids: string[]; bounded: boolean }> {
  const ctx = freshContext(search);
  const { candidates, onResource } = candidateConditions(search, filters, ctx);
  const { direction } = walks;
  const order = ` ORDER BY r."lastUpdated" ${direction}, r.id ${direction}`;
  const first = ctx.args.add(walks.first);
  const window = ctx.args.add(walks.window);
  const resources = (project: string) => projectResources(search, project, position, ctx.args);
  // Each project's walk tests one resource after another (subplans in the walk's order) and stops
  // at its first matches: the ORDER BY is the walk's own, so no sort reads the window first.
  const walk =
    `SELECT r.id, r."lastUpdated" FROM (SELECT * ${resources('p.id')}${order} LIMIT ${window}) r` +
    ` CROSS JOIN LATERAL (SELECT r."projectId", r."resourceType", r.id) d WHERE (${[...candidates, ...onResource].join(' AND ')}) IS TRUE${order} LIMIT ${first}`;
  const past = `SELECT r."lastUpdated", r.id ${resources('s.project')}${order} OFFSET ${window} LIMIT 1`;
  const before = direction === 'ASC' ? '<' : '>';
  const sql =
    `WITH walks AS MATERIALIZED (SELECT p.id AS project, w.id, w."lastUpdated" FROM unnest(${ctx.args.add(walks.projects, 'text[]')}) p(id) LEFT JOIN LATERAL (${walk}) w ON true),` +
    ` ends AS MATERIALIZED (SELECT e."lastUpdated", e.id FROM (SELECT w.project FROM walks w GROUP BY w.project HAVING count(w.id) < ${first}) s CROSS JOIN LATERAL (${past}) e)` +
    ` SELECT m.id, m.n, NULL::boolean AS bounded FROM (SELECT w.id, row_number() OVER (ORDER BY w."lastUpdated" ${direction}, w.id ${direction}) AS n FROM walks w WHERE w.id IS NOT NULL` +
    ` AND NOT EXISTS (SELECT 1 FROM ends e WHERE NOT ((w."lastUpdated", w.id) ${before} (e."lastUpdated", e.id)))) m WHERE m.n <= ${first}` +
    ` UNION ALL SELECT NULL, NULL, EXISTS (SELECT 1 FROM ends)`;
  // Planned once, as a project's walk is (updatedWalkPage): planned for its values without
  // statistics, each project's resources were read by a bitmap or sequential scan and sorted.
  const read = await search.services.db.query<{ id: string | null; n: string | number | null; bounded: boolean | null }>(sql, ctx.args.values, { planOnce: true });
  const ids = read.filter(({ id }) => id !== null).sort((a, b) => Number(a.n) - Number(b.n));
  return { ids: ids.map(({ id }) => id!), bounded: read.some(({ bounded }) => bounded === true) };
}

/** The FROM clause of one project's resources of the type (`r`; `project`: its id as an SQL expression), after (or before) a cursor's position. */
function projectResources(search: AnyProjectSearch, project: string, position: CursorPosition | undefined, args: SqlArgs): string {
  const after = position ? ` AND ${positionCondition(position, false, args)}` : '';
  return `FROM resource r WHERE r."projectId" = ${project} AND r."resourceType" = ${args.add(search.type)}${after}`;
}
