import type { RequestContext } from '../../operations/context.js';
import { cancelExport, exportFileStream, exportStatus } from '../../bulk/export-access.js';
import { exportStatusUrl } from '../../bulk/export-operation.js';
import { allOk } from '../../fhir/outcome.js';
import { resourceResponse } from '../responses.js';
import { StreamedBytes, type FhirRequest, type FhirResponse, type RouteParams } from '../types.js';

/** Seconds a client waits before polling a running export again. */
const RETRY_AFTER_SECONDS = '2';

/**
 * `GET $export-status/{id}` (Bulk Data Access IG 2.0, src/bulk): 202 with `X-Progress` while the
 * export runs, 200 with the manifest once done, the failure's OperationOutcome if it failed.
 */
export async function exportStatusHandler(_req: FhirRequest, { id }: RouteParams, ctx: RequestContext): Promise<FhirResponse> {
  const status = await exportStatus(ctx, id!);
  if (status.state === 'running') {
    return { status: 202, headers: { 'X-Progress': status.progress, 'Retry-After': RETRY_AFTER_SECONDS } };
  }
  if (status.state === 'failed') return resourceResponse(status.outcome, 500);
  const statusUrl = exportStatusUrl(ctx.config.fhirBaseUrl, id!);
  const manifest = {
    transactionTime: status.transactionTime,
    request: status.request,
    requiresAccessToken: true,
    output: status.files.map(({ type, file, count }) => ({ type, url: `${statusUrl}/${file}`, count })),
    error: [],
  };
  return { status: 200, headers: { 'Content-Type': 'application/json', Expires: status.expires }, body: JSON.stringify(manifest) };
}

/** `DELETE $export-status/{id}`: cancels the export, or removes the files of a finished one. */
export async function exportDeleteHandler(_req: FhirRequest, { id }: RouteParams, ctx: RequestContext): Promise<FhirResponse> {
  await cancelExport(ctx, id!);
  return resourceResponse(allOk(`Bulk data export ${id} cancelled; its files are removed`), 202);
}

/** `GET $export-status/{id}/{file}`: one NDJSON file of a finished export, streamed, with when it expires. */
export async function exportFileHandler(_req: FhirRequest, { id, file }: RouteParams, ctx: RequestContext): Promise<FhirResponse> {
  const { stream, expires } = await exportFileStream(ctx, id!, file!);
  return { status: 200, headers: { 'Content-Type': 'application/fhir+ndjson', Expires: expires }, body: new StreamedBytes(stream.size, stream.chunks) };
}
