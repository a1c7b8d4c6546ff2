import { ID_SOURCE } from '../fhir/ids.js';
import type {
  FieldNode,
  GraphQLResolveInfo,
  SelectionSetNode,
} from 'graphql';
import { assertScope, assertTypeAccess } from '../access/type-access.js';
import { searchWithClientSecrets } from '../access/client-secrets.js';
import { getResourceTypes, getSearchParametersFor, isResourceType } from '../fhir/definitions.js';
import { errors } from '../fhir/outcome.js';
import { createResolver, deleteResolver, updateResolver } from './mutations.js';
import { type Resource, isRecord } from '../fhir/types.js';
import type { Resolvers } from '../generated/graphql.js';
import { MAX_COUNT, MAX_OFFSET, search, searchServicesFor, type Paging, type SearchResult, type SearchRow, type SearchServicesOptions } from '../search/service.js';
import { keyOf } from '../storage/types.js';
import { parsedResources } from './parsed-cache.js';
import type { FieldResolver, GraphQLContext } from './context.js';
import type { ReverseQuery } from './loaders.js';

/**
 * Resolvers of the FHIR part of the schema (schema/fhir-*.graphql): reads, searches, connections,
 * mutations, Reference.resource and reverse reference lists. Built from the definitions once at start.
 * Each resolver decodes its arguments and calls the service REST calls for the same interaction
 * (the request's GuardedRepository, or the search service), so every rule holds in both.
 */
export function resourceResolvers(): Resolvers {
  const query: ResolverMap = {};
  const mutation: ResolverMap = {};
  const types: Record<string, ResolverMap> = {};
  for (const type of getResourceTypes()) {
    query[type] = readResolver(type);
    query[`${type}List`] = listResolver(type);
    query[`${type}Connection`] = connectionResolver(type);
    mutation[`${type}Create`] = createResolver(type);
    mutation[`${type}Update`] = updateResolver(type);
    mutation[`${type}Delete`] = deleteResolver(type);
  }
  for (const [target, sources] of reverseReferences()) {
    const fields: ResolverMap = (types[target] ??= {});
    for (const source of sources) fields[`${source}List`] = reverseListResolver(source);
  }
  const resolvers = {
    ...types,
    Query: query,
    Mutation: mutation,
    Resource: { __resolveType: (value: Resource) => value.resourceType },
    Reference: { resource: referenceResolver },
    Binary: { ...types.Binary, data: binaryDataResolver },
  };
  // Built from the definitions at start, so its shape is not known to the type checker.
  return resolvers as unknown as Resolvers;
}

type ResolverMap = Record<string, FieldResolver>;
type Args = Record<string, unknown>;

// Search arguments ----------------------------------------------------------------------------------

/** Result-control arguments: the rest are search parameters, named by their code with `-` as `_`. */
const CONTROL_ARGS = new Set(['_count', '_offset', '_sort', '_cursor', '_total', '_params']);
/**
 * REST parameters `_params` may not carry: paging and totals have arguments of their own (checked
 * there), and the shape of the answer is the selection set's business.
 */
const RESULT_PARAMETERS = new Set(['_count', '_offset', '_sort', '_cursor', '_total', '_include', '_revinclude', '_summary', '_elements', '_format', '_pretty', '_contained', '_containedType']);

const argumentCodes = new Map<string, Map<string, string>>();

/** Argument name → search parameter code of a type (`general_practitioner` → `general-practitioner`). */
function codesOf(type: string): Map<string, string> {
  let codes = argumentCodes.get(type);
  if (!codes) {
    codes = new Map(getSearchParametersFor(type).map((param) => [param.code.replace(/-/g, '_'), param.code]));
    codes.set('_filter', '_filter');
    argumentCodes.set(type, codes);
  }
  return codes;
}

/**
 * GraphQL arguments as REST search parameters: one parameter per list value (AND; commas inside a
 * value are OR, as in REST), `_cursor` decoded to the position it stands for. `_count` above the
 * search maximum is refused (REST clamps it; here the client asked for a list size explicitly).
 */
export function searchParams(type: string, args: Args): [string, string][] {
  const params: [string, string][] = [];
  const codes = codesOf(type);
  for (const [name, value] of Object.entries(args)) {
    if (value === undefined || value === null || CONTROL_ARGS.has(name)) continue;
    const code = codes.get(name);
    if (!code) throw errors.invalid(`Unknown search parameter "${name}" for ${type}`, name);
    for (const item of Array.isArray(value) ? value : [value]) {
      if (item !== null && item !== undefined) params.push([code, String(item)]);
    }
  }
  params.push(...rawParams(args._params));
  params.push(...controlParams(args));
  return params;
}

