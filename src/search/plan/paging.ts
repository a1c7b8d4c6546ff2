import { errors } from '../../fhir/outcome.js';
import { decodeCursor, encodeCursor, searchSignature, type CursorPosition } from '../query/cursor.js';
import type { Paging, SearchRow } from '../result.js';
import { MIN_CURSOR_COUNT, type ResultControl } from './control.js';
import type { Filter } from './filters.js';

/** How the request pages: by offset, or by cursor (a search sorted by _lastUpdated ascending). */
export interface PagingRequest {
  cursorMode: boolean;
  /** Where the request's `_cursor` points. */
  position: CursorPosition | undefined;
  /** The hash of the search that its cursors carry. */
  signature: () => string;
  /** The request's parameters as the links repeat them. */
  linkParams: [string, string][];
}

export function parsePaging(
  fhirBase: string,
  typeList: readonly string[] | undefined,
  params: readonly [string, string][],
  control: ResultControl,
  filters: readonly Filter[],
  ignored: ReadonlySet<number>,
): PagingRequest {
  const { sort, count, cursor } = control;
  const cursorMode = sort.length === 1 && sort[0].code === '_lastUpdated' && !sort[0].descending && count >= MIN_CURSOR_COUNT;
  // Only cursors use it (a hash per search showed in profiles of searches without one), and a
  // cursor page uses it up to three times (the cursor it was given, its next and previous links).
  let hashed: string | undefined;
  const signature = (): string =>
    (hashed ??= searchSignature(typeList, [...filters.map(({ name, value }): [string, string] => [name, value]), ['_sort', control.sortText ?? '']]));
  let position: CursorPosition | undefined;
  if (cursor !== undefined) {
    if (!cursorMode) {
      throw errors.invalid(
        `_cursor needs a search sorted by _lastUpdated ascending (_sort=_lastUpdated) with _count of at least ${MIN_CURSOR_COUNT}`,
        '_cursor',
      );
    }
    if (control.offsetText !== undefined) throw errors.invalid('Use either _cursor or _offset, not both', '_cursor');
    position = decodeCursor(fhirBase, cursor, signature());
  }
  const linkParams = params.filter(
    ([name], index) => name !== '_cursor' && name !== '_offset' && name !== '_count' && !ignored.has(index),
  );
  return { cursorMode, position, signature, linkParams };
}

/** The next and previous links of a page: cursors at its first and last rows, or offsets. */
export function pageLinks(
  fhirBase: string,
  request: PagingRequest,
  control: ResultControl,
  page: { rows: SearchRow[]; more: boolean },
): Pick<Paging, 'next' | 'previous'> {
  const { count, offset } = control;
  const links: Pick<Paging, 'next' | 'previous'> = {};
  if (!request.cursorMode) {
    if (page.more) links.next = { offset: offset + count };
    if (offset > 0) links.previous = { offset: Math.max(0, offset - count) };
    return links;
  }
  const key = (row: SearchRow, direction: 'n' | 'p'): string =>
    encodeCursor(fhirBase, { direction, lastUpdated: row.lastUpdated, id: row.id, resourceType: row.resourceType, search: request.signature() });
  const first = page.rows[0];
  const last = page.rows[page.rows.length - 1];
  const backwards = request.position?.direction === 'p';
  const hasAfter = backwards ? true : page.more;
  const hasBefore = backwards ? page.more : request.position !== undefined || offset > 0;
  if (hasAfter && last) links.next = { cursor: key(last, 'n') };
  if (hasBefore && first) links.previous = { cursor: key(first, 'p') };
  return links;
}
