import { errors } from '../fhir/outcome.js';
import type { RequestContext } from '../operations/context.js';
import { checkSearchSize, search, searchServicesFor, type SearchRow } from '../search/service.js';

/**
 * The search of a conditional interaction (http.html 3.1.0.8-3.1.0.10): `If-None-Exist`, a
 * conditional URL's query, or a conditional reference. It runs in the caller's project under the
 * caller's AccessPolicy, so a match the caller cannot see counts as no match.
 */

/** Paging and shaping parameters cannot change which resources match. */
const IGNORED = new Set(['_count', '_offset', '_cursor', '_sort', '_total', '_summary', '_elements', '_include', '_revinclude', '_format', '_pretty']);

/** The search parameters of `If-None-Exist` (`identifier=x`, or `Patient?identifier=x` as some clients send it). */
export function searchOfHeader(header: string): URLSearchParams {
  const question = header.indexOf('?');
  return new URLSearchParams(question >= 0 ? header.slice(question + 1) : header);
}

/** The criteria as search parameters, or 400 when nothing is left to search by. */
export function conditionalCriteria(query: URLSearchParams, what: string): [string, string][] {
  const criteria = [...query.entries()].filter(([name]) => !IGNORED.has(name));
  if (criteria.length === 0) throw errors.invalid(`${what} needs search parameters that select the resource`);
  return criteria;
}

/**
 * Serialises conditional writes with the same criteria in the same project until the caller's
 * transaction ends, on every server sharing the database: two clients creating "the patient with
 * this identifier" at once find one patient, not none each. The criteria are sorted so that the
 * same search in another order takes the same lock.
 */
async function lockCriteria(ctx: RequestContext, resourceType: string, criteria: [string, string][]): Promise<void> {
  const tx = ctx.transaction;
  if (!tx) throw new Error('lockCriteria runs inside a transaction');
  const normalised = criteria.map(([name, value]) => `${name}=${value}`).sort().join('&');
  await tx.query('SELECT 1 AS locked FROM pg_advisory_xact_lock(hashtextextended($1, 0))', [`${ctx.identity.projectId}|${resourceType}|${normalised}`]);
}

/** At most two matches: enough to tell none, one and several apart. */
export async function findMatches(ctx: RequestContext, resourceType: string, criteria: [string, string][]): Promise<SearchRow[]> {
  const result = await search(searchServicesFor(ctx), [resourceType], [...criteria, ['_count', '2']]);
  return result.matches;
}

/** The one match, or none; several is a 412. */
export async function onlyMatch(ctx: RequestContext, resourceType: string, criteria: [string, string][]): Promise<SearchRow | undefined> {
  const matches = await findMatches(ctx, resourceType, criteria);
  if (matches.length > 1) throw severalMatches(resourceType, criteria);
  return matches[0];
}

/** onlyMatch under the criteria's lock (lockCriteria), inside the caller's transaction: what a conditional write decides by. */
export async function lockedMatch(tx: RequestContext, resourceType: string, criteria: [string, string][]): Promise<SearchRow | undefined> {
  // The lock's key is the criteria's text, sent before the search would check them: a NUL in it
  // (which PostgreSQL text cannot hold) failed the statement with a 500, not the search's 400.
  checkSearchSize(criteria, tx.config);
  await lockCriteria(tx, resourceType, criteria);
  return onlyMatch(tx, resourceType, criteria);
}

function severalMatches(resourceType: string, criteria: [string, string][]): Error {
  const query = new URLSearchParams(criteria).toString();
  return errors.preconditionFailed(`More than one ${resourceType} matches ${resourceType}?${query}: make the criteria select one resource`);
}
