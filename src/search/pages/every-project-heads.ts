import type { SqlExecutor } from '../../db/database.js';
import type { SqlArgs } from '../../db/sql-args.js';
import type { Scope } from '../../storage/project-scope.js';
import type { SortKey } from '../plan/control.js';
import type { Filter } from '../plan/filters.js';
import type { SearchServices } from '../search-services.js';
import type { CompileContext } from '../query/conditions/types.js';
import { conditionsOnCandidates, conditionsOnResource, firstWindow, freshContext, joinByPrimaryKey, type AnyProjectSearch } from './driven.js';
import { everyProject } from './every-project.js';
import { impliedByIndexRows } from './growing-windows.js';
import type { PageShape } from './rows.js';
import { sortRowsUpTo, type ProjectSortWindow } from './sorted-window.js';

/** A search of one type over every project, sorted by one parameter (sortWindow). */
export interface EveryProjectSorted {
  services: SearchServices;
  type: string;
  scope: Scope;
  ctx: CompileContext;
  filters: readonly Filter[];
  sort: readonly SortKey[];
  /** The search's general statement: its conditions on the resource `r` and their arguments. */
  where: string;
  args: SqlArgs;
}

/** The fewest sort rows a project's head holds, and how much a head grows when the region it bounds is too short. */
const HEAD_MIN = 4;
const HEAD_GROWTH = 8;

/** What one heads statement found: the first matches in the page's order, how many safe candidates it had, the projects whose heads bound them. */
interface HeadsRead {
  ids: string[];
  safe: number;
  grow: string[];
}

/**
 * A super admin's first `each.count` matches of every project in the order of one date or string
 * parameter, for filters that most rows meet (`Observation?status=final&_sort=-date`), by merging
 * the heads of every project's sort rows: each project's first few resources in the page's order
 * (its window of the sort parameter's index rows, no filter tested), sorted together. Where a
 * project's head may have more rows after it, the merge holds every resource only up to that
 * head's last value; the resources before the earliest such value of all projects are the first
 * ones of the whole order (the safe candidates), and the filters are probed on them in that order,
 * one resource after another, until `each.count` meet them. A common filter thus reads a few rows
 * of each project and probes about a page's worth of resources; the per-project windows
 * (everyProjectSortedPage) probe the filters on a whole window of every project.
 * When the safe candidates are too few, the heads that bound them grow (the others already reach
 * past them). The filters' rarity is a bounded exact count, no statistics: once `firstWindow`
 * safe candidates have been probed without a page of matches (a rare filter, such as a code a
 * twentieth of the rows have; or fewer, all probed, whose matches show that rate: tooRare), or
 * a head would outgrow that many rows, or every row was read and the matches with a sort value
 * are fewer than a page (the last page; those without one come last), undefined: the windows
 * answer.
 */
export async function mergedHeadsRows(search: EveryProjectSorted, rows: ProjectSortWindow, each: PageShape, projects: readonly string[]): Promise<string[] | undefined> {
  if (projects.length === 0) return undefined;
  const budget = firstWindow(each);
  const first = Math.min(budget, Math.max(HEAD_MIN, Math.ceil((HEAD_MIN * each.count) / projects.length)));
  const heads = new Map(projects.map((project) => [project, first]));
  for (;;) {
    const read = await readHeads(search, rows, heads, { first: each.count, budget });
    if (read.ids.length >= each.count) return read.ids;
    if (read.safe >= budget || read.grow.length === 0 || tooRare(read, each.count, budget)) return undefined;
    for (const project of read.grow) {
      const size = heads.get(project)!;
      if (size >= budget) return undefined;
      heads.set(project, Math.min(budget, size * HEAD_GROWTH));
    }
  }
}

/**
 * Whether the matches among a page's worth of safe candidates, every one probed, are so few that
 * `budget` candidates would not hold `first` of them at the same rate: then growing the heads
 * only delays the windows.
 */
function tooRare(read: HeadsRead, first: number, budget: number): boolean {
  return read.safe >= first && read.ids.length * budget < first * read.safe;
}

/** Every project with resources (everyProject), as a list. */
export async function everyProjectId(db: SqlExecutor): Promise<string[]> {
  const read = await db.query<{ id: string }>(`SELECT p.id FROM unnest(${everyProject('resource')}) p(id)`);
  return read.map(({ id }) => id);
}

/**
 * One heads statement: every project's head of `heads.get(project)` sort rows, the safe
 * candidates among them probed in order up to `first` matches (at most `budget` probed), and the
 * projects whose heads end before the `budget`-th resource of all heads (or any full head, when
 * the heads hold fewer): growing them lengthens the safe candidates.
 */