/** `_params: [{name, value}]`: REST parameters as written in a URL; the search engine checks them. */
function rawParams(value: unknown): [string, string][] {
  if (!Array.isArray(value)) return [];
  return value.map((item: { name: string; value: string }, index) => {
    const name = item.name.trim();
    const base = name.split(':')[0];
    if (RESULT_PARAMETERS.has(base)) {
      throw errors.invalid(`_params cannot carry ${base}: use the field's own argument or the selection set`, `_params[${index}].name`);
    }
    return [name, item.value];
  });
}

function controlParams(args: Args): [string, string][] {
  const params: [string, string][] = [];
  const count = args._count;
  if (typeof count === 'number') {
    if (count > MAX_COUNT) throw errors.invalid(`_count must be at most ${MAX_COUNT}, not ${count}`, '_count');
    params.push(['_count', String(count)]);
  }
  if (typeof args._offset === 'number') params.push(['_offset', String(args._offset)]);
  if (typeof args._sort === 'string') params.push(['_sort', args._sort]);
  if (typeof args._total === 'string') params.push(['_total', args._total]);
  if (typeof args._cursor === 'string') {
    const position = decodePageCursor(args._cursor);
    if ('offset' in position) {
      if (typeof args._offset === 'number') throw errors.invalid('Use either _cursor or _offset, not both', '_cursor');
      if (position.offset > 0) params.push(['_offset', String(position.offset)]);
    } else {
      params.push(['_cursor', position.cursor]);
    }
  }
  return params;
}

// Page cursors ----------------------------------------------------------------------------------

/**
 * A Connection's first/previous/next/last: opaque to clients, who pass one back as `_cursor` with
 * the same search arguments. It stands for an offset (offset paging) or for the search service's own
 * keyset cursor (searches sorted by `_lastUpdated` with `_count` of at least 20), which is signed and
 * tied to the search it came from.
 */
type PagePosition = { offset: number } | { cursor: string };

function encodePageCursor(position: PagePosition): string {
  const payload = 'offset' in position ? { o: position.offset } : { c: position.cursor };
  return Buffer.from(JSON.stringify(payload)).toString('base64url');
}

function decodePageCursor(text: string): PagePosition {
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(text, 'base64url').toString('utf8'));
  } catch {
    parsed = undefined;
  }
  if (isRecord(parsed)) {
    if (typeof parsed.o === 'number' && Number.isInteger(parsed.o) && parsed.o >= 0) return { offset: parsed.o };
    if (typeof parsed.c === 'string' && parsed.c !== '') return { cursor: parsed.c };
  }
  throw errors.invalid('Invalid _cursor: pass back the first, previous, next or last value of a Connection', '_cursor');
}

// Queries ---------------------------------------------------------------------------------------

/**
 * The search service, behind the same type check REST applies at its route (AccessPolicy types),
 * with the matches as FHIR JSON, remembered by the request's loaders (later references to them
 * cost nothing). Versions parsed before are not parsed again (parsed-cache.ts). Where the server
 * keeps recent versions in memory (the embedded database), or where recent pages of the type were
 * mostly versions already parsed (a client repeating a query), the search returns only the
 * matches' versions, and their JSON comes from memory (or, for versions not there, from one more
 * statement): sending a page of resources is most of the embedded database's cost of a search,
 * and receiving it a large part of the server's on PostgreSQL.
 */
async function runSearch(
  context: GraphQLContext,
  type: string,
  params: [string, string][],
  options?: SearchServicesOptions,
): Promise<{ result: SearchResult; resources: Resource[] }> {
  assertTypeAccess(context.requestContext.identity, type, false);
  assertScope(context.requestContext.identity, type, 's');
  const withoutContent = context.requestContext.repo.cachesVersions || parsedResources.holdsPagesOf(type);
  const found = await search(searchServicesFor(context.requestContext, options), type, params, { withoutContent, withBuiltins: true });
  const result = await searchWithClientSecrets(context.requestContext, found);
  const matches = result.matches;
  const known = withoutContent ? await versionsOf(context, type, matches) : undefined;
  const resources: Resource[] = new Array(matches.length);
  let held = 0;
  for (let i = 0; i < matches.length; i++) {
    const row = matches[i];
    let resource = known?.get(row.versionId);
    if (!known) {
      const key = keyOf(row);
      resource = parsedResources.get(key, row.versionId);
      if (resource) held++;
      else resource = parsedResources.parse(key, row.versionId, row.text);
    }
    if (!resource) throw new Error(`Version ${row.versionId} of ${keyOf(row)} could not be read`);
    resources[i] = context.loaders.remember(resource);
  }
  if (!known) parsedResources.notePage(type, held, matches.length);
  return { result, resources };
}

