/**
 * The version id in an ETag-style value, as If-Match and GraphQL's `ifMatch` carry it: `W/"3"`,
 * `"3"` or `3`. Undefined when the value is not of that form; callers say what was malformed.
 */
export function versionOfTag(value: string): string | undefined {
  return /^\s*(?:W\/)?"?([^"\s]+)"?\s*$/.exec(value)?.[1];
}
