import type { SqlArgs } from '../../db/sql-args.js';
import type { Filter } from '../plan/filters.js';
import type { SortKey } from '../plan/control.js';
import { candidateConditions, freshContext, joinByPrimaryKey, type DrivenSearch } from './driven.js';
import { orderBy } from './every-project.js';
import { sortKeys } from './general.js';
import { runPage, type PageRows, type PageShape } from './rows.js';

/** Resources of one type and project that a page is read from (a `_has`'s targets), each with its project. */
export interface Candidates {
  projects: string[];
  ids: string[];
}

/** The candidates as rows of (projectId, resourceType, id), each with its project: a driven statement's source. */
export function candidatesSource(type: string, { projects, ids }: Candidates, args: SqlArgs): string {
  return `SELECT v."projectId", ${args.add(type)}::text AS "resourceType", v.id FROM unnest(${args.add(projects, 'text[]')}, ${args.add(ids, 'text[]')}) v("projectId", id)`;
}

/** Whether candidatesSortedPage can read a page in `sort`'s order: every key is a parameter's index rows (not `_lastUpdated`, a column of the resource). */
export function sortsByIndexRows(sort: readonly SortKey[]): boolean {
  return sort.length > 0 && sort.every(({ code }) => code !== '_lastUpdated');
}

/**
 * A sorted page of one project's candidates that meet `others`: each candidate's sort values are
 * read from its own index rows (sortExpression, by primary key), the candidates sorted on them, and
 * only then are resources read, in that order, until the page is full. The general statement read
 * every candidate's resource row before sorting (5,000 Patients of a `_has` for a page of 20); the
 * order is the same, its keys the same expressions on the candidate's project, type and id (a
 * candidate is read only in its own project, so they are the resource's). A candidate whose
 * resource is missing or fails the base conditions is skipped as the general statement skips it.
 */
export function candidatesSortedPage(search: DrivenSearch, { projects, ids }: Candidates, others: readonly Filter[], sort: readonly SortKey[], page: PageShape): Promise<PageRows> {
  const ctx = freshContext(search);
  const source = candidatesSource(search.type, { projects, ids }, ctx.args);
  const { candidates, onResource } = candidateConditions(search, others, ctx);
  const keys = sortKeys(sort, false, ctx.args, 'd');
  const tested = candidates.length > 0 ? ` WHERE (${candidates.join(' AND ')}) IS TRUE` : '';
  const sorted = `SELECT d.id${keys.map((key, i) => `, ${key.expression} AS k${i}`).join('')} FROM (${source}) d${tested}${orderBy(keys, (_, i) => `k${i}`)}`;
  const sql =
    `SELECT ${page.columns} FROM (${sorted}) p ${joinByPrimaryKey(search, ctx, 'p.id', onResource.join(' AND '))}` +
    `${orderBy(keys, (_, i) => `p.k${i}`)} LIMIT ${ctx.args.add(page.count + 1)} OFFSET ${ctx.args.add(page.offset)}`;
  return runPage(search.services.db, sql, ctx.args, page.count, false, page.kept, true);
}
