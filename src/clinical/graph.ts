import { randomUUID } from 'node:crypto';
import { errors } from '../fhir/outcome.js';
import type { Bundle, BundleEntry, Resource } from '../fhir/types.js';
import type { RequestContext } from '../operations/context.js';
import { ownOperationDefinition } from '../operations/definition.js';
import type { Operation } from '../operations/registry.js';
import { search, searchServicesFor } from '../search/service.js';
import { assertStartProfile } from './graph-rules.js';
import { followLinks, type GraphLink, type GraphWalk } from './graph-walk.js';

/**
 * `$graph` (http://hl7.org/fhir/R4/resource-operation-graph.html): the resources a
 * GraphDefinition of the caller's project reaches from this resource (graph-walk.ts), as a
 * `collection` Bundle, the resource first, as Medplum answers it.
 */

interface GraphInput {
  graph: string;
}

interface GraphDefinitionLike extends Resource {
  start?: string;
  profile?: string;
  link?: GraphLink[];
}

export const graphOperation: Operation<GraphInput, { return: Bundle }> = {
  definition: ownOperationDefinition('graph.json'),
  async handler(input, { ctx, resourceType, id }) {
    const definition = await findGraph(ctx, input.graph);
    if (definition.start !== resourceType) {
      throw errors.invalid(`GraphDefinition ${input.graph} starts at ${definition.start ?? 'no type'}, not at ${resourceType}`, 'graph');
    }
    const root = await ctx.repo.readResource(resourceType!, id!);
    const walk: GraphWalk = { found: new Map([[`${root.resourceType}/${root.id}`, root]]), warnings: [] };
    await assertStartProfile(ctx, root, definition.profile, walk.warnings);
    await followLinks(ctx, root, definition.link ?? [], walk, '');
    const base = ctx.config.fhirBaseUrl;
    const entry: BundleEntry[] = [...walk.found.entries()].map(([key, resource]) => ({ fullUrl: `${base}/${key}`, resource }));
    // Links that found fewer than their min, resources a target's rules left out: one OperationOutcome entry at the end, with a warning for each.
    if (walk.warnings.length > 0) entry.push({ fullUrl: `urn:uuid:${randomUUID()}`, resource: { resourceType: 'OperationOutcome', issue: walk.warnings } });
    return { return: { resourceType: 'Bundle', type: 'collection', entry } };
  },
};

/**
 * The GraphDefinition `graph` names in the caller's project: by url (`|version` allowed), else by
 * id, else by name (Medplum's client sends the name). None: 404 saying so.
 */
async function findGraph(ctx: RequestContext, graph: string): Promise<GraphDefinitionLike> {
  const [url, version] = graph.split('|');
  const attempts: [string, string][][] = [[['url', url], ...(version ? [['version', version] as [string, string]] : [])]];
  if (/^[A-Za-z0-9\-.]{1,64}$/.test(graph)) attempts.push([['_id', graph]], [['name:exact', graph]]);
  for (const params of attempts) {
    const result = await search(searchServicesFor(ctx), 'GraphDefinition', [...params, ['_count', '1']]);
    if (result.matches.length > 0) return JSON.parse(result.matches[0].text) as GraphDefinitionLike;
  }
  throw errors.notFound(`GraphDefinition "${graph}" not found in this project: give its url, id or name`);
}
