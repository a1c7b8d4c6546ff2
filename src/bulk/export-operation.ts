import { SERVER_TYPES } from '../clinical/record-conditions.js';
import { isResourceType } from '../fhir/definitions.js';
import { errors } from '../fhir/outcome.js';
import { policyAllowsType } from '../identity/policy.js';
import type { Group, Reference } from '../fhir/resources.js';
import { ownOperationDefinition } from '../operations/definition.js';
import type { Operation, OperationRequest } from '../operations/registry.js';
import { deleteExportFiles } from './export-access.js';
import { parseExportElements, type ElementsTransform } from './export-elements.js';
import { projectTypes, writeExportFiles, type ExportFile, type ExportPosition } from './export-files.js';
import { botCodeBinaries, withoutSubscriptionSecrets } from './export-withheld.js';
import { checkTypeFilters, parseTypeFilters, typeFilterMatcher } from './type-filter.js';

interface ExportInput {
  _outputFormat?: string;
  _type?: string[];
  _since?: string;
  _typeFilter?: string[];
  _elements?: string[];
  /** Patient and Group level: narrows the export to these patients. */
  patient?: Reference[];
  /** Accepted and ignored, as the IG permits. */
  includeAssociatedData?: string[];
}

export interface ExportOutput {
  transactionTime: string;
  files: ExportFile[];
}

/** The Bulk Data IG's names of NDJSON; every file is written as application/fhir+ndjson. */
const OUTPUT_FORMATS = new Set(['application/fhir+ndjson', 'application/ndjson', 'ndjson']);


/** The status URL of an export (src/router/handlers/bulk-export.ts answers it). */
export function exportStatusUrl(fhirBase: string, jobId: string): string {
  return `${fhirBase}/$export-status/${jobId}`;
}

/** What an export reads: every resource, or the compartments of some patients. */
interface ExportScope {
  /** The patients whose compartments are exported; undefined: every resource of the project. */
  patients(input: ExportInput, request: OperationRequest): Promise<string[] | 'all' | undefined>;
}

/**
 * `$export` at one level (Bulk Data Access IG 2.0; any member, narrowed by its AccessPolicy), only with
 * `Prefer: respond-async`: the resources of the caller's project as NDJSON files, written by a
 * durable job that checkpoints after each file. The 202 names the export's status URL.
 */
function exportOperationFor(definitionFile: string, scope: ExportScope): Operation<ExportInput, ExportOutput> {
  return {
    definition: ownOperationDefinition(definitionFile),
    respondsAsync: true,
    onlyAsync: true,
    asyncStatusUrl: exportStatusUrl,
    async check(input, request) {
      checkInput(input);
      parseExportElements(input._elements);
      const filters = parseTypeFilters(input._typeFilter);
      const types = requestedTypes(input);
      const refused = types?.find((type) => !policyAllowsType(request.ctx.identity, type));
      if (refused) throw errors.forbidden(`Your access policy or SMART scopes do not allow ${refused} resources`);
      for (const type of filters.keys()) {
        if (types && !types.includes(type)) throw errors.invalid(`_typeFilter filters ${type}, which _type does not export`, '_typeFilter');
      }
      await checkTypeFilters(request.ctx, filters);
      await scope.patients(input, request);
    },
    async handler(input, request) {
      const { job, ctx } = request;
      if (!job) throw errors.invalid('Operation $export runs only asynchronously: send the header Prefer: respond-async');
      const storage = ctx.auth.storageServices.binaryStorage;
      const start = (job.resumeFrom as ExportPosition | undefined) ?? (await firstPosition(input, request, await scope.patients(input, request)));
      const done = await writeExportFiles(
        {
          db: request.db,
          storage,
          projectId: ctx.identity.projectId,
          jobId: job.id,
          since: input._since,
          maxPerFile: ctx.config.exportFileMaxResources,
          signal: job.signal,
          matching: typeFilterMatcher(ctx, parseTypeFilters(input._typeFilter), request.db),
          transform: withSecretsLeftOut(parseExportElements(input._elements)),
          withheld: await botCodeBinaries(request.db, ctx.identity.projectId),
          async onFile(position) {
            await job.checkpoint(position);
            await job.progress({ transactionTime: position.transactionTime, files: position.files });
          },
        },
        start,
      );
      // A cancelled export leaves no files behind (DELETE on the status URL promises it).
      if (job.signal.aborted) await deleteExportFiles(storage, job.id, done.files);
      return { transactionTime: done.transactionTime, files: done.files };
    },
  };
}

