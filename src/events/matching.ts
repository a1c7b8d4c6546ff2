import fhirpath from 'fhirpath';
import r4Model from 'fhirpath/fhir-context/r4';
import type { Config } from '../config.js';
import type { SqlExecutor } from '../db/database.js';
import type { Resource } from '../fhir/types.js';
import { search } from '../search/service.js';
import type { SearchConfig } from '../search/search-services.js';
import type { Change } from '../storage/change-log.js';
import { extensionOf, FHIRPATH_CRITERIA_URL, parseCriteria, SUPPORTED_INTERACTION_URL, type Subscription } from './subscription.js';

/** The most Subscriptions of one project a change is matched against. */
const MAX_SUBSCRIPTIONS = 1000;

/** A changed version, as a worker matches it. */
export interface ChangedVersion {
  readonly change: Pick<Change, 'projectId' | 'resourceType' | 'id' | 'versionId' | 'interaction'>;
  /** The version written (the last one before a delete); absent when it cannot be read. */
  readonly resource: Resource | undefined;
  /** The version before it, for `%previous`. */
  readonly previous: Resource | undefined;
  /** Whether the written version is still the current one, which the search index holds. */
  readonly current: boolean;
}

export type MatchConfig = Pick<Config, 'fhirBaseUrl' | 'accurateCountThreshold' | 'searchMaxValueLength' | 'searchMaxParameters' | 'searchMaxOrValues'>;

function searchServices(db: SqlExecutor, config: MatchConfig, projectId: string) {
  const searchConfig: SearchConfig = { ...config };
  return { db, identity: { projectId, superAdmin: false }, config: searchConfig };
}

/** The active Subscriptions of a project. */
export async function activeSubscriptions(db: SqlExecutor, config: MatchConfig, projectId: string): Promise<Subscription[]> {
  const result = await search(searchServices(db, config, projectId), 'Subscription', [['status', 'active'], ['_count', String(MAX_SUBSCRIPTIONS)]]);
  return result.matches.map((row) => JSON.parse(row.text) as Subscription);
}

/**
 * Whether a change is one `subscription` asks for, as Medplum decides it: the criteria's type,
 * the supported-interaction extension, the FHIRPath criteria (`%current`, `%previous`), then the
 * criteria's search parameters. Those run as a search of the stored index narrowed to the
 * resource's id (so chained parameters work as in any search); a deleted resource, or a version
 * superseded since, is no longer in the index, so its parameters are not checked (documented).
 */
export async function matches(db: SqlExecutor, config: MatchConfig, subscription: Subscription, version: ChangedVersion): Promise<boolean> {
  const { change } = version;
  const criteria = parseCriteria(subscription.criteria ?? '');
  if (criteria.resourceType !== change.resourceType) return false;
  const interaction = extensionOf(subscription, SUPPORTED_INTERACTION_URL)?.valueCode;
  if (interaction !== undefined && interaction !== change.interaction) return false;
  if (!fhirPathCriteriaMet(subscription, version)) return false;
  const params = criteria.params.filter(([name]) => !name.startsWith('_') || name === '_id' || name === '_tag' || name === '_profile' || name === '_security');
  if (params.length === 0 || change.interaction === 'delete' || !version.current) return true;
  const found = await search(searchServices(db, config, change.projectId), change.resourceType, [...params, ['_id', change.id], ['_count', '1']], { lenient: true });
  return found.matches.some((row) => row.id === change.id);
}

type Compiled = (resource: unknown, env: Record<string, unknown>) => unknown[];
const compiled = new Map<string, Compiled | null>();

function compile(expression: string): Compiled | null {
  let fn = compiled.get(expression);
  if (fn === undefined) {
    try {
      fn = fhirpath.compile(expression as Parameters<typeof fhirpath.compile>[0], r4Model) as unknown as Compiled;
    } catch {
      fn = null;
    }
    if (compiled.size > 1000) compiled.clear();
    compiled.set(expression, fn);
  }
  return fn;
}

/** An expression that does not compile, or fails, matches nothing. */
function fhirPathCriteriaMet(subscription: Subscription, version: ChangedVersion): boolean {
  const expression = extensionOf(subscription, FHIRPATH_CRITERIA_URL)?.valueString;
  if (!expression) return true;
  const fn = compile(expression);
  if (!fn || !version.resource) return false;
  try {
    const result = fn(version.resource, { current: version.resource, previous: version.previous ?? {} });
    return result.length > 0 && result[0] === true;
  } catch {
    return false;
  }
}
