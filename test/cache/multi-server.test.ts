import type { ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { eventually, nicknameSearchParameter, projectClient, startServerProcess, TEST_SUPER_ADMIN, useTestServer, type ProjectClient, type TestServer } from '../helpers/server.js';
import { startFakeIdp, type FakeIdp } from '../auth/fake-idp.js';

/**
 * Two servers on one PostgreSQL database, the second in a process of its own (so no module state
 * is shared), keep their in-memory state in step through the invalidation bus: PostgreSQL LISTEN/NOTIFY by default, Redis pub/sub when REDIS_URL is set.
 * Without the bus each case below would stay wrong on the second server for up to a minute (the
 * token cache) or ten seconds (custom search parameters), or not count at all (login failures).
 */
const onPostgres = process.env.DATABASE_URL?.startsWith('postgres') === true;
const redisUrl = process.env.TEST_REDIS_URL;

function passwordAttempt(baseUrl: string, password: string): Promise<Response> {
  return fetch(`${baseUrl}/oauth2/token`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ grant_type: 'password', username: TEST_SUPER_ADMIN.email, password }),
  });
}

function twoServerCases(redis: Record<string, string>): void {
  let idp: FakeIdp;
  let overrides: Record<string, string>;
  let api: TestServer;
  let other: { url: string; child: ChildProcess };
  /** `client`'s project, with `client`'s token, through the other server. */
  // Registered here, not in the test that starts them: vitest runs no afterAll registered inside a test.
  afterAll(async () => {
    other?.child.kill('SIGTERM');
    await idp?.close();
  });
  const onOther = async (client: ProjectClient) => {
    const token = await client.token();
    return projectClient(`${other.url}/fhir/R4`, client.projectId, async () => token);
  };

  it('starts two servers on one database', async () => {
    idp = await startFakeIdp();
    overrides = {
      ...redis,
      // The two servers of this case hear each other, and no other test server.
      CACHE_NAMESPACE: `test_${randomUUID().replace(/-/g, '').slice(0, 12)}`,
      EXTERNAL_AUTH_PROVIDERS: JSON.stringify([{ issuer: idp.issuer, userInfoUrl: idp.userInfoUrl }]),
    };
    api = await useTestServer(overrides);
    expect(api.server.services.bus.kind).toBe(redis.REDIS_URL ? 'redis' : 'postgres');
    other = await startServerProcess(overrides);
  }, 150_000);

  it('ends a token on the other server as soon as it is logged out', async () => {
    const client = api.newProject();
    const viaOther = await onOther(client);
    // The other server verifies the token and keeps it in its token cache.
    expect((await viaOther.get('/Patient?_count=1')).status).toBe(200);
    const logout = await fetch(`${api.url}/oauth2/logout`, { method: 'POST', headers: await client.authHeaders() });
    expect(logout.status).toBe(200);
    expect(await eventually(async () => (await viaOther.get('/Patient?_count=1')).status, 401)).toBe(401);
  });

  it('applies a new AccessPolicy of a membership on the other server at once', async () => {
    const client = api.newProject();
    const viaOther = await onOther(client);
    expect((await viaOther.get('/Observation?_count=1')).status).toBe(200);
    const policy = await client.post('/AccessPolicy', { resourceType: 'AccessPolicy', resource: [{ resourceType: 'Patient' }] });
    expect(policy.status).toBe(201);
    const { clientId } = await api.credentialsOf(client);
    const found = await client.get(`/ProjectMembership?profile=ClientApplication/${clientId}`);
    const membership = found.body.entry[0].resource;
    const updated = await client.put(`/ProjectMembership/${membership.id}`, { ...membership, accessPolicy: { reference: `AccessPolicy/${policy.body.id}` } });
    expect(updated.status).toBe(200);
    expect(await eventually(async () => (await viaOther.get('/Observation?_count=1')).status, 403)).toBe(403);
  });

  it('lets the other server search by a SearchParameter created a moment ago', async () => {
    const client = api.newProject();
    const viaOther = await onOther(client);
    const code = `nickname${randomUUID().slice(0, 8)}`;
    // The other server reads (and caches) the project's custom parameters: none yet.
    expect((await viaOther.get(`/Patient?${code}=ace`)).status).toBe(400);
    const parameter = await client.post('/SearchParameter', nicknameSearchParameter(code));
    expect(parameter.status).toBe(201);
    const patient = await client.post('/Patient', { resourceType: 'Patient', name: [{ use: 'nickname', given: ['Ace'] }] });
    expect(patient.status).toBe(201);
    expect(await eventually(async () => (await viaOther.get(`/Patient?${code}=ace`)).status, 200)).toBe(200);
    const search = await viaOther.get(`/Patient?${code}=ace`);
    expect(search.body.entry.map((entry: { resource: { id: string } }) => entry.resource.id)).toEqual([patient.body.id]);
  });

  it.runIf(redis.REDIS_URL)('validates an external token with its provider once for both servers (Redis)', async () => {
    const admin = api.newProject();
    const externalId = `idp|${randomUUID()}`;
    const invite = await fetch(`${api.url}/admin/projects/${admin.projectId}/invite`, {
      method: 'POST',
      headers: { ...(await admin.authHeaders()), 'Content-Type': 'application/json' },
      body: JSON.stringify({ resourceType: 'Practitioner', firstName: 'Ext', lastName: 'User', externalId }),
    });
    expect(invite.status).toBe(201);
    const token = await idp.issue({ sub: externalId });
    const before = idp.userinfoCalls;
    const userinfo = (baseUrl: string) => fetch(`${baseUrl}/oauth2/userinfo`, { headers: { Authorization: `Bearer ${token}` } });
    const first = await userinfo(api.url);
    expect(first.status).toBe(200);
    const second = await userinfo(other.url);
    expect(second.status).toBe(200);
    expect(idp.userinfoCalls - before).toBe(1);
    // The other server hands out the credentials the first one issued for this validation.
    expect(((await second.json()) as { access_token: string }).access_token).toBe(((await first.json()) as { access_token: string }).access_token);
  });

  it('counts on the other server a resource created here', async () => {
    const client = api.newProject();
    const viaOther = await onOther(client);
    const code = `code-${randomUUID()}`;
    const observation = { resourceType: 'Observation', status: 'final', code: { coding: [{ system: 'http://x', code }] } };
    expect((await client.post('/Observation', observation)).status).toBe(201);
    const count = async () => (await viaOther.get(`/Observation?code=http://x|${code}&_summary=count`)).body.total;
    // The other server counts, and keeps the count.
    expect(await count()).toBe(1);
    expect((await client.post('/Observation', observation)).status).toBe(201);
    expect(await eventually(count, 2)).toBe(2);
  });

  it('counts on the other server each of several creates made here one after another', async () => {
    const client = api.newProject();
    const viaOther = await onOther(client);
    const code = `code-${randomUUID()}`;
    const observation = { resourceType: 'Observation', status: 'final', code: { coding: [{ system: 'http://x', code }] } };
    const count = async () => (await viaOther.get(`/Observation?code=http://x|${code}&_summary=count`)).body.total;
    // Creates that follow a notice closely are told in the next one: none of them is left out.
    for (let created = 1; created <= 4; created++) {
      expect((await client.post('/Observation', observation)).status).toBe(201);
      expect(await eventually(count, created)).toBe(created);
    }
  });

  it('does not answer on the other server a page it read ahead after a resource of it was deleted here', async () => {
    const client = api.newProject();
    const viaOther = await onOther(client);
    const ids: string[] = [];
    for (let i = 0; i < 45; i++) ids.push((await client.post('/Patient', { resourceType: 'Patient' })).body.id as string);
    const nextOf = (bundle: { link: { relation: string; url: string }[] }) => {
      const next = new URL(bundle.link.find((link) => link.relation === 'next')!.url);
      return `${next.pathname.slice('/fhir/R4'.length)}${next.search}`;
    };
    const first = await viaOther.get('/Patient?_count=20');
    // The second page follows a cursor: the other server reads the third ahead.
    const second = await viaOther.get(nextOf(first.body));
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect((await client.delete(`/Patient/${ids[42]}`)).status).toBe(200);
    // Notices take milliseconds: a page read ahead is answered only while none was heard.
    await new Promise((resolve) => setTimeout(resolve, 500));
    const third = await viaOther.get(nextOf(second.body));
    expect((third.body.entry as { resource: { id: string } }[]).map((entry) => entry.resource.id)).toEqual([ids[40], ids[41], ids[43], ids[44]]);
  });

  it('counts failed logins on one server when another server decides', async () => {
    for (let i = 0; i < 5; i++) expect((await passwordAttempt(api.url, 'wrong')).status).toBe(400);
    // One attempt only: a success would clear the count. Notices take milliseconds.
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect((await passwordAttempt(other.url, TEST_SUPER_ADMIN.password)).status).toBe(429);
  });
}

describe.runIf(onPostgres)('two servers, PostgreSQL LISTEN/NOTIFY', () => twoServerCases({}));

describe.runIf(onPostgres && redisUrl)('two servers, Redis pub/sub', () => twoServerCases({ REDIS_URL: redisUrl ?? '' }));