/** Each line's text without a Subscription's secrets, then narrowed by `_elements` when it is given. */
function withSecretsLeftOut(elements: ElementsTransform | undefined): ElementsTransform {
  return (type, text) => {
    const safe = withoutSubscriptionSecrets(type, text);
    return elements ? elements(type, safe) : safe;
  };
}

/** `GET /$export`: every resource of the project. */
export const exportOperation = exportOperationFor('export.json', { patients: async () => undefined });

/** `GET /Patient/$export`: the compartment of every patient of the project, or of those `patient` names. */
export const patientExportOperation = exportOperationFor('Patient-export.json', {
  patients: async (input) => requestedPatients(input) ?? 'all',
});

/**
 * `GET /Group/{id}/$export`: the compartments of the group's members (Patient references of
 * `member.entity`), only those `patient` names when it is given.
 */
export const groupExportOperation = exportOperationFor('Group-export.json', {
  async patients(input, { ctx, id }) {
    const group = (await ctx.repo.readResource('Group', id!)) as Group;
    const members = patientIds((group.member ?? []).map((member) => member.entity?.reference ?? ''));
    const requested = requestedPatients(input);
    return requested ? members.filter((member) => requested.includes(member)) : members;
  },
});

/** The ids of `Patient/{id}` references, once each; other references are left out. */
function patientIds(references: readonly string[]): string[] {
  return [...new Set(references.filter((reference) => reference.startsWith('Patient/')).map((reference) => reference.slice('Patient/'.length)))];
}

/** The `patient` parameter's ids; 400 for a reference to anything but a Patient by id. */
function requestedPatients(input: ExportInput): string[] | undefined {
  if (!input.patient?.length) return undefined;
  const references = input.patient.map((reference) => reference.reference ?? '');
  const wrong = references.find((reference) => !/^Patient\/[A-Za-z0-9\-.]{1,64}$/.test(reference));
  if (wrong !== undefined) throw errors.invalid(`patient "${wrong}" is not a reference Patient/{id}`, 'patient');
  return patientIds(references);
}

function checkInput(input: ExportInput): void {
  if (input._outputFormat !== undefined && !OUTPUT_FORMATS.has(input._outputFormat)) {
    throw errors.invalid(`_outputFormat "${input._outputFormat}" is not supported: use ${[...OUTPUT_FORMATS].join(', ')}`, '_outputFormat');
  }
  for (const type of requestedTypes(input) ?? []) {
    if (!isResourceType(type)) throw errors.invalid(`_type names "${type}", which is no resource type`, '_type');
    if (SERVER_TYPES.has(type)) throw errors.invalid(`_type names ${type}, which is not exported (it holds accounts, credentials, secrets or jobs)`, '_type');
  }
}

async function firstPosition(input: ExportInput, { db, ctx }: OperationRequest, patients: string[] | 'all' | undefined): Promise<ExportPosition> {
  const types = requestedTypes(input) ?? (await projectTypes(db, ctx.identity.projectId, SERVER_TYPES)).filter((type) => policyAllowsType(ctx.identity, type));
  return { transactionTime: new Date().toISOString(), types: [...new Set(types)], typeIndex: 0, files: [], ...(patients ? { patients } : {}) };
}

/** `_type=Patient,Observation` (or repeated): the types named, or undefined for every type. */
function requestedTypes(input: ExportInput): string[] | undefined {
  const types = (input._type ?? []).flatMap((value) => value.split(',')).map((type) => type.trim()).filter((type) => type !== '');
  return types.length > 0 ? types : undefined;
}
