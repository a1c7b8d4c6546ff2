import { asyncJobCancelOperation } from '../admin/async-job.js';
import type { AuthService } from '../auth/service.js';
import { errors, issue, outcome, OperationOutcomeError } from '../fhir/outcome.js';
import type { AsyncJob, OperationOutcome } from '../fhir/resources.js';
import type { RequestContext } from '../operations/context.js';
import { jobStarter } from '../operations/jobs/queue.js';
import type { BinaryStorage, BinaryStream } from '../storage/binary-storage.js';
import { exportFileKey, type ExportFile } from './export-files.js';

type JobOutput = AsyncJob['output'];
type OutputParameter = NonNullable<NonNullable<JobOutput>['parameter']>[number];

/** What the status URL of an export tells (Bulk Data Access IG 2.0). */
export type ExportStatus =
  | { state: 'running'; progress: string }
  | { state: 'completed'; request: string; transactionTime: string; files: ExportFile[]; expires: string }
  | { state: 'failed'; outcome: OperationOutcome };

/**
 * An export's AsyncJob, for the identity that started it or an admin of its project; anyone else
 * (another project's users included) gets the same 404 as for an export that does not exist.
 */
async function readExportJob(ctx: RequestContext, jobId: string): Promise<AsyncJob> {
  const notFound = errors.notFound(`No bulk data export ${jobId}`);
  const starter = await jobStarter(ctx.database, jobId);
  if (!starter || starter.operation !== 'export' || starter.projectId !== ctx.identity.projectId) throw notFound;
  const { identity } = ctx;
  const sameCaller = starter.identity.membershipId === identity.membershipId && starter.identity.profile === identity.profile;
  if (!sameCaller && !identity.projectAdmin && !identity.superAdmin) throw notFound;
  try {
    return (await ctx.auth.repo(starter.projectId).readResource('AsyncJob', jobId)) as AsyncJob;
  } catch (error) {
    if (error instanceof OperationOutcomeError && (error.status === 404 || error.status === 410)) throw notFound;
    throw error;
  }
}

export async function exportStatus(ctx: RequestContext, jobId: string): Promise<ExportStatus> {
  const job = await readExportJob(ctx, jobId);
  const files = outputFiles(job.output);
  switch (job.status) {
    case 'completed':
      return {
        state: 'completed',
        request: job.request ?? '',
        transactionTime: outputTime(job.output) ?? job.transactionTime ?? '',
        files,
        expires: expiresAt(ctx, job),
      };
    case 'error':
      return { state: 'failed', outcome: outputOutcome(job.output) };
    case 'cancelled':
      throw errors.notFound(`Bulk data export ${jobId} was cancelled`);
    default: {
      const resources = files.reduce((sum, file) => sum + file.count, 0);
      return { state: 'running', progress: `${files.length} files, ${resources} resources written` };
    }
  }
}

/**
 * DELETE on the status URL: a running export is cancelled (its job removes the files it wrote when
 * it stops); a finished one has its files removed, and its AsyncJob with them, so the status URL
 * answers 404 from then on.
 */
export async function cancelExport(ctx: RequestContext, jobId: string): Promise<void> {
  const job = await readExportJob(ctx, jobId);
  if (job.status === 'accepted' || job.status === 'active') {
    await asyncJobCancelOperation.handler({}, { level: 'instance', resourceType: 'AsyncJob', id: jobId, ctx, db: ctx.database });
    return;
  }
  await removeExport(ctx.auth, ctx.auth.storageServices.binaryStorage, ctx.identity.projectId, job);
}

/** A finished export's files, then its AsyncJob (a removal that stops half-way is done again whole). */
export async function removeExport(auth: Pick<AuthService, 'repo'>, storage: BinaryStorage, projectId: string, job: AsyncJob): Promise<void> {
  await deleteExportFiles(storage, job.id!, outputFiles(job.output));
  await auth.repo(projectId).deleteResource('AsyncJob', job.id!);
}

/** One file of a completed export, for the same callers as its status, and when it expires. */
export async function exportFileStream(ctx: RequestContext, jobId: string, name: string): Promise<{ stream: BinaryStream; expires: string }> {
  const job = await readExportJob(ctx, jobId);
  const listed = job.status === 'completed' && outputFiles(job.output).some((file) => file.file === name);
  const stream = listed ? await ctx.auth.storageServices.binaryStorage.getStream(exportFileKey(jobId, name)) : undefined;
  if (!stream) throw errors.notFound(`Bulk data export ${jobId} has no file ${name}`);
  return { stream, expires: expiresAt(ctx, job) };
}

/**
 * When a finished export's files may be removed, as an HTTP date (the `Expires` the Bulk Data IG
 * suggests): EXPORT_FILE_TTL_MS after its AsyncJob last changed, which is what the expiry sweep
 * (export-expiry.ts) measures from.
 */
function expiresAt(ctx: RequestContext, job: AsyncJob): string {
  const ended = Date.parse(job.meta?.lastUpdated ?? '');
  return new Date((Number.isNaN(ended) ? Date.now() : ended) + ctx.config.exportFileTtlMs).toUTCString();
}

export async function deleteExportFiles(storage: BinaryStorage, jobId: string, files: readonly ExportFile[]): Promise<void> {
  for (const { file } of files) await storage.delete(exportFileKey(jobId, file));
}

/** The `files` parts of the export's out Parameters (what it wrote so far). */
function outputFiles(output: JobOutput): ExportFile[] {
  return (output?.parameter ?? [])
    .filter((parameter) => parameter.name === 'files')
    .map((parameter) => ({
      type: partValue(parameter, 'type')?.valueCode ?? '',
      file: partValue(parameter, 'file')?.valueString ?? '',
      count: partValue(parameter, 'count')?.valueInteger ?? 0,
    }));
}

function partValue(parameter: OutputParameter, name: string): OutputParameter | undefined {
  return parameter.part?.find((part) => part.name === name);
}

function outputTime(output: JobOutput): string | undefined {
  return output?.parameter?.find((parameter) => parameter.name === 'transactionTime')?.valueInstant;
}

function outputOutcome(output: JobOutput): OperationOutcome {
  const found = output?.parameter?.find((parameter) => parameter.resource?.resourceType === 'OperationOutcome')?.resource;
  return (found as OperationOutcome | undefined) ?? outcome([issue('exception', 'The export failed')]);
}
