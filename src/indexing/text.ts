/**
 * String clean-up shared by every row kind.
 */

/**
 * Longest normalised string value stored. The string table has a B-tree index on `value`, and
 * PostgreSQL rejects index entries over ~2.7 kB; markdown descriptions easily exceed that. A prefix
 * keeps the default (starts-with) search working for any realistic search term.
 */
export const MAX_NORMALISED_LENGTH = 512;

const ASCII = /^[\x00-\x7f]*$/;
const COMBINING_MARKS = /\p{M}/gu;

/** Trimmed, non-empty text, or undefined. NUL is removed: PostgreSQL text columns refuse it. */
export function clean(value: unknown): string | undefined {
  if (typeof value !== 'string') return undefined;
  let text = value.trim();
  if (text.includes('\0')) text = text.replaceAll('\0', '').trim();
  return text === '' ? undefined : text;
}

/** Lower case with accents removed: what the default string match and `:text` compare against. */
export function normalise(text: string): string {
  // Most values are ASCII; skip the (comparatively slow) Unicode decomposition for them.
  if (ASCII.test(text)) return text.toLowerCase();
  // Lower-case before stripping: some capitals lower-case to a letter plus a mark (İ → i̇). NFC at the
  // end recomposes what NFD split without being an accent (Hangul syllables).
  return text.normalize('NFD').toLowerCase().replace(COMBINING_MARKS, '').normalize('NFC');
}

/** `normalise`, cut to MAX_NORMALISED_LENGTH without splitting a surrogate pair. */
export function normaliseForIndex(text: string): string {
  const result = normalise(text);
  if (result.length <= MAX_NORMALISED_LENGTH) return result;
  let cut = result.slice(0, MAX_NORMALISED_LENGTH);
  const last = cut.charCodeAt(cut.length - 1);
  if (last >= 0xd800 && last <= 0xdbff) cut = cut.slice(0, -1);
  return cut;
}

/**
 * Longest UTF-8 byte length of a B-tree-indexed token, uri or reference value. PostgreSQL refuses
 * index entries over ~2.7 kB, and a token entry also holds the system; 1000 + 500 bytes leaves
 * room for the other key columns. Search must cap query values with the same function.
 */
export const MAX_INDEXED_VALUE_BYTES = 1000;
export const MAX_INDEXED_SYSTEM_BYTES = 500;

/** Cuts text to at most `maxBytes` of UTF-8 without splitting a character. */
export function capUtf8(text: string, maxBytes: number): string {
  if (text.length * 3 <= maxBytes) return text;
  const bytes = Buffer.from(text, 'utf8');
  if (bytes.length <= maxBytes) return text;
  let end = maxBytes;
  // Step back over UTF-8 continuation bytes (top bits 10) to a character boundary.
  while (end > 0 && (bytes[end] & 0xc0) === 0x80) end--;
  return bytes.subarray(0, end).toString('utf8');
}
