import type { TerminologyCaller } from './types.js';
import type { Database } from '../db/database.js';
import { errors } from '../fhir/outcome.js';
import type { ResourceType, ResourceTypeMap, ValueSet } from '../fhir/resources.js';
import type { Resource } from '../fhir/types.js';
import type { OperationRequest } from '../operations/registry.js';
import { requestCache } from './cache.js';
import { shippedValueSet } from '../fhir/terminology-catalogue.js';

/** The newest resource of `resourceType` with canonical `url` in the caller's project (uri index). */
export async function findByUrl<K extends ResourceType>(
  ctx: TerminologyCaller,
  db: Database,
  resourceType: K,
  url: string,
): Promise<ResourceTypeMap[K] | undefined> {
  const [base, version] = url.split('|');
  const rows = await db.query<{ content: string }>(
    `SELECT r.content::text AS content FROM uri_index u
       JOIN resource r ON r."resourceType" = u."resourceType" AND r.id = u."resourceId"
     WHERE u."projectId" = $1 AND u."resourceType" = $2 AND u.code = 'url' AND u.value = $3 AND NOT r.deleted
     ORDER BY r."lastUpdated" DESC`,
    [ctx.identity.projectId, resourceType, base],
  );
  // Stored resources of that type, validated on write.
  const resources = rows.map((row) => JSON.parse(row.content) as ResourceTypeMap[K]);
  return version === undefined ? resources[0] : resources.find((r) => 'version' in r && r.version === version);
}

/**
 * A ValueSet by url: the caller's project first, then the shipped R4 value sets. Kept in memory
 * per project until the next terminology change (ValueSet writes raise the revision: cache.ts);
 * callers treat the value set as read-only.
 */
export async function findValueSet(ctx: TerminologyCaller, db: Database, url: string): Promise<ValueSet | undefined> {
  const cache = await requestCache(ctx, db);
  const find = async () => (await findByUrl(ctx, db, 'ValueSet', url)) ?? shippedValueSet(url.split('|')[0]);
  return cache ? cache.resolved(`ValueSet|${ctx.identity.projectId}|${url}`, find) : find();
}

/**
 * The resource an operation works on: the instance of an instance-level call, the resource given
 * inline (`valueSet`, `codeSystem`, ...), or the one named by `url`. Unknown url: 400 `invalid`
 * naming it (SPEC 4.5).
 */
export async function subjectResource(
  request: OperationRequest,
  resourceType: 'ValueSet' | 'CodeSystem' | 'ConceptMap',
  inline: Resource | undefined,
  url: string | undefined,
): Promise<Resource> {
  if (request.level === 'instance') return request.ctx.repo.readResource(resourceType, request.id!);
  if (inline) return inline;
  if (url === undefined) {
    throw errors.invalid(`Give the ${resourceType} by url (or call the operation on a ${resourceType} instance)`, 'Parameters.parameter');
  }
  const found =
    resourceType === 'ValueSet' ? await findValueSet(request.ctx, request.db, url) : await findByUrl(request.ctx, request.db, resourceType, url);
  if (!found) throw errors.invalid(`${resourceType} ${url} not found`, 'Parameters.parameter');
  return found;
}
