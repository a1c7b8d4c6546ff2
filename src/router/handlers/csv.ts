import type { RequestContext } from '../../operations/context.js';
import { csvExport } from '../../csv/csv-export.js';
import { parseFields } from '../../csv/fields.js';
import { StreamedBytes, type FhirRequest, type FhirResponse, type RouteParams } from '../types.js';

/** `GET [type]/$csv?<search>&_fields=a,b.c`: every match of the search as CSV, streamed (src/csv). */
export async function csvHandler(req: FhirRequest, { type }: RouteParams, ctx: RequestContext): Promise<FhirResponse> {
  const fields = parseFields(req.query.get('_fields'));
  const chunks = await csvExport(ctx, type!, [...req.query.entries()], fields);
  const headers = {
    'Content-Type': 'text/csv; charset=utf-8',
    'Content-Disposition': `attachment; filename="${type}.csv"`,
  };
  return { status: 200, headers, body: new StreamedBytes(undefined, chunks) };
}
