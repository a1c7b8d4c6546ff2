import { getResourceTypes, isResourceType } from '../fhir/definitions.js';
import { errors } from '../fhir/outcome.js';
import { policyAllowsType } from '../identity/policy.js';
import type { Bundle, BundleEntry, BundleLink, Resource } from '../fhir/types.js';
import { SqlArgs } from '../db/sql-args.js';
import { projectParameters } from '../indexing/parameters.js';
import { ownOperationDefinition } from '../operations/definition.js';
import type { Operation, OperationRequest } from '../operations/registry.js';
import { expandValueSets } from '../search/plan/value-set-discovery.js';
import { DEFAULT_COUNT, MAX_COUNT, searchServicesFor } from '../search/service.js';
import { decodePosition, encodePosition, filterSignature } from './everything-cursor.js';
import type { RecordFilters } from './record-conditions.js';
import type { RecordSource } from './record-pages.js';
import { readWalkPage, type WalkPage, type WalkScope } from './record-walk.js';
import { botCodeBinaryIds, seesBotCode } from '../storage/bot-code.js';

/**
 * Patient/$everything (http://hl7.org/fhir/R4/patient-operation-everything.html): a patient's
 * record, or every visible patient's at type level, as searchset pages walked by a keyset cursor
 * (record-walk.ts). Compartment membership is the `_compartment` index rows, so resources written
 * before that parameter existed need `$reindex` (docs/clinical-operations.md).
 */

interface EverythingInput {
  start?: string;
  end?: string;
  _since?: string;
  _type?: string[];
  _count?: number;
  _cursor?: string;
}

export const patientEverythingOperation: Operation<EverythingInput, { return: Bundle }> = {
  definition: ownOperationDefinition('patient-everything.json'),
  async check(input) {
    if (input._count !== undefined && (!Number.isInteger(input._count) || input._count < 1 || input._count > MAX_COUNT)) {
      throw errors.invalid(`_count must be an integer from 1 to ${MAX_COUNT}, not ${input._count}`, '_count');
    }
    for (const type of requestedTypes(input) ?? []) {
      if (!isResourceType(type)) throw errors.invalid(`_type names an unknown resource type "${type}"`, '_type');
    }
    if (input.start !== undefined && input.end !== undefined && input.start > input.end) {
      throw errors.invalid(`start (${input.start}) is after end (${input.end})`, 'start');
    }
  },
  async handler(input, request) {
    const scope: WalkScope = request.level === 'instance' ? { kind: 'patient', patientId: request.id! } : { kind: 'patients' };
    if (scope.kind === 'patients' && !policyAllowsType(request.ctx.identity, 'Patient')) {
      throw errors.forbidden('Your access policy or SMART scopes do not allow Patient resources');
    }
    // Reading the patient first answers 404 for one the caller may not see (or that does not exist).
    const patient = scope.kind === 'patient' ? await request.ctx.repo.readResource('Patient', scope.patientId) : undefined;
    const projectId = patient?.meta?.project ?? request.ctx.identity.projectId;
    const filters: RecordFilters = { types: requestedTypes(input), since: input._since, start: input.start, end: input.end };
    const count = input._count ?? DEFAULT_COUNT;
    const key = request.ctx.config.fhirBaseUrl;
    const signature = filterSignature([scope, projectId, filters]);
    const from = input._cursor === undefined ? undefined : decodePosition(key, signature, input._cursor);
    const page = await readWalkPage(await recordSource(request, projectId, filters), scope, from, count);
    const next = page.next && encodePosition(key, signature, page.next);
    return { return: searchset(request, input, count, page, next) };
  },
};

function requestedTypes(input: EverythingInput): string[] | undefined {
  const types = (input._type ?? []).flatMap((value) => value.split(',')).map((type) => type.trim()).filter((type) => type !== '');
  return types.length > 0 ? types : undefined;
}

/** Statements go where the request's searches go (a replica that has the caller's writes, or the primary). */
async function recordSource(request: OperationRequest, projectId: string, filters: RecordFilters): Promise<RecordSource> {
  const { ctx } = request;
  const services = searchServicesFor(ctx);
  const scope = { projectIds: [projectId] };
  const restricted = (ctx.identity.accessPolicy !== undefined && !ctx.identity.superAdmin) || ctx.identity.scopes !== undefined;
  // Only AccessPolicy criteria and scopes can name project SearchParameters or `:in` value sets.
  const parameters = restricted ? await projectParameters(services.primary ?? services.db, projectId) : undefined;
  const valueSets = restricted ? await expandValueSets({ ...services, parameters }, scope, getResourceTypes(), undefined) : undefined;
  return {
    db: services.db,
    identity: ctx.identity,
    projectId,
    filters,
    hiddenBinaries: seesBotCode(ctx.identity) ? undefined : await botCodeBinaryIds(services.primary ?? services.db, projectId),
    compileContext: (args: SqlArgs) => ({ args, scope, fhirBase: ctx.config.fhirBaseUrl, depth: 0, valueSets, parameters }),
  };
}

function searchset(request: OperationRequest, input: EverythingInput, count: number, page: WalkPage, next: string | undefined): Bundle {
  const base = request.ctx.config.fhirBaseUrl;
  const seen = new Set<string>();
  const entry: BundleEntry[] = [];
  for (const { row, part } of page.entries) {
    const key = `${row.resourceType}/${row.id}`;
    // At type level two patients' records can share a referenced resource: once per page.
    if (seen.has(key)) continue;
    seen.add(key);
    entry.push({ fullUrl: `${base}/${key}`, resource: JSON.parse(row.text) as Resource, search: { mode: part === 'include' ? 'include' : 'match' } });
  }
  const link: BundleLink[] = [{ relation: 'self', url: pageUrl(request, input, count, input._cursor) }];
  if (next) link.push({ relation: 'next', url: pageUrl(request, input, count, next) });
  return { resourceType: 'Bundle', type: 'searchset', link, entry };
}

/** The URL of a page: the request's own parameters, `_count` and the page's cursor. */
function pageUrl(request: OperationRequest, input: EverythingInput, count: number, cursor: string | undefined): string {
  const query = new URLSearchParams();
  if (input.start !== undefined) query.append('start', input.start);
  if (input.end !== undefined) query.append('end', input.end);
  if (input._since !== undefined) query.append('_since', input._since);
  for (const types of input._type ?? []) query.append('_type', types);
  query.append('_count', String(count));
  if (cursor !== undefined) query.append('_cursor', cursor);
  const path = request.level === 'instance' ? `Patient/${request.id}/$everything` : 'Patient/$everything';
  return `${request.ctx.config.fhirBaseUrl}/${path}?${query.toString()}`;
}
