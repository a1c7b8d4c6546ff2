import { randomUUID } from 'node:crypto';
import { pino } from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { startServer } from '../../src/server.js';
import { projectClient, testEnv, useTestServer } from '../helpers/server.js';
import { clientToken, getJson, bearer } from './helpers.js';

/**
 * Several servers on one PostgreSQL database: what one server keeps in memory about clients must
 * never outlive a change made through another, and uniqueness must hold across them.
 */
describe.skipIf(!process.env.DATABASE_URL)('two servers on one PostgreSQL database', async () => {
  const api = await useTestServer();
  const other = await startServer(loadConfig(testEnv()), { log: pino({ level: 'silent' }) });
  afterAll(() => other.close());

  it('refuses a rotated client secret on the other server at once', async () => {
    const client = api.newProject();
    const { clientId, clientSecret } = await api.credentialsOf(client);
    const otherApi = { ...api, raw: (path: string, init?: RequestInit) => fetch(`${other.url}${path}`, init) };
    // The other server verifies (and remembers) the first secret.
    expect((await clientToken(otherApi, clientId, clientSecret)).status).toBe(200);
    const current = await client.get(`/ClientApplication/${clientId}`);
    const { secret: _secret, ...application } = current.body;
    expect((await client.put(`/ClientApplication/${clientId}`, { ...application, secret: 'rotated-elsewhere' })).status).toBe(200);
    expect((await clientToken(otherApi, clientId, clientSecret)).status).toBe(401);
    expect((await clientToken(otherApi, clientId, 'rotated-elsewhere')).status).toBe(200);
  });

  it('creates one Patient when 32 conditional creates with the same criteria race across both servers', async () => {
    const client = api.newProject();
    const token = await client.token();
    const viaOther = projectClient(`${other.url}/fhir/R4`, client.projectId, async () => token);
    const mrn = randomUUID();
    const body = { resourceType: 'Patient', identifier: [{ system: 'http://example.org/mrn', value: mrn }] };
    const headers = { 'If-None-Exist': `identifier=http://example.org/mrn|${mrn}` };
    const results = await Promise.all(Array.from({ length: 32 }, (_, i) => (i % 2 === 0 ? client : viaOther).post('/Patient', body, headers)));
    expect(results.filter((r) => r.status === 201)).toHaveLength(1);
    expect(results.filter((r) => r.status === 200)).toHaveLength(31);
    const found = await client.get(`/Patient?identifier=http://example.org/mrn|${mrn}&_total=accurate`);
    expect(found.body.total).toBe(1);
  });

  it('lets exactly one of 6 concurrent creates of one externalId succeed across both servers', async () => {
    const admin = api.newProject();
    const token = await admin.token();
    const viaOther = projectClient(`${other.url}/fhir/R4`, admin.projectId, async () => token);
    const externalId = `idp|${randomUUID()}`;
    const body = {
      resourceType: 'ProjectMembership',
      project: { reference: `Project/${admin.projectId}` },
      user: { reference: `Practitioner/${randomUUID()}` },
      profile: { reference: `Practitioner/${randomUUID()}` },
      externalId,
    };
    const results = await Promise.all(Array.from({ length: 6 }, (_, i) => (i % 2 ? viaOther : admin).post('/ProjectMembership', body)));
    expect(results.map((r) => r.status).sort()).toEqual([201, 409, 409, 409, 409, 409]);
    const found = await getJson(api, `/fhir/R4/ProjectMembership?external-id=${encodeURIComponent(externalId)}`, bearer(await api.superAdmin.token()));
    expect(found.body.entry).toHaveLength(1);
  });
});
