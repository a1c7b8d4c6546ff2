import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { generateKeyPair, SignJWT, type CryptoKey } from 'jose';

/**
 * A small identity provider on loopback: issues ES256 JWTs and answers its userinfo endpoint for
 * tokens it issued (401 for anything else, or for tokens it was told to reject), counting calls.
 */
export interface FakeIdp {
  readonly issuer: string;
  readonly userInfoUrl: string;
  userinfoCalls: number;
  issue(claims: Record<string, unknown>, options?: { expiresInSeconds?: number }): Promise<string>;
  reject(token: string): void;
  close(): Promise<void>;
}

export async function startFakeIdp(): Promise<FakeIdp> {
  const { privateKey } = await generateKeyPair('ES256');
  const issued = new Map<string, Record<string, unknown>>();
  const rejected = new Set<string>();
  let server: Server;
  const idp: FakeIdp = {
    issuer: '',
    userInfoUrl: '',
    userinfoCalls: 0,
    async issue(claims, options = {}) {
      const token = await new SignJWT(claims)
        .setProtectedHeader({ alg: 'ES256' })
        .setIssuer(idp.issuer)
        .setIssuedAt()
        .setExpirationTime(Math.floor(Date.now() / 1000) + (options.expiresInSeconds ?? 3600))
        .sign(privateKey as CryptoKey);
      issued.set(token, claims);
      return token;
    },
    reject: (token) => void rejected.add(token),
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
  server = createServer((req, res) => {
    if (req.url !== '/userinfo') {
      res.writeHead(404).end();
      return;
    }
    idp.userinfoCalls++;
    const token = /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1] ?? '';
    const claims = issued.get(token);
    if (!claims || rejected.has(token)) {
      res.writeHead(401, { 'Content-Type': 'application/json' }).end('{"error":"invalid_token"}');
      return;
    }
    res.writeHead(200, { 'Content-Type': 'application/json' }).end(JSON.stringify({ email: 'ext@example.org', ...claims }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  Object.assign(idp, { issuer: `http://127.0.0.1:${port}/`, userInfoUrl: `http://127.0.0.1:${port}/userinfo` });
  return idp;
}
