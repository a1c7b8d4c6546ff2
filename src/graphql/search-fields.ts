import type { FieldNode, GraphQLResolveInfo, SelectionSetNode } from 'graphql';
import { assertScope, assertTypeAccess } from '../access/type-access.js';
import { searchWithClientSecrets } from '../access/client-secrets.js';
import type { Resource } from '../fhir/types.js';
import { search, searchServicesFor, type Paging, type SearchResult, type SearchRow, type SearchServicesOptions } from '../search/service.js';
import { keyOf } from '../storage/types.js';
import type { FieldResolver, GraphQLContext } from './context.js';
import { parsedResources } from './parsed-cache.js';
import { encodePageCursor, searchParams, type Args } from './search-arguments.js';

/** `T(id)`, `TList(...)` and `TConnection(...)`: the REST read and search behind GraphQL fields. */

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
  assertTypeAccess(context.requestContext.identity, type, 'search');
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
export function readResolver(type: string): FieldResolver {
  return async (_parent: unknown, args: { id: string }, context: GraphQLContext) => {
    const version = await context.requestContext.repo.readVersion(type, args.id);
    return context.loaders.remember(parsedResources.parse(keyOf(version), version.versionId, version.text ?? 'null'));
  };
}

/** `TList(...)`: the matches of one page of the REST search. */
export function listResolver(type: string): FieldResolver {
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
export function connectionResolver(type: string): FieldResolver {
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
