import { randomUUID } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { startTestServer, useTestServer, type ProjectClient, type TestServer } from '../helpers/server.js';
import { addMemberClient, bearer, clientToken, getJson, sendJson } from './helpers.js';

const api = await useTestServer();

const rotate = (client: ProjectClient, clientId: string, parameter: unknown[] = []) =>
  client.post(`/ClientApplication/${clientId}/$rotate-secret`, { resourceType: 'Parameters', ...(parameter.length ? { parameter } : {}) });

/** Waits until `probe` gives `expected` (polling), or fails with what it last gave. */
async function until<T>(probe: () => Promise<T>, expected: T, withinMs: number): Promise<void> {
  const end = Date.now() + withinMs;
  let last = await probe();
  while (last !== expected && Date.now() < end) {
    await new Promise((resolve) => setTimeout(resolve, 100));
    last = await probe();
  }
  expect(last).toBe(expected);
}

describe('ClientApplication/$rotate-secret', () => {
  it('answers the client with a new secret and the previous one as retiringSecret; both get tokens', async () => {
    const admin = api.newProject();
    const { clientId, clientSecret } = await api.credentialsOf(admin);
    const res = await rotate(admin, clientId);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ resourceType: 'ClientApplication', id: clientId, retiringSecret: clientSecret });
    expect(res.body.secret).toMatch(/^[0-9a-f]{64}$/);
    expect(res.body.secret).not.toBe(clientSecret);
    expect((await clientToken(api, clientId, res.body.secret)).status).toBe(200);
    expect((await clientToken(api, clientId, clientSecret)).status).toBe(200);
    expect((await clientToken(api, clientId, 'neither')).status).toBe(401);
  });

  it('keeps tokens issued before the rotation valid', async () => {
    const admin = api.newProject();
    const { clientId } = await api.credentialsOf(admin);
    const before = await admin.token();
    expect((await rotate(admin, clientId)).status).toBe(200);
    expect((await getJson(api, '/fhir/R4/Patient', bearer(before))).status).toBe(200);
  });

  it('shows admins the same secret and retiringSecret on read and search as the rotation answered', async () => {
    const admin = api.newProject();
    const { clientId } = await api.credentialsOf(admin);
    const rotated = (await rotate(admin, clientId)).body;
    const read = await admin.get(`/ClientApplication/${clientId}`);
    expect(read.body).toMatchObject({ secret: rotated.secret, retiringSecret: rotated.retiringSecret });
    const found = await admin.get(`/ClientApplication?_id=${clientId}`);
    expect(found.body.entry[0].resource).toMatchObject({ secret: rotated.secret, retiringSecret: rotated.retiringSecret });
  });

  it('rotates when `secret` is the current secret, and refuses another one with 400', async () => {
    const admin = api.newProject();
    const { clientId, clientSecret } = await api.credentialsOf(admin);
    const wrong = await rotate(admin, clientId, [{ name: 'secret', valueString: 'not-the-secret' }]);
    expect(wrong.status).toBe(400);
    expect(wrong.body.issue[0]).toMatchObject({ code: 'invalid', expression: ['Parameters.parameter'] });
    expect(wrong.body.issue[0].diagnostics ?? wrong.body.issue[0].details?.text).toMatch(/current secret/);
    expect((await clientToken(api, clientId, clientSecret)).status).toBe(200);
    const right = await rotate(admin, clientId, [{ name: 'secret', valueString: clientSecret }]);
    expect(right.status).toBe(200);
    expect(right.body.retiringSecret).toBe(clientSecret);
  });

  it('ends the grace at once with `retiringSecret`: the previous secret is refused and no longer shown', async () => {
    const admin = api.newProject();
    const { clientId, clientSecret } = await api.credentialsOf(admin);
    const rotated = (await rotate(admin, clientId)).body;
    const retired = await rotate(admin, clientId, [{ name: 'retiringSecret', valueString: clientSecret }]);
    expect(retired.status).toBe(200);
    expect(retired.body.secret).toBe(rotated.secret);
    expect(retired.body.retiringSecret).toBeUndefined();
    expect((await clientToken(api, clientId, clientSecret)).status).toBe(401);
    expect((await clientToken(api, clientId, rotated.secret)).status).toBe(200);
    expect((await admin.get(`/ClientApplication/${clientId}`)).body.retiringSecret).toBeUndefined();
  });

  it('keeps both secrets when an admin sends a read back with PUT, and stores neither in the resource', async () => {
    const admin = api.newProject();
    const { clientId, clientSecret } = await api.credentialsOf(admin);
    const rotated = (await rotate(admin, clientId)).body;
    const read = await admin.get(`/ClientApplication/${clientId}`);
    const put = await admin.put(`/ClientApplication/${clientId}`, { ...read.body, name: 'renamed' });
    expect(put.status).toBe(200);
    expect(put.body).toMatchObject({ name: 'renamed', secret: rotated.secret, retiringSecret: clientSecret });
    expect((await clientToken(api, clientId, clientSecret)).status).toBe(200);
    const history = await admin.get(`/ClientApplication/${clientId}/_history`);
    for (const entry of history.body.entry) {
      expect(entry.resource.secret).toBeUndefined();
      expect(entry.resource.retiringSecret).toBeUndefined();
    }
  });

  it('ends the grace when an admin sets a new secret with PUT', async () => {
    const admin = api.newProject();
    const { clientId, clientSecret } = await api.credentialsOf(admin);
    const rotated = (await rotate(admin, clientId)).body;
    const { secret: _secret, retiringSecret: _retiring, ...client } = rotated;
    const put = await admin.put(`/ClientApplication/${clientId}`, { ...client, secret: 'chosen-by-the-admin' });
    expect(put.status).toBe(200);
    expect(put.body.secret).toBe('chosen-by-the-admin');
    expect(put.body.retiringSecret).toBeUndefined();
    expect((await clientToken(api, clientId, clientSecret)).status).toBe(401);
    expect((await clientToken(api, clientId, rotated.secret)).status).toBe(401);
    expect((await clientToken(api, clientId, 'chosen-by-the-admin')).status).toBe(200);
  });

  it('refuses a wrong `retiringSecret`, and both inputs at once, with 400', async () => {
    const admin = api.newProject();
    const { clientId, clientSecret } = await api.credentialsOf(admin);
    expect((await rotate(admin, clientId, [{ name: 'retiringSecret', valueString: clientSecret }])).status).toBe(400);
    const both = await rotate(admin, clientId, [
      { name: 'secret', valueString: clientSecret },
      { name: 'retiringSecret', valueString: clientSecret },
    ]);
    expect(both.status).toBe(400);
    expect((await clientToken(api, clientId, clientSecret)).status).toBe(200);
  });

  it('drops the secret retiring from an earlier rotation when rotating again', async () => {
    const admin = api.newProject();
    const { clientId, clientSecret } = await api.credentialsOf(admin);
    const first = (await rotate(admin, clientId)).body;
    const second = (await rotate(admin, clientId)).body;
    expect(second.retiringSecret).toBe(first.secret);
    expect((await clientToken(api, clientId, clientSecret)).status).toBe(401);
    expect((await clientToken(api, clientId, first.secret)).status).toBe(200);
  });

  it('is 403 for a member who is not an admin, and leaves the secret alone', async () => {
    const admin = api.newProject();
    const { clientId, clientSecret } = await api.credentialsOf(admin);
    const member = await addMemberClient(api, admin);
    const res = await sendJson(api, 'POST', `/fhir/R4/ClientApplication/${clientId}/$rotate-secret`, { resourceType: 'Parameters' }, bearer(member.token));
    expect(res.status).toBe(403);
    expect(res.body.issue[0].code).toBe('forbidden');
    expect((await clientToken(api, clientId, clientSecret)).status).toBe(200);
  });

  it('is 403 for an admin whose access policy allows ClientApplication read-only', async () => {
    const admin = api.newProject();
    const { clientId } = await api.credentialsOf(admin);
    const policy = await admin.post('/AccessPolicy', {
      resourceType: 'AccessPolicy',
      name: 'clients read-only',
      resource: [{ resourceType: 'ClientApplication', readonly: true }],
    });
    const member = await addMemberClient(api, admin, { admin: true, accessPolicy: `AccessPolicy/${policy.body.id}` });
    const res = await sendJson(api, 'POST', `/fhir/R4/ClientApplication/${clientId}/$rotate-secret`, { resourceType: 'Parameters' }, bearer(member.token));
    expect(res.status).toBe(403);
    expect(res.body.issue[0].code).toBe('forbidden');
  });

  it("is 404 for an unknown client and for another project's client", async () => {
    const admin = api.newProject();
    const other = api.newProject();
    const { clientId: otherClient, clientSecret } = await api.credentialsOf(other);
    expect((await rotate(admin, randomUUID())).status).toBe(404);
    const foreign = await rotate(admin, otherClient);
    expect(foreign.status).toBe(404);
    expect(foreign.body.resourceType).toBe('OperationOutcome');
    expect((await clientToken(api, otherClient, clientSecret)).status).toBe(200);
  });

  it('lets a super admin rotate the secret of any project’s client', async () => {
    const admin = api.newProject();
    const { clientId, clientSecret } = await api.credentialsOf(admin);
    const res = await rotate(api.superAdmin, clientId);
    expect(res.status).toBe(200);
    expect(res.body.retiringSecret).toBe(clientSecret);
  });

  it('is listed in the CapabilityStatement for ClientApplication', async () => {
    const res = await getJson(api, '/fhir/R4/metadata');
    const type = res.body.rest[0].resource.find((r: { type: string }) => r.type === 'ClientApplication');
    expect(type.operation.map((o: { name: string }) => o.name)).toContain('rotate-secret');
  });
});

