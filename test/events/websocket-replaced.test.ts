import { afterEach, describe, expect, it } from 'vitest';
import { addMemberClient } from '../auth/helpers.js';
import { receiversClosedAfterAll } from '../helpers/receiver.js';
import { useOwnOutboxServer } from '../helpers/own-database.js';
import { projectClient } from '../helpers/server.js';
import { boundSocket, websocketSubscription, type TestSocket } from '../helpers/websocket.js';

/**
 * The socket owner's AccessPolicy criteria are judged on the version an event carries. One attempt
 * at a time and a receiver that never answers hold the workers back, so that a create and the
 * update after it are matched (and their events checked) once both are written.
 */
const api = await useOwnOutboxServer({ SUBSCRIPTION_CONCURRENCY: '1', SUBSCRIPTION_TIMEOUT_MS: '4000', WS_HEARTBEAT_MS: '0' });
const receiver = receiversClosedAfterAll();
const sockets: TestSocket[] = [];
afterEach(() => Promise.all(sockets.splice(0).map((socket) => (socket.close(), socket.closed))));

const observation = (status: string) => ({ resourceType: 'Observation', status, code: { text: 'x' } });

describe('websocket events of a replaced version', () => {
  it('do not send a version outside the owner\'s criteria because the version after it is within them', async () => {
    const admin = api.newProject();
    const policy = await admin.post('/AccessPolicy', { resourceType: 'AccessPolicy', name: 'final only', resource: [{ resourceType: 'Subscription' }, { resourceType: 'Observation', criteria: 'Observation?status=final' }] });
    const added = await addMemberClient(api, admin, { accessPolicy: `AccessPolicy/${policy.body.id}` });
    const member = projectClient(api.fhir, admin.projectId, async () => added.token);
    const socket = await boundSocket(api.url, member, await websocketSubscription(admin, 'Observation'));
    sockets.push(socket);
    const silent = await receiver([0]);
    const hook = await admin.post('/Subscription', { resourceType: 'Subscription', status: 'active', reason: 'hold', criteria: 'Patient', channel: { type: 'rest-hook', endpoint: silent.url } });
    expect(hook.status).toBe(201);
    await admin.post('/Patient', { resourceType: 'Patient' });
    await silent.waitFor(1);
    await admin.post('/Patient', { resourceType: 'Patient' });
    const created = await admin.post('/Observation', observation('preliminary'));
    const updated = await admin.put(`/Observation/${created.body.id}`, { ...observation('final'), id: created.body.id });
    expect(updated.status).toBe(200);
    const event = await socket.next(20_000);
    expect(event.entry[1].resource.meta.versionId).toBe(updated.body.meta.versionId);
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(socket.received.filter((message) => message.entry?.[1]?.resource?.status === 'preliminary')).toEqual([]);
  });
});
