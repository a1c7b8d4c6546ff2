import { randomUUID } from 'node:crypto';
import { MedplumClient } from '@medplum/core';
import { afterAll, describe, expect, it } from 'vitest';
import { patientBody, startTestServer, useTestServer, type ProjectClient } from '../helpers/server.js';
import { addMemberClient, getJson, sendJson, type JsonResponse } from './helpers.js';

/**
 * HTTP Basic client credentials on the FHIR API (Medplum's `setBasicAuth`): the same access as a
 * client credentials token of that client, each secret verified once and then remembered until
 * the client, its membership or its secret changes.
 */

const api = await useTestServer();

const basic = (clientId: string, secret: string) => ({ Authorization: `Basic ${Buffer.from(`${clientId}:${secret}`).toString('base64')}` });
const getWith = (path: string, clientId: string, secret: string): Promise<JsonResponse> => getJson(api, `/fhir/R4${path}`, basic(clientId, secret));

function expectBasicRefusal(res: JsonResponse, text: RegExp): void {
  expect(res.status).toBe(401);
  expect(res.headers.get('www-authenticate')).toMatch(/^Basic realm="Flint"/);
  expect(res.body.resourceType).toBe('OperationOutcome');
  expect(res.body.issue[0].code).toBe('login');
  expect(res.body.issue[0].details.text).toMatch(text);
}

const rotate = (admin: ProjectClient, clientId: string, parameter: unknown[] = []) =>
  admin.post(`/ClientApplication/${clientId}/$rotate-secret`, { resourceType: 'Parameters', ...(parameter.length ? { parameter } : {}) });

describe("MedplumClient's setBasicAuth", () => {
  it('creates, reads, updates, searches and deletes with client id and secret', async () => {
    const admin = api.newProject();
    const { clientId, clientSecret } = await api.credentialsOf(admin);
    const medplum = new MedplumClient({ baseUrl: `${api.url}/`, fetch, cacheTime: 0 });
    medplum.setBasicAuth(clientId, clientSecret);
    const family = randomUUID();
    const created = await medplum.createResource({ resourceType: 'Patient', name: [{ family }] });
    expect((await admin.get(`/Patient/${created.id}`)).status).toBe(200);
    const read = await medplum.readResource('Patient', created.id!);
    expect(read.name?.[0].family).toBe(family);
    const updated = await medplum.updateResource({ ...read, active: true });
    expect(updated.active).toBe(true);
    const found = await medplum.searchResources('Patient', { family });
    expect(found.map((p) => p.id)).toEqual([created.id]);
    await medplum.deleteResource('Patient', created.id!);
    expect((await admin.get(`/Patient/${created.id}`)).status).toBe(410);
  });

  it('is refused with a wrong secret', async () => {
    const admin = api.newProject();
    const { clientId } = await api.credentialsOf(admin);
    const medplum = new MedplumClient({ baseUrl: `${api.url}/`, fetch, cacheTime: 0 });
    medplum.setBasicAuth(clientId, 'not-the-secret');
    // After the 401 the client tries a client credentials login with the same wrong secret, which fails too.
    await expect(medplum.searchResources('Patient')).rejects.toThrow();
  });
});