describe('the grace period (CLIENT_SECRET_GRACE_MS)', async () => {
  const GRACE_MS = 1500;
  const short = await useTestServer({ CLIENT_SECRET_GRACE_MS: String(GRACE_MS) });

  it('accepts the previous secret until the grace ends, then refuses it and stops showing it', async () => {
    const admin = short.newProject();
    const { clientId, clientSecret } = await short.credentialsOf(admin);
    const rotated = await rotate(admin, clientId);
    expect((await clientToken(short, clientId, clientSecret)).status).toBe(200);
    await until(async () => (await clientToken(short, clientId, clientSecret)).status, 401, GRACE_MS + 5000);
    expect((await clientToken(short, clientId, rotated.body.secret)).status).toBe(200);
    const read = await admin.get(`/ClientApplication/${clientId}`);
    expect(read.body.secret).toBe(rotated.body.secret);
    expect(read.body.retiringSecret).toBeUndefined();
  });

  it('ends at once with a grace of 0', async () => {
    const none = await startTestServer({ CLIENT_SECRET_GRACE_MS: '0' });
    try {
      const admin = none.newProject();
      const { clientId, clientSecret } = await none.credentialsOf(admin);
      const rotated = await rotate(admin, clientId);
      expect(rotated.body.retiringSecret).toBeUndefined();
      expect((await clientToken(none, clientId, clientSecret)).status).toBe(401);
    } finally {
      await none.server.close();
    }
  });
});

/** On PostgreSQL another server may rotate: every server honours the grace and its end. */
describe.skipIf(!process.env.DATABASE_URL)('a rotation on another server (PostgreSQL)', async () => {
  const GRACE_MS = 1500;
  const first = await useTestServer({ CLIENT_SECRET_GRACE_MS: String(GRACE_MS) });
  const second: TestServer = await startTestServer({ CLIENT_SECRET_GRACE_MS: String(GRACE_MS) });
  afterAll(() => second.server.close());

  it('accepts the previous secret on the other server during the grace and refuses it after', async () => {
    const admin = first.newProject();
    const { clientId, clientSecret } = await first.credentialsOf(admin);
    // The second server verifies (and remembers) the secret before the rotation.
    expect((await clientToken(second, clientId, clientSecret)).status).toBe(200);
    const rotated = await rotate(admin, clientId);
    expect((await clientToken(second, clientId, rotated.body.secret)).status).toBe(200);
    expect((await clientToken(second, clientId, clientSecret)).status).toBe(200);
    await until(async () => (await clientToken(second, clientId, clientSecret)).status, 401, GRACE_MS + 5000);
    expect((await clientToken(second, clientId, rotated.body.secret)).status).toBe(200);
  });
});
