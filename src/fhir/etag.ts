/**
 * The version id in an ETag-style value, as If-Match and GraphQL's `ifMatch` carry it: `W/"3"`,
 * `"3"` or `3`. Undefined when the value is not of that form; callers say what was malformed.
 */
export function versionOfTag(value: string): string | undefined {
  // Quotes in pairs: `W/"3` is a tag cut short, not version 3.
  const match = /^\s*(?:W\/)?(?:"([^"\s]+)"|([^"\s]+))\s*$/.exec(value);
  return match?.[1] ?? match?.[2];
}

/** If-Match `*`: whatever version is current (RFC 9110 13.1.1), so only that the resource exists. */
export const ANY_VERSION = '*';