describe('HTTP Basic acts as a client credentials token of the client', () => {
  it("sees only its own project's resources", async () => {
    const mine = api.newProject();
    const theirs = api.newProject();
    const other = await theirs.post('/Patient', patientBody());
    const { clientId, clientSecret } = await api.credentialsOf(mine);
    expect((await getWith(`/Patient/${other.body.id}`, clientId, clientSecret)).status).toBe(404);
    const search = await getWith('/Patient', clientId, clientSecret);
    expect(search.status).toBe(200);
    expect(search.body.entry ?? []).toHaveLength(0);
  });

  it("is held to its membership's AccessPolicy", async () => {
    const admin = api.newProject();
    const policy = await admin.post('/AccessPolicy', { resourceType: 'AccessPolicy', resource: [{ resourceType: 'Patient', readonly: true }] });
    const { clientId, secret } = await addMemberClient(api, admin, { accessPolicy: `AccessPolicy/${policy.body.id}` });
    expect((await getWith('/Patient', clientId, secret)).status).toBe(200);
    const write = await sendJson(api, 'POST', '/fhir/R4/Patient', patientBody(), basic(clientId, secret));
    expect(write.status).toBe(403);
    expect((await getWith('/Observation', clientId, secret)).status).toBe(403);
  });

  it("is held to the system/ scopes of the client's defaultScope", async () => {
    const admin = api.newProject();
    const { clientId, secret } = await addMemberClient(api, admin, { client: { defaultScope: ['system/Patient.rs'] } });
    expect((await getWith('/Patient', clientId, secret)).status).toBe(200);
    const write = await sendJson(api, 'POST', '/fhir/R4/Patient', patientBody(), basic(clientId, secret));
    expect(write.status).toBe(403);
    expect(write.body.issue[0].details.text).toMatch(/requires scope system\/Patient\.c/);
  });

  it('answers GET /auth/me for the client', async () => {
    const admin = api.newProject();
    const { clientId, clientSecret } = await api.credentialsOf(admin);
    const me = await getJson(api, '/auth/me', basic(clientId, clientSecret));
    expect(me.status).toBe(200);
    expect(me.body.profile).toMatchObject({ resourceType: 'ClientApplication', id: clientId });
    expect(me.body.profile.secret).toBeUndefined();
  });

  it('costs no more statements than a bearer token once the secret was verified', async () => {
    const admin = api.newProject();
    const { clientId, clientSecret } = await api.credentialsOf(admin);
    const patient = await admin.post('/Patient', patientBody());
    const db = api.server.services.db;
    const statementsOf = async (headers: Record<string, string>) => {
      const before = db.statementCount;
      expect((await getJson(api, `/fhir/R4/Patient/${patient.body.id}`, headers)).status).toBe(200);
      return db.statementCount - before;
    };
    await statementsOf(basic(clientId, clientSecret));
    const bearerHeaders = await admin.authHeaders();
    await statementsOf(bearerHeaders);
    expect(await statementsOf(basic(clientId, clientSecret))).toBe(await statementsOf(bearerHeaders));
  });
});

