import { errors } from '../fhir/outcome.js';
import { isUuid } from './versions.js';

/**
 * Keyset paging of history. Versions are ordered newest first by ("lastUpdated", "versionId"), and
 * a page holds the versions below a position in that order: the last version of the previous page
 * (its cursor), or the top for the first page. Unlike an offset, a position costs the same at any
 * depth, and versions written while a client walks the pages do not shift the ones still to come.
 */
export interface HistoryPosition {
  lastUpdated: string;
  versionId: string;
}

/** Above every version: where a first page starts. */
export const HISTORY_TOP: HistoryPosition = { lastUpdated: 'infinity', versionId: 'ffffffff-ffff-ffff-ffff-ffffffffffff' };

/** Instants as the store gives them (toInstant): UTC, milliseconds, the column's precision. */
const STORED_INSTANT = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

/** The opaque cursor of the page that follows `last`: base64url of `lastUpdated|versionId`. */
export function encodeCursor(last: HistoryPosition): string {
  return Buffer.from(`${last.lastUpdated}|${last.versionId}`, 'utf8').toString('base64url');
}

/** The position a cursor stands for; 400 (`_cursor`) for anything encodeCursor did not make. */
export function decodeCursor(cursor: string): HistoryPosition {
  const [lastUpdated = '', versionId = '', ...rest] = Buffer.from(cursor, 'base64url').toString('utf8').split('|');
  const wellFormed =
    rest.length === 0 &&
    STORED_INSTANT.test(lastUpdated) &&
    !Number.isNaN(Date.parse(lastUpdated)) &&
    isUuid(versionId) &&
    // Node's base64url decoder skips characters outside the alphabet: only a cursor that encodes
    // back to itself is one this server made.
    encodeCursor({ lastUpdated, versionId }) === cursor;
  if (!wellFormed) throw errors.invalid('_cursor is not a cursor this server gave (take it from the next link of the previous page)', '_cursor');
  return { lastUpdated, versionId };
}
