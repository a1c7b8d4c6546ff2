import { decodeProtectedHeader, jwtVerify, SignJWT } from 'jose';
import { SIGNING_ALGORITHM, type ServerKeys } from '../../auth/keys.js';

/**
 * The token type of binding tokens. Their claims carry neither `login_id` nor `project`, which
 * every access token must have, so a binding token can never be used as a bearer token; its type
 * and audience keep access tokens from being used to bind.
 */
const TOKEN_TYPE = 'ws-binding+jwt';

/** What a binding token grants: one Subscription of one project, to one caller. */
export interface BindingGrant {
  readonly subscriptionId: string;
  readonly projectId: string;
  /** The caller's ProjectMembership, checked again when the token is used; absent for internal callers. */
  readonly membershipId?: string;
  /** When the token expires (seconds since the epoch). */
  readonly expiresAt: number;
}

/** Why a binding token was refused; the text is sent to the socket's client. */
export class BindingTokenError extends Error {}

/** The audience of binding tokens: the WebSocket endpoint of this server's base URL. */
export function webSocketUrl(baseUrl: string): string {
  return `${baseUrl.replace(/^http/, 'ws')}ws/subscriptions-r4`;
}

export async function signBindingToken(keys: ServerKeys, baseUrl: string, grant: Omit<BindingGrant, 'expiresAt'>, seconds: number): Promise<{ token: string; expiresAt: number }> {
  const expiresAt = Math.floor(Date.now() / 1000) + seconds;
  const token = await new SignJWT({ subscription_id: grant.subscriptionId, ws_project: grant.projectId, ...(grant.membershipId ? { ws_membership: grant.membershipId } : {}) })
    .setProtectedHeader({ alg: SIGNING_ALGORITHM, kid: keys.kid, typ: TOKEN_TYPE })
    .setIssuer(baseUrl)
    .setAudience(webSocketUrl(baseUrl))
    .setSubject(grant.membershipId ?? grant.projectId)
    .setIssuedAt()
    .setExpirationTime(expiresAt)
    .sign(keys.privateKey);
  return { token, expiresAt };
}

export async function verifyBindingToken(keys: ServerKeys, baseUrl: string, token: string): Promise<BindingGrant> {
  let kid: string | undefined;
  try {
    const header = decodeProtectedHeader(token);
    if (header.typ !== TOKEN_TYPE || header.alg !== SIGNING_ALGORITHM) throw new BindingTokenError('Not a binding token: get one from Subscription/{id}/$get-ws-binding-token');
    kid = header.kid;
  } catch (error) {
    if (error instanceof BindingTokenError) throw error;
    throw new BindingTokenError('The binding token is not a JWT');
  }
  const key = kid ? keys.publicKeys.get(kid) : undefined;
  if (!key) throw new BindingTokenError('The binding token was not signed by this server');
  try {
    const { payload } = await jwtVerify(token, key, { algorithms: [SIGNING_ALGORITHM], issuer: baseUrl, audience: webSocketUrl(baseUrl), typ: TOKEN_TYPE, requiredClaims: ['exp'] });
    const { subscription_id: subscriptionId, ws_project: projectId, ws_membership: membershipId } = payload;
    if (typeof subscriptionId !== 'string' || typeof projectId !== 'string') throw new BindingTokenError('The binding token names no Subscription');
    return { subscriptionId, projectId, membershipId: typeof membershipId === 'string' ? membershipId : undefined, expiresAt: payload.exp! };
  } catch (error) {
    if (error instanceof BindingTokenError) throw error;
    if ((error as { code?: string }).code === 'ERR_JWT_EXPIRED') throw new BindingTokenError('The binding token has expired: get a new one from $get-ws-binding-token');
    throw new BindingTokenError('The binding token is invalid');
  }
}
