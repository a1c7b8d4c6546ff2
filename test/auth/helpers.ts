import type { TestServer } from '../helpers/server.js';

export interface JsonResponse {
  status: number;
  headers: Headers;
  body: any;
}

async function asJson(res: Response): Promise<JsonResponse> {
  const text = await res.text();
  let body: unknown;
  try {
    body = text ? JSON.parse(text) : undefined;
  } catch {
    body = text;
  }
  return { status: res.status, headers: res.headers, body };
}

/** POST a form-encoded body to the token endpoint. */
export async function tokenRequest(api: TestServer, params: Record<string, string>, headers: Record<string, string> = {}): Promise<JsonResponse> {
  return asJson(
    await api.raw('/oauth2/token', {
      method: 'POST',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded', ...headers },
      body: new URLSearchParams(params),
    }),
  );
}

export async function getJson(api: TestServer, path: string, headers: Record<string, string> = {}): Promise<JsonResponse> {
  return asJson(await api.raw(path, { headers }));
}

export async function sendJson(api: TestServer, method: string, path: string, body: unknown, headers: Record<string, string> = {}): Promise<JsonResponse> {
  return asJson(
    await api.raw(path, { method, headers: { 'Content-Type': 'application/json', ...headers }, body: JSON.stringify(body) }),
  );
}

export const bearer = (token: string) => ({ Authorization: `Bearer ${token}` });

/** A token by client credentials; the response body. */
export async function clientToken(api: TestServer, clientId: string, clientSecret: string): Promise<JsonResponse> {
  return tokenRequest(api, { grant_type: 'client_credentials', client_id: clientId, client_secret: clientSecret });
}

/**
 * A second, non-admin member of a client's project: the admin creates a ClientApplication and
 * its ProjectMembership over REST, then the new client signs in with client credentials.
 */
export async function addMemberClient(
  api: TestServer,
  admin: { post(path: string, body: unknown): Promise<{ status: number; body: any }> ; projectId: string },
  options: { admin?: boolean; accessPolicy?: string; client?: Record<string, unknown> } = {},
): Promise<{ clientId: string; secret: string; token: string }> {
  const created = await admin.post('/ClientApplication', { resourceType: 'ClientApplication', name: 'member app', ...options.client });
  if (created.status !== 201) throw new Error(`client create failed: ${JSON.stringify(created.body)}`);
  const clientId = created.body.id as string;
  const membership = await admin.post('/ProjectMembership', {
    resourceType: 'ProjectMembership',
    project: { reference: `Project/${admin.projectId}` },
    user: { reference: `ClientApplication/${clientId}` },
    profile: { reference: `ClientApplication/${clientId}` },
    admin: options.admin ?? false,
    ...(options.accessPolicy ? { accessPolicy: { reference: options.accessPolicy } } : {}),
  });
  if (membership.status !== 201) throw new Error(`membership create failed: ${JSON.stringify(membership.body)}`);
  const token = await clientToken(api, clientId, created.body.secret);
  if (token.status !== 200) throw new Error(`token failed: ${JSON.stringify(token.body)}`);
  return { clientId, secret: created.body.secret, token: token.body.access_token };
}
