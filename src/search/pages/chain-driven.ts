import { filterCondition, type Filter } from '../plan/filters.js';
import type { IndexRowsCondition } from '../query/conditions/types.js';
import { indexRowsSource } from '../query/conditions/shared.js';
import type { SqlArgs } from '../../db/sql-args.js';
import { freshContext, type AnyProjectSearch } from './driven.js';
import { candidatesSource } from './candidates-sorted.js';
import { everyProject } from './every-project.js';
import { GROWING_WINDOW_MAX } from './growing-windows.js';
import { drivenWhere } from './key-driven.js';

/** A search of one type in one project (`projectId`), or, undefined, a super admin's of every project. */
export interface ChainSearch extends AnyProjectSearch {
  projectId: string | undefined;
}

/** The most candidates (reference rows to the chain's targets) a page is read from at once: also the first window of a common chain's. */
export const CHAIN_CANDIDATES_MAX = GROWING_WINDOW_MAX;
/**
 * The most candidates a sorted page is read from: each is read and its sort value computed, so a
 * page of 51,200 took one to three seconds without statistics; past it the general statement.
 */
export const SORTED_CHAIN_CANDIDATES_MAX = 51_200;

/** Where the first chained filter (`subject:Patient.name=..`) stands among `filters`, or -1. */
export function chainAt(filters: readonly Filter[]): number {
  return filters.findIndex(({ resolved }) => resolved.kind === 'chain');
}

/** What a chain's first read found: the conditions of a page its few candidates drive, or the first candidates of many. */
export type ChainRead = { driven: { args: SqlArgs; where: string } } | { common: ChainCandidates };

/**
 * A chain's first read (`subject:Patient.name=smith42`) whose targets' matches are index rows:
 * when those targets are referenced by at most CHAIN_CANDIDATES_MAX rows, the conditions of its
 * page: the referencing resources are the candidates (read first, as keyDrivenConditions reads a
 * key's), the other filters are tested on them, and the resources are read by primary key.
 * Otherwise the chain's targets are common, and the first candidates read are handed on to the
 * page that reads them in windows (chainWindowPage), which would read them again.
 * The general statement tests the chain on each resource in turn: without statistics PostgreSQL
 * started from every reference row of the code in the project and probed the target's name rows
 * for each (a page of a rare name took longer than a minute among 1,000,000 Observations), with
 * or without a project. The candidates of every project are read one project at a time (the
 * chain's rows are one project's, for the project-first indexes) and carry their project.
 */
export async function readChain(search: ChainSearch, filters: readonly Filter[]): Promise<ChainRead | undefined> {
  const at = chainAt(filters);
  if (at < 0) return undefined;
  const candidates = await chainCandidates(search, filters[at], CHAIN_CANDIDATES_MAX);
  if (!candidates) return undefined;
  if (!candidates.complete) return { common: candidates };
  const ctx = freshContext(search);
  const source = candidatesSource(search.type, candidates, ctx.args);
  return { driven: drivenWhere(search, filters.filter((_, i) => i !== at), ctx, source) };
}

/** A chain's first candidates, each once with its project, and whether they are all of them. */
export interface ChainCandidates {
  projects: string[];
  ids: string[];
  complete: boolean;
}

/**
 * The first `most` resources whose references the chain `filter` follows to a matching target
 * (each once, with its project, in the order the reference rows were read), or undefined when the
 * chain reports no rows. `complete` when there are no more.
 */
export async function chainCandidates(search: ChainSearch, filter: Filter, most: number): Promise<ChainCandidates | undefined> {
  const ctx = freshContext(search);
  // Every project: the projects are read one at a time, `p.id` the one being read (below).
  const project = search.projectId === undefined ? 'p.id' : ctx.args.add(search.projectId);
  let rows: IndexRowsCondition | undefined;
  const condition = filterCondition(filter, [search.type], 'r', { ...ctx, rowsProject: project, onRows: (found) => (rows = found) });
  if (!rows || rows.depth !== 0 || !condition.startsWith('EXISTS (')) return undefined;
  const scope = `${rows.alias}."projectId" = ${project} AND ${rows.alias}."resourceType" = ${ctx.args.add(search.type)}`;
  const limit = ctx.args.add(most + 1);
  const each = `SELECT d."projectId", d.id FROM (${indexRowsSource(rows, scope)}) d LIMIT ${limit}`;
  const sql =
    search.projectId === undefined ? `SELECT c."projectId", c.id FROM unnest(${everyProject('resource')}) p(id) CROSS JOIN LATERAL (${each}) c LIMIT ${limit}` : each;
  const found = await search.services.db.query<{ projectId: string; id: string }>(sql, ctx.args.values);
  const complete = found.length <= most;
  const unique = new Map(found.slice(0, most).map(({ projectId, id }) => [id, projectId]));
  return { projects: [...unique.values()], ids: [...unique.keys()], complete };
}
