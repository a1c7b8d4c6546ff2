import { randomInt, randomUUID } from 'node:crypto';
import { request } from 'node:http';
import { afterAll, describe, expect, it } from 'vitest';
import { startTestServer, useTestServer, type TestServer } from '../helpers/server.js';
import { addMemberClient } from './helpers.js';

/**
 * Wrong HTTP Basic secrets on the FHIR API are counted per address (30 in 15 minutes, any client)
 * and per client (from every address together): a flood from one address is stopped there and
 * does not lock the client out for its other callers. Each test sends from loopback addresses of
 * its own (127.x.y.z), so its counts are its own.
 */

const api = await useTestServer();

interface Answer {
  status: number;
  retryAfter: string | undefined;
  text: string;
}

function loopbackAddress(): string {
  return `127.${randomInt(1, 255)}.${randomInt(0, 256)}.${randomInt(1, 255)}`;
}

/** A request with Basic credentials (GET, or POST of `body` as JSON) over a connection from `localAddress`. */
function getFrom(localAddress: string, clientId: string, secret: string, path = '/fhir/R4/Patient', body?: unknown, server: TestServer = api): Promise<Answer> {
  const port = new URL(server.url).port;
  const headers: Record<string, string> = { authorization: `Basic ${Buffer.from(`${clientId}:${secret}`).toString('base64')}` };
  if (body !== undefined) headers['content-type'] = 'application/json';
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, localAddress, method: body === undefined ? 'GET' : 'POST', headers }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (text += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, retryAfter: res.headers['retry-after'], text }));
    });
    req.on('error', reject);
    req.end(body === undefined ? undefined : JSON.stringify(body));
  });
}

async function sendWrongSecrets(address: string, clientId: string, count: number): Promise<void> {
  for (let i = 0; i < count; i++) expect((await getFrom(address, clientId, `wrong-${i}`)).status).toBe(401);
}

describe('HTTP Basic wrong-secret throttling', () => {
  it('after 30 wrong secrets from an address answers 429 there, while the right secret verified before still works', { timeout: 180_000 }, async () => {
    const { clientId, secret } = await addMemberClient(api, api.newProject());
    const address = loopbackAddress();
    expect((await getFrom(address, clientId, secret)).status).toBe(200);
    await sendWrongSecrets(address, clientId, 30);
    const throttled = await getFrom(address, clientId, 'wrong-again');
    expect(throttled.status).toBe(429);
    expect(Number(throttled.retryAfter)).toBeGreaterThan(0);
    expect(throttled.text).toMatch(/Too many wrong secrets/);
    expect((await getFrom(address, clientId, secret)).status).toBe(200);
  });

  it('a flood from one address does not lock the client out for another address', { timeout: 180_000 }, async () => {
    const { clientId, secret } = await addMemberClient(api, api.newProject());
    const flooding = loopbackAddress();
    await sendWrongSecrets(flooding, clientId, 30);
    expect((await getFrom(flooding, clientId, 'wrong-again')).status).toBe(429);
    // Elsewhere a wrong secret is still checked (a plain 401), and the right one works.
    const other = loopbackAddress();
    expect((await getFrom(other, clientId, 'wrong-elsewhere')).status).toBe(401);
    expect((await getFrom(other, clientId, secret)).status).toBe(200);
  });

  it('counts an address\'s wrong secrets across clients', { timeout: 180_000 }, async () => {
    const admin = api.newProject();
    const first = await addMemberClient(api, admin);
    const second = await addMemberClient(api, admin);
    const third = await addMemberClient(api, admin);
    const address = loopbackAddress();
    await sendWrongSecrets(address, first.clientId, 15);
    await sendWrongSecrets(address, second.clientId, 15);
    expect((await getFrom(address, third.clientId, 'wrong-for-the-third')).status).toBe(429);
    expect((await getFrom(loopbackAddress(), third.clientId, 'wrong-for-the-third')).status).toBe(401);
  });

  it('counts wrong secrets sent to a read by id and to GraphQL against the address too', { timeout: 180_000 }, async () => {
    const admin = api.newProject();
    const { clientId } = await addMemberClient(api, admin);
    const patient = await admin.post('/Patient', { resourceType: 'Patient' });
    const address = loopbackAddress();
    await sendWrongSecrets(address, clientId, 10);
    for (let i = 0; i < 10; i++) expect((await getFrom(address, clientId, `read-${i}`, `/fhir/R4/Patient/${patient.body.id}`)).status).toBe(401);
    const query = { query: '{ PatientList { id } }' };
    for (let i = 0; i < 10; i++) expect((await getFrom(address, clientId, `graphql-${i}`, '/fhir/R4/$graphql', query)).status).toBe(401);
    expect((await getFrom(address, clientId, 'wrong-again')).status).toBe(429);
  });

  it('counts a wrong secret sent to a prepared GraphQL operation once', { timeout: 180_000 }, async () => {
    const admin = api.newProject();
    const { clientId } = await addMemberClient(api, admin);
    // A query of its own, run until the server answers it as a prepared operation.
    const query = { query: `{ PatientList(_count: 7) { id } }` };
    for (let i = 0; i < 4; i++) expect((await admin.post('/$graphql', query, { 'Content-Type': 'application/json' })).status).toBe(200);
    const address = loopbackAddress();
    for (let i = 0; i < 29; i++) expect((await getFrom(address, clientId, `graphql-${i}`, '/fhir/R4/$graphql', query)).status).toBe(401);
    expect((await getFrom(address, clientId, 'graphql-30', '/fhir/R4/$graphql', query)).status).toBe(401);
    expect((await getFrom(address, clientId, 'wrong-again')).status).toBe(429);
  });
});

describe.skipIf(!process.env.DATABASE_URL)('HTTP Basic throttling on two servers of one PostgreSQL database', async () => {
  // One deployment: the servers count each other's failures.
  const namespace = `test_basic_throttle_${randomUUID().replace(/-/g, '').slice(0, 8)}`;
  const first = await startTestServer({ CACHE_NAMESPACE: namespace });
  const other = await startTestServer({ CACHE_NAMESPACE: namespace });
  afterAll(() => Promise.all([first.server.close(), other.server.close()]));

  it('after a flood from one address, the right secret the other server never verified still works from another address', { timeout: 180_000 }, async () => {
    // Created on the first server, which knows the secret; the other has never verified it.
    const { clientId, secret } = await addMemberClient(first, first.newProject());
    const flooding = loopbackAddress();
    for (let i = 0; i < 30; i++) expect((await getFrom(flooding, clientId, `wrong-${i}`, undefined, undefined, other)).status).toBe(401);
    // The failures count once their notices come back from the bus; probe with wrong secrets until then.
    let status = 0;
    for (let i = 0; i < 50 && status !== 429; i++) {
      status = (await getFrom(flooding, clientId, `probe-${i}`, undefined, undefined, other)).status;
      if (status !== 429) await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(status).toBe(429);
    // The right secret is refused at the flooding address before it is checked...
    expect((await getFrom(flooding, clientId, secret, undefined, undefined, other)).status).toBe(429);
    // ...and accepted from another address.
    expect((await getFrom(loopbackAddress(), clientId, secret, undefined, undefined, other)).status).toBe(200);
  });
});
