import fhirpath from 'fhirpath';
import r4Model from 'fhirpath/fhir-context/r4';
import { errors } from '../fhir/outcome.js';
import type { OperationOutcomeIssue, Resource } from '../fhir/types.js';
import { parseReference } from '../indexing/references.js';
import type { RequestContext } from '../operations/context.js';
import { MAX_COUNT, search, searchServicesFor } from '../search/service.js';
import { parseStored } from '../storage/versions.js';
import { admitted, type RuledTarget } from './graph-rules.js';

/**
 * Following a GraphDefinition's links from a resource ($graph). A link with a `path` follows the
 * references (and canonicals) that FHIRPath finds on the resource to its targets' types; a link
 * whose targets have `params` searches each target type with `{ref}` replaced by the resource's
 * reference (reverse links: `patient={ref}`). Each target's own links go on from what it found.
 * Reads go through the request's guarded repository and searches, so what the caller may not
 * read is never found. Bounded: MAX_DEPTH links deep, MAX_RESOURCES resources.
 */

export interface GraphTarget extends RuledTarget {
  type?: string;
  params?: string;
  link?: GraphLink[];
}

export interface GraphLink {
  path?: string;
  min?: number;
  max?: string;
  target?: GraphTarget[];
}

export const MAX_DEPTH = 5;
export const MAX_RESOURCES = 1000;

/** What a walk has found so far, by `Type/id`, in the order found. */
export type Found = Map<string, Resource>;

/** A walk's findings: the resources, and warnings: each link that led to fewer than its `min`, each resource a target's rules left out. */
export interface GraphWalk {
  readonly found: Found;
  readonly warnings: OperationOutcomeIssue[];
}

const keyOf = (resource: Resource) => `${resource.resourceType}/${resource.id}`;

export async function followLinks(ctx: RequestContext, from: Resource, links: readonly GraphLink[], walk: GraphWalk, where: string, depth = 1): Promise<void> {
  if (depth > MAX_DEPTH) return;
  const { found } = walk;
  for (const [index, link] of links.entries()) {
    const at = `${where}.link[${index}]`;
    const min = minOf(link, at);
    let room = maxOf(link, at);
    let count = 0;
    for (const [targetIndex, target] of (link.target ?? []).entries()) {
      if (found.size >= MAX_RESOURCES) return;
      if (room <= 0) break;
      const targetAt = `${at}.target[${targetIndex}]`;
      const all = link.path !== undefined ? await alongPath(ctx, from, link.path, target, at) : await byParams(ctx, from, target, targetAt);
      const reached = (await admitted(ctx, from, target, all, targetAt, walk.warnings)).slice(0, room);
      room -= reached.length;
      count += reached.length;
      const fresh: Resource[] = [];
      for (const resource of reached) {
        if (found.size >= MAX_RESOURCES || found.has(keyOf(resource))) continue;
        found.set(keyOf(resource), resource);
        fresh.push(resource);
      }
      // Resources already found were followed from where they were first found.
      for (const resource of fresh) await followLinks(ctx, resource, target.link ?? [], walk, targetAt, depth + 1);
    }
    if (count < min) walk.warnings.push(shortfall(from, at, min, count));
  }
}

/** A link's `min`: a whole number (none: 0). */
function minOf(link: GraphLink, at: string): number {
  if (link.min === undefined) return 0;
  if (!Number.isInteger(link.min) || link.min < 0) throw errors.invalid(`The GraphDefinition's min ${JSON.stringify(link.min)} must be a whole number`, `GraphDefinition${at}.min`);
  return link.min;
}

/**
 * A link that leads to fewer resources than its `min` is a warning, not a refusal: the graph
 * answers with what exists and what the caller may read, and the warning says what is missing.
 */
function shortfall(from: Resource, at: string, min: number, count: number): OperationOutcomeIssue {
  const text = `From ${keyOf(from)}, the link GraphDefinition${at} found ${count} resource${count === 1 ? '' : 's'}; it asks for at least ${min}`;
  return { severity: 'warning', code: 'incomplete', details: { text }, expression: [`GraphDefinition${at}`] };
}

