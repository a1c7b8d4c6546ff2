import { describe, expect, it } from 'vitest';
import { useTestServer, type ProjectClient } from '../helpers/server.js';

/**
 * SPEC 4.7: Project/$clone does not copy secrets. A Subscription's `channel.header`, the user and
 * password in its `channel.endpoint` and its signing secret are the credentials its endpoint is
 * called with; the Project's `systemSecret` reaches
 * system Bots. What is checked is what a super admin reads back from the clone.
 */

const api = await useTestServer();

const SECRET_URL = 'https://www.medplum.com/fhir/StructureDefinition/subscription-secret';
const MAX_ATTEMPTS_URL = 'https://medplum.com/fhir/StructureDefinition/subscription-max-attempts';

type Json = Record<string, any>;

function subscription(channel: Json, extension?: Json[]): Json {
  return { resourceType: 'Subscription', status: 'active', reason: 'clone test', criteria: 'Observation?code=8867-4', channel, ...(extension ? { extension } : {}) };
}

/** Clones the client's project and answers the clone's Subscriptions, as a super admin reads them. */
async function clonedSubscriptions(client: ProjectClient): Promise<Json[]> {
  await client.token();
  const cloned = await api.superAdmin.post(`/Project/${client.projectId}/$clone`, { name: 'copy' }, { 'Content-Type': 'application/json' });
  expect(cloned.status, cloned.text).toBe(201);
  const found = await api.superAdmin.get(`/Subscription?_project=${cloned.body.id}`);
  expect(found.status, found.text).toBe(200);
  return (found.body.entry ?? []).map((entry: Json) => entry.resource);
}

async function create(client: ProjectClient, resource: Json): Promise<Json> {
  const res = await client.post(`/${resource.resourceType}`, resource);
  expect(res.status, res.text).toBe(201);
  return res.body;
}

describe('Project/$clone and Subscription credentials', () => {
  it('leaves out channel.header', async () => {
    const p = api.newProject();
    await create(p, subscription({ type: 'rest-hook', endpoint: 'https://example.org/hook', header: ['Authorization: Bearer not-for-the-clone'] }));
    const [copy] = await clonedSubscriptions(p);
    expect(copy.channel).toEqual({ type: 'rest-hook', endpoint: 'https://example.org/hook' });
    expect(JSON.stringify(copy)).not.toContain('not-for-the-clone');
  });

  it('leaves out the signing secret and keeps the other extensions', async () => {
    const p = api.newProject();
    await create(
      p,
      subscription({ type: 'rest-hook', endpoint: 'https://example.org/hook' }, [
        { url: SECRET_URL, valueString: 'signing-secret-not-for-the-clone' },
        { url: MAX_ATTEMPTS_URL, valueInteger: 3 },
      ]),
    );
    const [copy] = await clonedSubscriptions(p);
    expect(copy.extension).toEqual([{ url: MAX_ATTEMPTS_URL, valueInteger: 3 }]);
    expect(JSON.stringify(copy)).not.toContain('signing-secret-not-for-the-clone');
  });

  it('turns off an active Subscription whose credentials it left out, saying why', async () => {
    const p = api.newProject();
    await create(p, subscription({ type: 'rest-hook', endpoint: 'https://example.org/hook', header: ['Authorization: Basic eDp5'] }));
    const [copy] = await clonedSubscriptions(p);
    expect(copy.status).toBe('off');
    expect(copy.error).toContain('channel.header');
  });

  it('leaves out the user and password of channel.endpoint, keeping the rest of the URL', async () => {
    const p = api.newProject();
    await create(p, subscription({ type: 'rest-hook', endpoint: 'https://hook-user:not-for-the-clone@example.org:8443/hook?tenant=a' }));
    const [copy] = await clonedSubscriptions(p);
    expect(copy.channel).toEqual({ type: 'rest-hook', endpoint: 'https://example.org:8443/hook?tenant=a' });
    expect(JSON.stringify(copy)).not.toContain('not-for-the-clone');
    expect(JSON.stringify(copy)).not.toContain('hook-user');
  });

  it('turns off an active Subscription whose endpoint lost its user and password, naming what to set', async () => {
    const p = api.newProject();
    await create(p, subscription({ type: 'rest-hook', endpoint: 'https://x:y@example.org/hook' }));
    const [copy] = await clonedSubscriptions(p);
    expect(copy.status).toBe('off');
    expect(copy.error).toContain('channel.endpoint');
    expect(copy.error).not.toContain('channel.header');
  });

  it('keeps an active Subscription without credentials active and whole', async () => {
    const p = api.newProject();
    const source = await create(p, subscription({ type: 'rest-hook', endpoint: 'https://example.org/hook', payload: 'application/fhir+json' }));
    const [copy] = await clonedSubscriptions(p);
    expect(copy.status).toBe('active');
    expect(copy.error).toBeUndefined();
    expect(copy.channel).toEqual(source.channel);
  });

  it('leaves the source Subscription as it was', async () => {
    const p = api.newProject();
    const source = await create(p, subscription({ type: 'rest-hook', endpoint: 'https://example.org/hook', header: ['X-Key: k'] }, [{ url: SECRET_URL, valueString: 's' }]));
    await clonedSubscriptions(p);
    const after = await p.get(`/Subscription/${source.id}`);
    expect(after.body.status).toBe('active');
    expect(after.body.channel.header).toEqual(['X-Key: k']);
    expect(after.body.extension).toEqual([{ url: SECRET_URL, valueString: 's' }]);
  });
});

describe('Project/$clone and the Project secrets', () => {
  it('leaves out the Project systemSecret', async () => {
    const p = api.newProject();
    await p.token();
    const project = await api.superAdmin.get(`/Project/${p.projectId}`);
    const updated = await api.superAdmin.put(`/Project/${p.projectId}`, { ...project.body, systemSecret: [{ name: 'S', valueString: 'system-secret-not-for-the-clone' }] });
    expect(updated.status, updated.text).toBe(200);
    const cloned = await api.superAdmin.post(`/Project/${p.projectId}/$clone`, {}, { 'Content-Type': 'application/json' });
    expect(cloned.status, cloned.text).toBe(201);
    const copy = await api.superAdmin.get(`/Project/${cloned.body.id}`);
    expect(copy.body.systemSecret).toBeUndefined();
  });

  it('keeps Bot.system on the clone, which has no systemSecret to reach', async () => {
    const p = api.newProject();
    const bot = await create(p, { resourceType: 'Bot', name: 'system bot' });
    const marked = await api.superAdmin.put(`/Bot/${bot.id}`, { ...bot, system: true });
    expect(marked.status, marked.text).toBe(200);
    const cloned = await api.superAdmin.post(`/Project/${p.projectId}/$clone`, {}, { 'Content-Type': 'application/json' });
    const bots = await api.superAdmin.get(`/Bot?_project=${cloned.body.id}`);
    expect(bots.body.entry.map((entry: Json) => entry.resource.system)).toEqual([true]);
  });
});