async function readHeads(search: EveryProjectSorted, rows: ProjectSortWindow, heads: Map<string, number>, bounds: { first: number; budget: number }): Promise<HeadsRead> {
  const { services, type, sort } = search;
  const driven: AnyProjectSearch = { services, type, scope: search.scope, ctx: search.ctx };
  const ctx = freshContext(driven);
  const descending = sort[0].descending;
  const [direction, better, worse] = descending ? ['DESC', '>', '<'] : ['ASC', '<', '>'];
  const sizes = [...new Set(heads.values())];
  const largest = Math.max(...sizes);
  const eachSize = sizes.map((size) => headsOfSize(ctx, rows, size, [...heads].filter(([, s]) => s === size).map(([project]) => project)));
  // A head ends at its last value; it may have more rows after it when it is full.
  const full =
    `SELECT e.project, e.last FROM (SELECT h.project, max(h.size) AS size, ${descending ? 'min' : 'max'}(h.first) AS last, count(h.id) AS n FROM heads h GROUP BY h.project) e` +
    ` WHERE CASE WHEN e.n >= e.size THEN true ELSE ${sortRowsUpTo(type, sort, ctx, largest, 'e.project')} >= e.size END`;
  const budget = ctx.args.add(bounds.budget);
  const safe = `h.id IS NOT NULL AND c.blind IS NOT TRUE AND (c.v IS NULL OR h.first ${better} c.v)`;
  const candidates = conditionsOnCandidates(driven, search.filters, ctx);
  // Arguments only for conditions the statement holds: PostgreSQL cannot type one it never mentions.
  const resources = impliedByIndexRows(driven, search.filters)
    ? ''
    : ` ${joinByPrimaryKey(driven, ctx, 'd.id', conditionsOnResource(driven, search.filters, ctx).join(' AND '))}`;
  // The safe candidates in the page's order, a LIMIT so that no condition is pushed into them: the
  // filters are tested above, per candidate, until the page's matches are found.
  const probed =
    `SELECT d.id FROM (SELECT h.project AS "projectId", ${ctx.args.add(type)}::text AS "resourceType", h.id, h.first FROM heads h, cut c WHERE ${safe}` +
    ` ORDER BY h.first ${direction}, h.id LIMIT ${budget}) d${resources}${candidates.length > 0 ? ` WHERE (${candidates.join(' AND ')}) IS TRUE` : ''}` +
    ` ORDER BY d.first ${direction}, d.id LIMIT ${ctx.args.add(bounds.first)}`;
  const mark = `SELECT h.first FROM heads h WHERE h.id IS NOT NULL ORDER BY h.first ${direction}, h.id OFFSET ${ctx.args.add(bounds.budget - 1)} LIMIT 1`;
  const sql =
    `WITH heads AS MATERIALIZED (${eachSize.join(' UNION ALL ')}), full_heads AS MATERIALIZED (${full}),` +
    ` cut AS MATERIALIZED (SELECT ${descending ? 'max' : 'min'}(f.last) AS v, bool_or(f.last IS NULL) AS blind FROM full_heads f)` +
    ` SELECT t.id, NULL::text AS grow, NULL::bigint AS safe FROM (${probed}) t` +
    ` UNION ALL SELECT NULL, NULL, (SELECT count(*) FROM (SELECT 1 FROM heads h, cut c WHERE ${safe} LIMIT ${budget}) s)` +
    ` UNION ALL SELECT NULL, f.project, NULL FROM full_heads f LEFT JOIN (${mark}) m ON true WHERE f.last IS NULL OR m.first IS NULL OR NOT (f.last ${worse} m.first)`;
  const read = await services.db.query<{ id: string | null; grow: string | null; safe: string | number | null }>(sql, ctx.args.values);
  const present = (values: (string | null)[]): string[] => values.filter((value): value is string => value !== null);
  const counted = read.find(({ safe: n }) => n !== null)?.safe;
  return { ids: present(read.map(({ id }) => id)), safe: Number(counted ?? 0), grow: present(read.map(({ grow }) => grow)) };
}

/** The heads of `size` sort rows of `projects`, a row per resource and one without a resource for a project with none. */
function headsOfSize(ctx: CompileContext, rows: ProjectSortWindow, size: number, projects: readonly string[]): string {
  return (
    `SELECT p.id AS project, ${ctx.args.add(size)}::int AS size, g."resourceId" AS id, g.first` +
    ` FROM unnest(${ctx.args.add(projects)}::text[]) p(id) LEFT JOIN LATERAL (${rows(ctx, size, 'p.id')}) g ON true`
  );
}