/**
 * How many resources a link may lead to from one resource, over all its targets: its `max`
 * (`*` or none: no limit).
 */
function maxOf(link: GraphLink, at: string): number {
  if (link.max === undefined || link.max === '*') return Infinity;
  if (!/^\d+$/.test(link.max)) throw errors.invalid(`The GraphDefinition's max "${link.max}" must be a whole number or *`, `GraphDefinition${at}.max`);
  return Number(link.max);
}

/** The resources of the target's type that the path's references and canonicals name. */
async function alongPath(ctx: RequestContext, from: Resource, path: string, target: GraphTarget, at: string): Promise<Resource[]> {
  let values: unknown[];
  try {
    values = fhirpath.evaluate(from, path, undefined, r4Model) as unknown[];
  } catch (error) {
    throw errors.invalid(`The GraphDefinition's path "${path}" is not valid FHIRPath: ${(error as Error).message}`, `GraphDefinition${at}.path`);
  }
  const keys: { resourceType: string; id: string }[] = [];
  const canonicals: string[] = [];
  for (const value of values) {
    if (typeof value === 'string') canonicals.push(value);
    const reference = typeof value === 'object' && value !== null ? (value as { reference?: unknown }).reference : undefined;
    const key = typeof reference === 'string' ? localKey(ctx, reference) : undefined;
    if (key && (anyType(target) || key.resourceType === target.type)) keys.push(key);
  }
  const read = await readInOrder(ctx, keys);
  if (canonicals.length === 0 || anyType(target)) return read;
  // The search matches the url alone: a `|version` suffix is dropped.
  const urls = [...new Set(canonicals.map((canonical) => canonical.split('|')[0]))];
  return [...read, ...(await searchRows(ctx, target.type!, [['url', urls.join(',')]]))];
}

/** The resources of `keys` the caller may read, in the order of the keys (the order of the path's references). */
async function readInOrder(ctx: RequestContext, keys: { resourceType: string; id: string }[]): Promise<Resource[]> {
  if (keys.length === 0) return [];
  const versions = await ctx.repo.readVersions(keys);
  return keys.flatMap((key) => {
    const version = versions.get(`${key.resourceType}/${key.id}`);
    return version && version.text !== null ? [parseStored(version)] : [];
  });
}

/** A target without a type, or of type `Resource` (as the HL7 example has it), takes any type. */
function anyType(target: GraphTarget): boolean {
  return !target.type || target.type === 'Resource';
}

/** `Type/id`, or an absolute reference to this server: a key to read; anything else is not followed. */
function localKey(ctx: RequestContext, reference: string): { resourceType: string; id: string } | undefined {
  const target = parseReference(reference);
  if (!target?.targetType || !target.targetId) return undefined;
  if (target.url !== null && !target.url.startsWith(`${ctx.config.fhirBaseUrl}/`)) return undefined;
  return { resourceType: target.targetType, id: target.targetId };
}

/** A reverse link: the target type searched with `{ref}` standing for the resource. */
async function byParams(ctx: RequestContext, from: Resource, target: GraphTarget, at: string): Promise<Resource[]> {
  if (!target.type || target.params === undefined) {
    throw errors.invalid('A GraphDefinition link needs a path, or targets with a type and params', `GraphDefinition${at}`);
  }
  if (!target.params.includes('{ref}')) {
    throw errors.invalid(`The GraphDefinition's params "${target.params}" must name the resource as {ref}`, `GraphDefinition${at}.params`);
  }
  const query = new URLSearchParams(target.params.replaceAll('{ref}', keyOf(from)));
  return searchRows(ctx, target.type, [...query.entries()]);
}

async function searchRows(ctx: RequestContext, type: string, params: [string, string][]): Promise<Resource[]> {
  const result = await search(searchServicesFor(ctx), type, [...params, ['_count', String(MAX_COUNT)]]);
  return result.matches.map((row) => JSON.parse(row.text) as Resource);
}
