import fhirpath from 'fhirpath';
import r4Model from 'fhirpath/fhir-context/r4';
import type { Config } from '../config.js';
import type { SqlExecutor } from '../db/database.js';
import type { Resource } from '../fhir/types.js';
import { projectParameters, type ProjectParameters } from '../indexing/parameters.js';
import { search } from '../search/service.js';
import type { SearchConfig } from '../search/search-services.js';
import type { Change } from '../storage/change-log.js';
import { botCodeBinaryIds } from '../storage/bot-code.js';
import { extensionOf, FHIRPATH_CRITERIA_URL, parseCriteria, SUPPORTED_INTERACTION_URL, type Subscription } from './subscription.js';
import { inMemoryCriteria } from './token-criteria.js';

/** The most ids one search of a criteria is narrowed to. */
const IDS_PER_SEARCH = 100;

/** A changed version, as a worker matches it. */
export interface ChangedVersion {
  readonly change: Pick<Change, 'projectId' | 'resourceType' | 'id' | 'versionId' | 'interaction'>;
  /** The version written (the last one before a delete); absent when it cannot be read. */
  readonly resource: Resource | undefined;
  /** Its stored text, as deliveries send it (absent for a delete or when it cannot be read). */
  readonly text?: string;
  /** The version before it, for `%previous`. */
  readonly previous: Resource | undefined;
  /** Whether the written version is still the current one, which the search index holds. */
  readonly current: boolean;
}

export type MatchConfig = Pick<Config, 'fhirBaseUrl' | 'accurateCountThreshold' | 'searchMaxValueLength' | 'searchMaxParameters' | 'searchMaxOrValues'>;

/** Whether any of `subscriptions` reads `%previous` (then the version before each change must be read). */
export function needsPrevious(subscriptions: readonly Subscription[]): boolean {
  return subscriptions.some((subscription) => extensionOf(subscription, FHIRPATH_CRITERIA_URL)?.valueString?.includes('%previous'));
}

/**
 * Which of `subscriptions` (all of one project) each of `versions` (changes of that project) is
 * for, as Medplum decides it: the criteria's type, the supported-interaction extension, the
 * FHIRPath criteria (`%current`, `%previous`), then the criteria's search parameters. Criteria of
 * built-in token parameters only are tested on the version in memory (token-criteria.ts); others
 * run as a search of the stored index narrowed to the changed ids, one per distinct criteria and
 * batch of ids rather than one per change (chained parameters work as in any search), where a
 * deleted resource, or a version superseded since, is no longer in the index, so its parameters
 * are not checked (documented). Any channel type: the caller picks the channels it serves.
 */
export async function matchChanges(
  db: SqlExecutor,
  config: MatchConfig,
  subscriptions: readonly Subscription[],
  versions: readonly ChangedVersion[],
): Promise<Subscription[][]> {
  const matched = versions.map((): Subscription[] => []);
  // Subscriptions often share their criteria (several receivers of one feed): one search each.
  const byCriteria = new Map<string, Subscription[]>();
  for (const subscription of subscriptions) {
    const key = JSON.stringify([subscription.criteria, subscription.extension]);
    const group = byCriteria.get(key);
    if (group) group.push(subscription);
    else byCriteria.set(key, [subscription]);
  }
  if (versions.length === 0) return matched;
  const own = await projectParameters(db, versions[0].change.projectId);
  const withheld = await botCodeVersions(db, versions);
  for (const group of byCriteria.values()) {
    const found = await matchingVersions(db, config, group[0], versions, own);
    for (const index of found) if (!withheld.has(index)) matched[index].push(...group);
  }
  return matched;
}

/**
 * The indexes of the versions that are a Bot's code (src/storage/bot-code.ts): no Subscription is
 * for them, since a notification would carry the code to its endpoint or socket.
 */
async function botCodeVersions(db: SqlExecutor, versions: readonly ChangedVersion[]): Promise<Set<number>> {
  const withheld = new Set<number>();
  if (!versions.some(({ change }) => change.resourceType === 'Binary')) return withheld;
  const ids = await botCodeBinaryIds(db, versions[0].change.projectId);
  versions.forEach(({ change }, index) => {
    if (change.resourceType === 'Binary' && ids.has(change.id)) withheld.add(index);
  });
  return withheld;
}

/** The indexes of the versions `subscription` is for. */
async function matchingVersions(db: SqlExecutor, config: MatchConfig, subscription: Subscription, versions: readonly ChangedVersion[], own: ProjectParameters): Promise<number[]> {
  const criteria = parseCriteria(subscription.criteria ?? '');
  const interaction = extensionOf(subscription, SUPPORTED_INTERACTION_URL)?.valueCode;
  const params = criteria.params.filter(([name]) => !name.startsWith('_') || name === '_id' || name === '_tag' || name === '_profile' || name === '_security');
  const inMemory = inMemoryCriteria(criteria.resourceType, params, own);
  const found: number[] = [];
  const toSearch: number[] = [];
  versions.forEach((version, index) => {
    const { change } = version;
    if (criteria.resourceType !== change.resourceType) return;
    if (interaction !== undefined && interaction !== change.interaction) return;
    if (!fhirPathCriteriaMet(subscription, version)) return;
    if (params.length === 0 || change.interaction === 'delete') found.push(index);
    // Token criteria are tested on the version itself, current or not: no search needed.
    else if (inMemory && version.resource) {
      if (inMemory(version.resource)) found.push(index);
    } else if (!version.current) found.push(index);
    else toSearch.push(index);
  });
  for (let start = 0; start < toSearch.length; start += IDS_PER_SEARCH) {
    const chunk = toSearch.slice(start, start + IDS_PER_SEARCH);
    const ids = new Set(await matchingIds(db, config, criteria.resourceType, params, chunk.map((index) => versions[index].change)));
    for (const index of chunk) if (ids.has(versions[index].change.id)) found.push(index);
  }
  return found;
}

async function matchingIds(db: SqlExecutor, config: MatchConfig, resourceType: string, params: [string, string][], changes: ChangedVersion['change'][]): Promise<string[]> {
  const ids = [...new Set(changes.map((change) => change.id))];
  const searchConfig: SearchConfig = { ...config };
  const services = { db, identity: { projectId: changes[0].projectId, superAdmin: false }, config: searchConfig };
  const result = await search(services, resourceType, [...params, ['_id', ids.join(',')], ['_count', String(ids.length)], ['_total', 'none']], { lenient: true });
  return result.matches.map((row) => row.id);
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
