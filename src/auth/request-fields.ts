import { oauth } from './oauth-errors.js';

/**
 * The fields of a sign-in or token request (email, password, scope, client id, tokens...): a NUL
 * character or a value longer than AUTH_MAX_FIELD_LENGTH is refused with `invalid_request`, before
 * the field is looked up or written. Such a value would fail the database statement it reaches,
 * and a Login's statement carries the Logins of other requests too (LoginWriter).
 */
export function checkAuthFields(fields: Readonly<Record<string, string | undefined>>, maxLength: number): void {
  for (const [name, value] of Object.entries(fields)) {
    if (value === undefined) continue;
    if (value.includes('\0')) throw oauth.invalidRequest(`${name} holds a NUL character (U+0000)`);
    if (value.length > maxLength) throw oauth.invalidRequest(`${name} is ${value.length} characters long; at most ${maxLength} are accepted`);
  }
}

/**
 * A form-encoded token request (RFC 6749 3.2: parameters "MUST NOT be included more than once"),
 * each field checked as checkAuthFields does.
 */
export function checkTokenForm(form: URLSearchParams, maxLength: number): void {
  const seen = new Set<string>();
  for (const [name, value] of form) {
    if (seen.has(name)) throw oauth.invalidRequest(`${name} is given more than once (RFC 6749 3.2: each parameter at most once)`);
    seen.add(name);
    checkAuthFields({ [name]: value }, maxLength);
  }
}