/** The parsed resources of a search's matches without content (by versionId): parsed before, or read and parsed now. */
async function versionsOf(context: GraphQLContext, type: string, rows: readonly SearchRow[]): Promise<Map<string, Resource>> {
  const found = new Map<string, Resource>();
  const unparsed: SearchRow[] = [];
  for (const row of rows) {
    const resource = parsedResources.get(keyOf(row), row.versionId);
    if (resource) found.set(row.versionId, resource);
    // The built-in definitions come with their text (no stored version to read it from).
    else if (row.text !== '') found.set(row.versionId, parsedResources.parse(keyOf(row), row.versionId, row.text));
    else unparsed.push(row);
  }
  parsedResources.notePage(type, found.size, rows.length);
  if (unparsed.length === 0) return found;
  const texts = await context.requestContext.repo.readVersionTexts(unparsed);
  for (const row of unparsed) {
    const text = texts.get(row.versionId);
    if (text !== undefined) found.set(row.versionId, parsedResources.parse(keyOf(row), row.versionId, text));
  }
  return found;
}

/** `T(id)`: the REST read, with its 404 and 410 as errors carrying the OperationOutcome. */
function readResolver(type: string): FieldResolver {
  return async (_parent: unknown, args: { id: string }, context: GraphQLContext) => {
    const version = await context.requestContext.repo.readVersion(type, args.id);
    return context.loaders.remember(parsedResources.parse(keyOf(version), version.versionId, version.text ?? 'null'));
  };
}

/** `TList(...)`: the matches of one page of the REST search. */
function listResolver(type: string): FieldResolver {
  return async (_parent: unknown, args: Args, context: GraphQLContext) => (await runSearch(context, type, searchParams(type, args))).resources;
}

interface Connection {
  count: number | null;
  offset: number | null;
  pageSize: number;
  first: string | null;
  previous: string | null;
  next: string | null;
  last: string | null;
  edges: { mode: string; score: number | null; resource: Resource }[];
}

/**
 * `TConnection(...)`: one page with its paging positions. `count` is the total: computed only when
 * the query selects it (as `_total=accurate`, but falling back to the planner's estimate above the
 * server's threshold instead of refusing) unless `_total` says otherwise; free when the page shows
 * the whole result.
 */
function connectionResolver(type: string): FieldResolver {
  return async (_parent: unknown, args: Args, context: GraphQLContext, info: GraphQLResolveInfo) => {
    const params = searchParams(type, args);
    const implicitTotal = args._total === undefined || args._total === null ? selectsField(info, 'count') : false;
    if (implicitTotal) params.push(['_total', 'accurate']);
    const { result, resources } = await runSearch(context, type, params, { estimateOverThreshold: implicitTotal });
    return toConnection(result, resources);
  };
}

function toConnection(result: SearchResult, resources: Resource[]): Connection {
  const paging = result.paging;
  const positioned = paging.cursor !== undefined;
  const count = result.total?.value ?? knownTotal(result);
  return {
    count: count ?? null,
    offset: positioned ? null : paging.offset,
    pageSize: paging.count,
    first: encodePageCursor({ offset: 0 }),
    previous: paging.previous ? encodePageCursor(paging.previous) : null,
    next: paging.next ? encodePageCursor(paging.next) : null,
    last: lastPage(paging, result.total?.exact === false ? undefined : count),
    edges: resources.map((resource) => ({ mode: 'match', score: null, resource })),
  };
}

/** With no next page, an offset page shows where the result ends. */
function knownTotal(result: SearchResult): number | undefined {
  const { paging } = result;
  if (paging.cursor !== undefined || paging.next || paging.count === 0) return undefined;
  if (paging.offset > 0 && result.matches.length === 0) return undefined;
  return paging.offset + result.matches.length;
}

