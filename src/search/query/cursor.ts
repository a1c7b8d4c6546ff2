import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import { errors } from '../../fhir/outcome.js';

/**
 * Cursors for keyset paging over (lastUpdated, id[, resourceType]). A cursor is opaque to clients:
 * base64url JSON plus a MAC. The MAC key is derived from the server's FHIR base, so a cursor made
 * by one server is accepted by every server of the same deployment (no shared state); its job is
 * to refuse damaged and hand-edited cursors (400), not to hide anything: the cursor only carries
 * a position in the caller's own, project-scoped results.
 */

export interface CursorPosition {
  /** `n`: rows after the position (next page); `p`: rows before it (previous page). */
  direction: 'n' | 'p';
  lastUpdated: string;
  id: string;
  resourceType: string;
  /** Hash of the search (types, filters and sort) the cursor belongs to. */
  search: string;
}

const VERSION = 1;

export function searchSignature(types: readonly string[] | undefined, params: readonly [string, string][]): string {
  const hash = createHash('sha256');
  hash.update(JSON.stringify([types ?? null, [...params].sort(([a, av], [b, bv]) => (a === b ? (av < bv ? -1 : 1) : a < b ? -1 : 1))]));
  return hash.digest('base64url').slice(0, 16);
}

function mac(key: string, payload: string): string {
  return createHmac('sha256', `flint-cursor:${key}`).update(payload).digest('base64url').slice(0, 22);
}

export function encodeCursor(key: string, position: CursorPosition): string {
  const payload = Buffer.from(
    JSON.stringify([VERSION, position.direction, position.lastUpdated, position.id, position.resourceType, position.search]),
  ).toString('base64url');
  return `${payload}.${mac(key, payload)}`;
}

export function decodeCursor(key: string, cursor: string, expectedSearch: string): CursorPosition {
  const invalid = (why: string) => errors.invalid(`Invalid _cursor: ${why}. Follow the links of the previous page`, '_cursor');
  const [payload, tag, extra] = cursor.split('.');
  if (!payload || !tag || extra !== undefined) throw invalid('malformed');
  const expected = Buffer.from(mac(key, payload));
  const given = Buffer.from(tag);
  if (expected.length !== given.length || !timingSafeEqual(expected, given)) throw invalid('it was altered or not made by this server');
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'));
  } catch {
    throw invalid('malformed');
  }
  if (
    !Array.isArray(parsed) ||
    parsed.length !== 6 ||
    parsed[0] !== VERSION ||
    (parsed[1] !== 'n' && parsed[1] !== 'p') ||
    !parsed.slice(2).every((part) => typeof part === 'string') ||
    Number.isNaN(Date.parse(parsed[2] as string))
  ) {
    throw invalid('malformed');
  }
  const position: CursorPosition = {
    direction: parsed[1],
    lastUpdated: parsed[2] as string,
    id: parsed[3] as string,
    resourceType: parsed[4] as string,
    search: parsed[5] as string,
  };
  if (position.search !== expectedSearch) throw invalid('it belongs to a different search (parameters or sort changed)');
  return position;
}
