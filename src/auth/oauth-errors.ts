/** An OAuth 2.0 error (RFC 6749 5.2): JSON `{error, error_description}` with its status. */
export class OAuthError extends Error {
  constructor(
    readonly status: number,
    readonly error: string,
    readonly description: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(description);
  }

  toResponse(): Response {
    return Response.json(
      { error: this.error, error_description: this.description },
      { status: this.status, headers: { 'Cache-Control': 'no-store', ...this.headers } },
    );
  }
}

export const oauth = {
  invalidRequest: (description: string) => new OAuthError(400, 'invalid_request', description),
  invalidGrant: (description: string) => new OAuthError(400, 'invalid_grant', description),
  invalidClient: (description: string, basic = false) =>
    new OAuthError(401, 'invalid_client', description, basic ? { 'WWW-Authenticate': 'Basic realm="Flint"' } : {}),
  unsupportedGrant: (description: string) => new OAuthError(400, 'unsupported_grant_type', description),
  throttled: (retryAfter: number) =>
    new OAuthError(429, 'slow_down', `Too many failed logins: try again in ${retryAfter} seconds`, { 'Retry-After': String(retryAfter) }),
};

/** Reads an `application/x-www-form-urlencoded` body; anything else is an OAuth `invalid_request`. */
export async function readForm(request: Request): Promise<URLSearchParams> {
  const type = (request.headers.get('content-type') ?? '').split(';')[0].trim().toLowerCase();
  if (type !== 'application/x-www-form-urlencoded') {
    throw oauth.invalidRequest('Send the request form-encoded (Content-Type: application/x-www-form-urlencoded)');
  }
  return new URLSearchParams(await request.text());
}