describe('HTTP Basic refusals', () => {
  it('refuses a wrong secret, an unknown client and malformed credentials with 401 and a Basic challenge', async () => {
    const admin = api.newProject();
    const { clientId } = await api.credentialsOf(admin);
    expectBasicRefusal(await getWith('/Patient', clientId, 'wrong'), /Unknown client or wrong secret/);
    expectBasicRefusal(await getWith('/Patient', randomUUID(), 'whatever'), /Unknown client or wrong secret/);
    expectBasicRefusal(await getJson(api, '/fhir/R4/Patient', { Authorization: 'Basic %%%' }), /must be "Basic base64/);
    const noColon = { Authorization: `Basic ${Buffer.from(clientId).toString('base64')}` };
    expectBasicRefusal(await getJson(api, '/fhir/R4/Patient', noColon), /client_id:client_secret/);
  });

  it('refuses Basic and Bearer credentials together with 400', async () => {
    const admin = api.newProject();
    const { clientId, clientSecret } = await api.credentialsOf(admin);
    const both = `${basic(clientId, clientSecret).Authorization}, Bearer ${await admin.token()}`;
    const res = await getJson(api, '/fhir/R4/Patient', { Authorization: both });
    expect(res.status).toBe(400);
  });

  it('refuses a client switched off, even right after it was verified', async () => {
    const admin = api.newProject();
    const { clientId, secret } = await addMemberClient(api, admin);
    expect((await getWith('/Patient', clientId, secret)).status).toBe(200);
    const client = (await admin.get(`/ClientApplication/${clientId}`)).body;
    expect((await admin.put(`/ClientApplication/${clientId}`, { ...client, status: 'off' })).status).toBe(200);
    expectBasicRefusal(await getWith('/Patient', clientId, secret), /switched off/);
  });

  it('refuses a client whose membership was removed, right after it was verified', async () => {
    const admin = api.newProject();
    const { clientId, secret } = await addMemberClient(api, admin);
    expect((await getWith('/Patient', clientId, secret)).status).toBe(200);
    const memberships = await admin.get(`/ProjectMembership?profile=ClientApplication/${clientId}`);
    expect((await admin.delete(`/ProjectMembership/${memberships.body.entry[0].resource.id}`)).status).toBe(200);
    expectBasicRefusal(await getWith('/Patient', clientId, secret), /no membership/);
  });
});

describe('HTTP Basic after the secret changes', () => {
  it('accepts the previous secret during the grace of $rotate-secret, and the new one', async () => {
    const admin = api.newProject();
    const { clientId, secret } = await addMemberClient(api, admin);
    expect((await getWith('/Patient', clientId, secret)).status).toBe(200);
    const rotated = await rotate(admin, clientId);
    expect(rotated.status).toBe(200);
    expect((await getWith('/Patient', clientId, secret)).status).toBe(200);
    expect((await getWith('/Patient', clientId, rotated.body.secret)).status).toBe(200);
  });

  it('refuses the previous secret at once when its grace is ended (retiringSecret), though it was verified', async () => {
    const admin = api.newProject();
    const { clientId, secret } = await addMemberClient(api, admin);
    const rotated = await rotate(admin, clientId);
    expect((await getWith('/Patient', clientId, secret)).status).toBe(200);
    expect((await rotate(admin, clientId, [{ name: 'retiringSecret', valueString: secret }])).status).toBe(200);
    expectBasicRefusal(await getWith('/Patient', clientId, secret), /wrong secret/);
    expect((await getWith('/Patient', clientId, rotated.body.secret)).status).toBe(200);
  });

  it('refuses the old secret at once after a PUT sets a new one', async () => {
    const admin = api.newProject();
    const { clientId, secret } = await addMemberClient(api, admin);
    expect((await getWith('/Patient', clientId, secret)).status).toBe(200);
    const { secret: _old, ...client } = (await admin.get(`/ClientApplication/${clientId}`)).body;
    expect((await admin.put(`/ClientApplication/${clientId}`, { ...client, secret: 'a-new-secret-chosen-by-the-admin' })).status).toBe(200);
    expectBasicRefusal(await getWith('/Patient', clientId, secret), /wrong secret/);
    expect((await getWith('/Patient', clientId, 'a-new-secret-chosen-by-the-admin')).status).toBe(200);
  });
});

describe.skipIf(!process.env.DATABASE_URL)('HTTP Basic on two servers of one PostgreSQL database', async () => {
  // One deployment: the servers hear each other's cache notices.
  const namespace = `test_basic_${randomUUID().replace(/-/g, '').slice(0, 8)}`;
  const first = await startTestServer({ CACHE_NAMESPACE: namespace });
  const other = await startTestServer({ CACHE_NAMESPACE: namespace });
  afterAll(() => Promise.all([first.server.close(), other.server.close()]));
  const onOther = (path: string, clientId: string, secret: string) => getJson(other, `/fhir/R4${path}`, basic(clientId, secret));

  it('refuses on the other server a secret retired on this one, which the other had verified', async () => {
    const admin = first.newProject();
    const { clientId, secret } = await addMemberClient(first, admin);
    await rotate(admin, clientId);
    expect((await onOther('/Patient', clientId, secret)).status).toBe(200);
    expect((await rotate(admin, clientId, [{ name: 'retiringSecret', valueString: secret }])).status).toBe(200);
    // Notices travel between servers in a few milliseconds; wait for this one to arrive.
    let status = 200;
    for (let i = 0; i < 50 && status === 200; i++) {
      status = (await onOther('/Patient', clientId, secret)).status;
      if (status === 200) await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(status).toBe(401);
  });
});