/** The last page, for offset paging with an exact total (keyset paging has no position for it). */
function lastPage(paging: Paging, exactTotal: number | undefined): string | null {
  if (paging.cursorMode || exactTotal === undefined || paging.count === 0) return null;
  const offset = exactTotal === 0 ? 0 : Math.floor((exactTotal - 1) / paging.count) * paging.count;
  return encodePageCursor({ offset });
}

/** Whether the field's selection asks for `name`, directly or through fragments. */
function selectsField(info: GraphQLResolveInfo, name: string): boolean {
  const visit = (selectionSet: SelectionSetNode | undefined): boolean =>
    (selectionSet?.selections ?? []).some((selection) => {
      if (selection.kind === 'Field') return selection.name.value === name;
      if (selection.kind === 'InlineFragment') return visit(selection.selectionSet);
      return visit(info.fragments[selection.name.value]?.selectionSet);
    });
  return info.fieldNodes.some((node: FieldNode) => visit(node.selectionSet));
}

// Reverse references ----------------------------------------------------------------------------

/** Target type → the types with a reference search parameter that may point at it. */
function reverseReferences(): Map<string, Set<string>> {
  const map = new Map<string, Set<string>>();
  for (const source of getResourceTypes()) {
    for (const param of getSearchParametersFor(source)) {
      if (param.type !== 'reference') continue;
      for (const target of param.target ?? []) {
        // null: a target without a value (only an extension in `_target`) points at no type.
        if (target === null || !isResourceType(target)) continue;
        let sources = map.get(target);
        if (!sources) map.set(target, (sources = new Set()));
        sources.add(source);
      }
    }
  }
  return map;
}

/**
 * `SList(_reference: param, _params: [...], ...)` under a resource: the search
 * `S?<param>=<Type>/<id>&<_params>`. `_params` takes what it takes on the top-level `SList` (REST
 * parameters as in a URL; result parameters refused). The lists of one execution level with the same
 * arguments are batched (loaders.ts): one search for all parents in the common case.
 */
function reverseListResolver(source: string): FieldResolver {
  return async (parent: Resource, args: Args, context: GraphQLContext) => {
    if (!parent.id) return [];
    assertTypeAccess(context.requestContext.identity, source, false);
    assertScope(context.requestContext.identity, source, 's');
    const params = rawParams(args._params);
    const query: ReverseQuery = {
      source,
      code: referenceCode(source, args._reference),
      ...(params.length > 0 ? { params } : {}),
      count: boundedInt(args._count, '_count', MAX_COUNT),
      offset: boundedInt(args._offset, '_offset', MAX_OFFSET),
      sort: typeof args._sort === 'string' ? args._sort : undefined,
    };
    const resources = await context.loaders.reverse(query, `${parent.resourceType}/${parent.id}`);
    return resources.map((resource) => context.loaders.remember(resource));
  };
}

/** An optional integer argument from 0 to `max`, refused otherwise with the search service's wording. */
function boundedInt(value: unknown, name: string, max: number): number | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 0 || value > max) {
    throw errors.invalid(`${name} must be an integer from 0 to ${max}, not ${String(value)}`, name);
  }
  return value;
}

/** The `SReferenceParam` value as a search parameter code, whether the enum's internal value is the code or its name. */
function referenceCode(source: string, value: unknown): string {
  const name = String(value);
  const code = codesOf(source).get(name) ?? name;
  const param = getSearchParametersFor(source).find((candidate) => candidate.code === code);
  if (!param || param.type !== 'reference') throw errors.invalid(`${name} is not a reference search parameter of ${source}`, '_reference');
  return code;
}

// References ------------------------------------------------------------------------------------

interface ReferenceValue {
  reference?: unknown;
}

/** `Type/id`, optionally `/_history/<vid>` (the current version is returned, as for any reference). */
const RELATIVE_REFERENCE = new RegExp(`^([A-Z][A-Za-z]+)/(${ID_SOURCE})(?:/_history/${ID_SOURCE})?$`);

type Target = { resourceType: string; id: string; key: string } | { contained: string };

/**
 * Targets by reference text (for one FHIR base): the references of a page come from parsed
 * resources the server keeps (parsed-cache.ts), so the same strings come back request after
 * request, and a map lookup replaces the pattern match and the key's concatenation. Cleared when full.
 */
