import { stringify } from 'csv-stringify/sync';
import type { RequestContext } from '../operations/context.js';
import { search, searchServicesFor } from '../search/service.js';
import { cellOf } from './fields.js';

/** Matches read per search page: one page's rows and CSV text are all the export holds at a time. */
export const CSV_PAGE_SIZE = 500;

/** Search parameters the export sets itself (keyset paging over every match) or does not apply. */
const OWN_PARAMETERS = new Set(['_fields', '_count', '_offset', '_cursor', '_sort', '_total', '_include', '_revinclude', '_summary', '_elements', '_format']);

/**
 * RFC 4180 text (CRLF line ends, quoted where needed, quotes doubled), with cells that a
 * spreadsheet would run as a formula (starting with = + - @, a tab or a CR) prefixed with a quote.
 */
function csvText(rows: readonly string[][]): string {
  return stringify(rows as string[][], { record_delimiter: 'windows', escape_formulas: true });
}

/**
 * The CSV of a search: a header row of the field paths, then one row per match, in order of
 * `_lastUpdated` (the keyset the search service pages by with its cursor), every match and not one
 * page, read a page at a time as the client takes the text. The search runs as the caller's, so
 * the caller's project, AccessPolicy and scopes apply as to any search (client secrets, kept
 * outside resources, are never in it). The first page is read before anything is sent, so that a
 * bad search parameter is a 400 and not a broken download.
 */
export async function csvExport(ctx: RequestContext, resourceType: string, query: readonly [string, string][], fields: readonly string[][]): Promise<AsyncIterable<Uint8Array>> {
  const params = query.filter(([name]) => !OWN_PARAMETERS.has(name));
  const pageOf = async (cursor: string | undefined) => {
    const paging: [string, string][] = [['_sort', '_lastUpdated'], ['_count', String(CSV_PAGE_SIZE)], ...(cursor ? [['_cursor', cursor] as [string, string]] : [])];
    return search(searchServicesFor(ctx), [resourceType], [...params, ...paging]);
  };
  const first = await pageOf(undefined);
  return (async function* () {
    yield Buffer.from(csvText([fields.map((path) => path.join('.'))]));
    let page = first;
    for (;;) {
      const rows = page.matches.map((match) => {
        const resource = JSON.parse(match.text) as Record<string, unknown>;
        return fields.map((path) => cellOf(resource, path));
      });
      if (rows.length > 0) yield Buffer.from(csvText(rows));
      const next = page.paging.next;
      if (!next || !('cursor' in next)) return;
      page = await pageOf(next.cursor);
    }
  })();
}
