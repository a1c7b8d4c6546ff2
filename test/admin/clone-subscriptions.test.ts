import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { addMemberClient } from '../auth/helpers.js';
import { receiversClosedAfterAll, type Receiver } from '../helpers/receiver.js';
import { clientCredentialsToken, lazyToken, projectClient, useTestServer, type ProjectClient } from '../helpers/server.js';

/**
 * A cloned Subscription delivers what its author may read in the clone: `meta.author` names the
 * cloned profile, whose cloned membership (with the cloned AccessPolicy) the deliveries follow.
 */
const api = await useTestServer();
const receiver = receiversClosedAfterAll();

type Json = Record<string, any>;

const observation = (code: string, status: string) => ({ resourceType: 'Observation', status, code: { coding: [{ system: 'http://loinc.org', code }] } });

async function subscribe(client: ProjectClient, code: string, hook: Receiver): Promise<Json> {
  const res = await client.post('/Subscription', {
    resourceType: 'Subscription', status: 'active', reason: 'clone', criteria: `Observation?code=${code}`, channel: { type: 'rest-hook', endpoint: hook.url, payload: 'application/fhir+json' },
  });
  expect(res.status, res.text).toBe(201);
  return res.body;
}

/** Clones the project as the super admin; answers the clone's id and a client of it as its cloned default (admin) client. */
async function cloneOf(source: ProjectClient): Promise<{ projectId: string; admin: ProjectClient; adminClientId: string }> {
  const cloned = await api.superAdmin.post(`/Project/${source.projectId}/$clone`, { name: 'copy' }, { 'Content-Type': 'application/json' });
  expect(cloned.status, cloned.text).toBe(201);
  const projectId = cloned.body.id as string;
  const clients = await api.superAdmin.get(`/ClientApplication?_project=${projectId}&name=copy Default Client`);
  expect(clients.body.entry, clients.text).toHaveLength(1);
  const { id, secret } = clients.body.entry[0].resource;
  return { projectId, adminClientId: id, admin: projectClient(api.fhir, projectId, lazyToken(() => clientCredentialsToken(api.url, id, secret))) };
}

const deliveredIds = (hook: Receiver) => hook.received.map((delivery) => JSON.parse(delivery.body).id as string);

describe('Project/$clone and Subscription authors', () => {
  it('names the cloned profile of the author as the cloned Subscription\'s author', async () => {
    const source = api.newProject();
    await subscribe(source, randomUUID(), await receiver());
    const clone = await cloneOf(source);
    const copies = await api.superAdmin.get(`/Subscription?_project=${clone.projectId}`);
    expect(copies.body.entry.map((entry: Json) => entry.resource.meta.author)).toEqual([{ reference: `ClientApplication/${clone.adminClientId}` }]);
  });

  it('delivers the clone\'s changes to an admin\'s cloned Subscription', async () => {
    const source = api.newProject();
    const code = randomUUID();
    const hook = await receiver();
    await subscribe(source, code, hook);
    const clone = await cloneOf(source);
    const written = await clone.admin.post('/Observation', observation(code, 'final'));
    expect(written.status, written.text).toBe(201);
    await hook.waitFor(1);
    expect(deliveredIds(hook)).toEqual([written.body.id]);
  });

  it('delivers to a member\'s cloned Subscription only what the member\'s cloned policy lets it read', async () => {
    const source = api.newProject();
    const code = randomUUID();
    const policy = await source.post('/AccessPolicy', {
      resourceType: 'AccessPolicy', name: 'final only', resource: [{ resourceType: 'Subscription' }, { resourceType: 'Observation', criteria: 'Observation?status=final' }],
    });
    const { token } = await addMemberClient(api, source, { accessPolicy: `AccessPolicy/${policy.body.id}` });
    const hook = await receiver();
    await subscribe(projectClient(api.fhir, source.projectId, async () => token), code, hook);
    const clone = await cloneOf(source);
    await clone.admin.post('/Observation', observation(code, 'preliminary'));
    const final = await clone.admin.post('/Observation', observation(code, 'final'));
    await hook.waitFor(1);
    // The preliminary Observation was written first: its delivery, were there one, is not behind.
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(deliveredIds(hook)).toEqual([final.body.id]);
  });
});
