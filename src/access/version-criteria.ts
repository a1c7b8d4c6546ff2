import type { SqlExecutor } from '../db/database.js';
import { inMemoryCriteria, type InMemoryCriteria } from '../events/token-criteria.js';
import type { Identity } from '../identity/identity.js';
import { typeCriteria } from '../identity/policy.js';
import { projectParameters } from '../indexing/parameters.js';
import { parseStored } from '../storage/versions.js';
import type { StoredVersion } from '../storage/types.js';

/**
 * AccessPolicy criteria (and SMART scope conditions) judged on a past version itself. The search
 * index holds current versions only, so a past version can be judged only where its criteria can
 * be tested in memory: built-in token parameters without modifiers (`Observation?status=final`),
 * the subscription matcher's rule (src/events/token-criteria.ts). Other criteria (references,
 * compartments, dates) cannot: their past versions are shown as the current one is judged.
 */
export type VersionJudge = (version: StoredVersion) => boolean;

/** The judge of the type's past versions for the reader; undefined when its criteria cannot be tested in memory (or there are none). */
async function pastVersionJudge(db: SqlExecutor, reader: Identity, resourceType: string): Promise<VersionJudge | undefined> {
  const criteria = typeCriteria(reader, resourceType);
  if (!criteria) return undefined;
  const own = await projectParameters(db, reader.projectId);
  // No parameters (a scope granting the whole type) holds for every resource.
  const matcher = (params: readonly (readonly [string, string])[]): InMemoryCriteria | undefined =>
    params.length === 0 ? () => true : inMemoryCriteria(resourceType, params.map(([name, value]): [string, string] => [name, value]), own);
  const all = matcher(criteria.all);
  const groups = (criteria.anyOf ?? []).map(matcher);
  if (!all || groups.some((group) => group === undefined)) return undefined;
  const anyOf = criteria.anyOf ? (groups as InMemoryCriteria[]) : undefined;
  return (version) => {
    // A deletion holds no content to judge, and tells nothing of one.
    if (version.text === null) return version.deleted;
    const resource = parseStored(version);
    return all(resource) && (anyOf === undefined || anyOf.some((group) => group(resource)));
  };
}

/**
 * Of a resource's versions (its current one within the criteria, as `current` names it), those
 * whose own content meets them; all of them when the criteria cannot be tested in memory.
 */
export async function judgedVersions<V extends StoredVersion>(db: SqlExecutor, reader: Identity, versions: readonly V[], current: string): Promise<V[]> {
  const past = versions.find((version) => version.versionId !== current);
  if (!past) return [...versions];
  const judge = await pastVersionJudge(db, reader, past.resourceType);
  return judge ? versions.filter((version) => version.versionId === current || judge(version)) : [...versions];
}