class TargetCache {
  private readonly targets = new Map<string, Target | null>();

  constructor(readonly fhirBase: string) {}

  get(reference: string): Target | undefined {
    let target = this.targets.get(reference);
    if (target === undefined) {
      target = referenceTarget(reference, this.fhirBase) ?? null;
      if (this.targets.size >= MAX_CACHED_TARGETS) this.targets.clear();
      this.targets.set(reference, target);
    }
    return target ?? undefined;
  }
}

const MAX_CACHED_TARGETS = 10_000;
let targetCache: TargetCache | undefined;

function targetOf(reference: unknown, fhirBase: string): Target | undefined {
  if (typeof reference !== 'string') return undefined;
  if (targetCache?.fhirBase !== fhirBase) targetCache = new TargetCache(fhirBase);
  return targetCache.get(reference);
}

/**
 * What a reference points at on this server: relative (`Patient/1`), absolute under our FHIR base,
 * or `#id` (a resource contained in the same resource). Anything else (another server, `urn:uuid:`,
 * a logical reference by identifier only) is not resolvable here.
 */
export function referenceTarget(reference: unknown, fhirBase: string): Target | undefined {
  if (typeof reference !== 'string') return undefined;
  if (reference.startsWith('#')) return { contained: reference.slice(1) };
  const relative = reference.startsWith(`${fhirBase}/`) ? reference.slice(fhirBase.length + 1) : reference;
  const match = RELATIVE_REFERENCE.exec(relative);
  if (!match || !isResourceType(match[1])) return undefined;
  return { resourceType: match[1], id: match[2], key: `${match[1]}/${match[2]}` };
}

/**
 * `Reference.resource(type, optional)`: the target through the request's batching loader. A
 * reference the server cannot resolve (missing, deleted, in another project, hidden by the caller's
 * AccessPolicy, external, or not a literal reference) is an error on this field only (FHIR GraphQL),
 * the same error whatever the cause so it does not tell "absent" from "not yours"; with
 * `optional: true` it is null. `type` restricts the result to that type (null otherwise).
 */
async function referenceResolver(
  parent: ReferenceValue,
  args: { type?: string | null; optional?: boolean | null },
  context: GraphQLContext,
): Promise<Resource | null> {
  const wanted = args.type ?? undefined;
  const resource = await resolveReference(parent, wanted, context);
  if (resource === 'other-type') return null;
  if (resource) return resource;
  if (args.optional || parent.reference === undefined) return null;
  throw errors.notFound(`Reference "${parent.reference}" could not be resolved: it is not a resource this server holds that you may read`);
}

async function resolveReference(parent: ReferenceValue, wanted: string | undefined, context: GraphQLContext): Promise<Resource | 'other-type' | null> {
  const target = targetOf(parent.reference, context.requestContext.config.fhirBaseUrl);
  if (!target) return null;
  // A reference that names another type is not loaded at all.
  if ('resourceType' in target && wanted && target.resourceType !== wanted) return 'other-type';
  const resource =
    'contained' in target ? containedTarget(parent, target.contained, context) : await context.loaders.reference(target.key);
  if (resource && wanted && resource.resourceType !== wanted) return 'other-type';
  return resource;
}

/** `#id` from the resource the reference sits in (known for resources this request read or searched). */
function containedTarget(reference: object, id: string, context: GraphQLContext): Resource | null {
  const container = context.loaders.containerOf(reference);
  if (!container) return null;
  if (id === '') return container;
  const contained = Array.isArray(container.contained) ? (container.contained as unknown[]) : [];
  return (contained.find((item) => isRecord(item) && item.id === id) as Resource | undefined) ?? null;
}

/** Binary bytes live beside the JSON: read them when the client asks for `data`, as REST does for JSON reads. */
async function binaryDataResolver(parent: Resource, _args: Args, context: GraphQLContext): Promise<string | null> {
  if (typeof parent.data === 'string') return parent.data;
  const meta = parent.meta;
  if (!parent.id || !meta?.project || !meta.versionId) return null;
  const data = await context.requestContext.repo.readBinaryData({
    resourceType: 'Binary',
    id: parent.id,
    projectId: meta.project,
    versionId: meta.versionId,
    lastUpdated: meta.lastUpdated ?? '',
    deleted: false,
    text: null,
  });
  return data ? Buffer.from(data).toString('base64') : null;
}
