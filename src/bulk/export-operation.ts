import { isResourceType } from '../fhir/definitions.js';
import { errors } from '../fhir/outcome.js';
import { ownOperationDefinition } from '../operations/definition.js';
import type { Operation, OperationRequest } from '../operations/registry.js';
import { deleteExportFiles } from './export-access.js';
import { projectTypes, writeExportFiles, type ExportFile, type ExportPosition } from './export-files.js';

interface ExportInput {
  _outputFormat?: string;
  _type?: string[];
  _since?: string;
  _typeFilter?: string[];
  _elements?: string[];
}

export interface ExportOutput {
  transactionTime: string;
  files: ExportFile[];
}

/** The Bulk Data IG's names of NDJSON; every file is written as application/fhir+ndjson. */
const OUTPUT_FORMATS = new Set(['application/fhir+ndjson', 'application/ndjson', 'ndjson']);

/** Types that hold the server's own records and credentials (accounts, secrets, jobs): never exported. */
const SERVER_TYPES: ReadonlySet<string> = new Set(['Project', 'ProjectMembership', 'ClientApplication', 'User', 'Login', 'AccessPolicy', 'AsyncJob']);

/** The status URL of an export (src/bulk/export-status.ts answers it). */
export function exportStatusUrl(fhirBase: string, jobId: string): string {
  return `${fhirBase}/$export-status/${jobId}`;
}

/**
 * `GET /$export` with `Prefer: respond-async` (Bulk Data Access IG 2.0; project admins and super
 * admins): every resource of the caller's project, as NDJSON files, written by a durable job that
 * checkpoints after each file. The 202 names the export's status URL.
 */
export const exportOperation: Operation<ExportInput, ExportOutput> = {
  definition: ownOperationDefinition('export.json'),
  respondsAsync: true,
  onlyAsync: true,
  asyncStatusUrl: exportStatusUrl,
  authorize({ ctx }) {
    if (!ctx.identity.superAdmin && !ctx.identity.projectAdmin) throw errors.forbidden('Only a project admin or a super admin can run $export');
  },
  async check(input) {
    if (input._outputFormat !== undefined && !OUTPUT_FORMATS.has(input._outputFormat)) {
      throw errors.invalid(`_outputFormat "${input._outputFormat}" is not supported: use ${[...OUTPUT_FORMATS].join(', ')}`, '_outputFormat');
    }
    for (const name of ['_typeFilter', '_elements'] as const) {
      if (input[name]?.length) throw errors.invalid(`${name} is not supported by $export yet: export without it`, name);
    }
    for (const type of requestedTypes(input) ?? []) {
      if (!isResourceType(type)) throw errors.invalid(`_type names "${type}", which is no resource type`, '_type');
      if (SERVER_TYPES.has(type)) throw errors.invalid(`_type names ${type}, which is not exported (it holds accounts, secrets or jobs)`, '_type');
    }
  },
  async handler(input, request) {
    const { job, ctx } = request;
    if (!job) throw errors.invalid('Operation $export runs only asynchronously: send the header Prefer: respond-async');
    const projectId = ctx.identity.projectId;
    const storage = ctx.auth.storageServices.binaryStorage;
    const start = (job.resumeFrom as ExportPosition | undefined) ?? (await firstPosition(input, request));
    const done = await writeExportFiles(
      {
        db: request.db,
        storage,
        projectId,
        jobId: job.id,
        since: input._since,
        maxPerFile: ctx.config.exportFileMaxResources,
        signal: job.signal,
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

async function firstPosition(input: ExportInput, { db, ctx }: OperationRequest): Promise<ExportPosition> {
  const types = requestedTypes(input) ?? (await projectTypes(db, ctx.identity.projectId, SERVER_TYPES));
  return { transactionTime: new Date().toISOString(), types: [...new Set(types)], typeIndex: 0, files: [] };
}

/** `_type=Patient,Observation` (or repeated): the types named, or undefined for every type. */
function requestedTypes(input: ExportInput): string[] | undefined {
  const types = (input._type ?? []).flatMap((value) => value.split(',')).map((type) => type.trim()).filter((type) => type !== '');
  return types.length > 0 ? types : undefined;
}
