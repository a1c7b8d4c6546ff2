import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { addMemberClient } from '../auth/helpers.js';
import { projectClient, useTestServer, type ProjectClient } from '../helpers/server.js';
import { boundSocket, websocketSubscription, type TestSocket } from '../helpers/websocket.js';

/**
 * Events sent to a bound socket follow what its owner may see now: the AccessPolicy of the
 * membership the binding token was issued to, and that membership still existing.
 */
const api = await useTestServer();

const sockets: TestSocket[] = [];
afterEach(() => Promise.all(sockets.splice(0).map((socket) => (socket.close(), socket.closed))));

const observation = (code: string) => ({ resourceType: 'Observation', status: 'final', code: { coding: [{ system: 'http://loinc.org', code }] } });

/** A member of `admin`'s project under a policy allowing Subscriptions and `observations` (a policy rule). */
async function member(admin: ProjectClient, observations: Record<string, unknown>): Promise<{ client: ProjectClient; policyId: string; policy: Record<string, unknown> }> {
  const policy = { resourceType: 'AccessPolicy', name: 'narrowed', resource: [{ resourceType: 'Subscription' }, { resourceType: 'Observation', ...observations }] };
  const created = await admin.post('/AccessPolicy', policy);
  expect(created.status).toBe(201);
  const added = await addMemberClient(api, admin, { accessPolicy: `AccessPolicy/${created.body.id}` });
  return { client: projectClient(api.fhir, admin.projectId, async () => added.token), policyId: created.body.id, policy: created.body };
}

async function bound(admin: ProjectClient, client: ProjectClient): Promise<TestSocket> {
  const socket = await boundSocket(api.url, client, await websocketSubscription(admin, 'Observation'));
  sockets.push(socket);
  return socket;
}

const settle = () => new Promise((resolve) => setTimeout(resolve, 500));

describe('websocket events and the socket owner\'s access', () => {
  it('sends only the resources within the owner\'s AccessPolicy criteria', async () => {
    const admin = api.newProject();
    const allowed = randomUUID();
    const { client } = await member(admin, { criteria: `Observation?code=${allowed}` });
    const socket = await bound(admin, client);
    await admin.post('/Observation', observation(randomUUID()));
    const visible = await admin.post('/Observation', observation(allowed));
    const event = await socket.next();
    expect(event.entry[0].resource.notificationEvent[0].focus.reference).toBe(`Observation/${visible.body.id}`);
    await settle();
    expect(socket.received).toHaveLength(2);
  });

  it('follows a change of the owner\'s AccessPolicy made after binding', async () => {
    const admin = api.newProject();
    const { client, policyId, policy } = await member(admin, {});
    const socket = await bound(admin, client);
    await admin.post('/Observation', observation(randomUUID()));
    await socket.next();
    const narrowed = await admin.put(`/AccessPolicy/${policyId}`, { ...policy, resource: [{ resourceType: 'Subscription' }] });
    expect(narrowed.status).toBe(200);
    await admin.post('/Observation', observation(randomUUID()));
    await settle();
    expect(socket.received).toHaveLength(2);
  });

  it('closes the socket once the owner\'s membership has ended', async () => {
    const admin = api.newProject();
    const { client } = await member(admin, {});
    const socket = await bound(admin, client);
    const memberships = await admin.get(`/ProjectMembership?_count=100`);
    const own = memberships.body.entry.map((entry: { resource: Record<string, any> }) => entry.resource).filter((m: Record<string, any>) => m.accessPolicy);
    expect(own).toHaveLength(1);
    expect((await admin.delete(`/ProjectMembership/${own[0].id}`)).status).toBe(200);
    await admin.post('/Observation', observation(randomUUID()));
    expect(await socket.closed).toBe(1008);
    expect(socket.received.at(-1).resourceType).toBe('OperationOutcome');
  });
});
