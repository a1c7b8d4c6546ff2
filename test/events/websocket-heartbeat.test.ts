import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { addMemberClient } from '../auth/helpers.js';
import { projectClient, useTestServer } from '../helpers/server.js';
import { boundSocket, websocketSubscription, type TestSocket } from '../helpers/websocket.js';

const api = await useTestServer({ WS_HEARTBEAT_MS: '200' });

const sockets: TestSocket[] = [];
afterEach(() => Promise.all(sockets.splice(0).map((socket) => (socket.close(), socket.closed))));

describe('websocket heartbeats', () => {
  it('sends each bound Subscription a heartbeat Bundle every WS_HEARTBEAT_MS, as Medplum does', async () => {
    const client = api.newProject();
    const id = await websocketSubscription(client, 'Observation');
    const socket = await boundSocket(api.url, client, id);
    sockets.push(socket);
    const bundle = await socket.next(3_000);
    expect(bundle).toMatchObject({ resourceType: 'Bundle', type: 'history' });
    expect(bundle.entry[0].resource).toMatchObject({ resourceType: 'SubscriptionStatus', type: 'heartbeat', subscription: { reference: `Subscription/${id}` }, eventsSinceSubscriptionStart: '0' });
    expect((await socket.next(3_000)).entry[0].resource.type).toBe('heartbeat');
  });

  it('counts only the events the socket was sent, not those its owner may not see', async () => {
    const admin = api.newProject();
    const code = randomUUID();
    const policy = await admin.post('/AccessPolicy', {
      resourceType: 'AccessPolicy', name: 'final only', resource: [{ resourceType: 'Subscription' }, { resourceType: 'Observation', criteria: 'Observation?status=final' }],
    });
    const added = await addMemberClient(api, admin, { accessPolicy: `AccessPolicy/${policy.body.id}` });
    const member = projectClient(api.fhir, admin.projectId, async () => added.token);
    const id = await websocketSubscription(admin, `Observation?code=${code}`);
    const [theirs, mine] = [await boundSocket(api.url, admin, id), await boundSocket(api.url, member, id)];
    sockets.push(theirs, mine);
    const observation = (status: string) => ({ resourceType: 'Observation', status, code: { coding: [{ system: 'http://loinc.org', code }] } });
    await admin.post('/Observation', observation('preliminary'));
    await admin.post('/Observation', observation('final'));
    const events = async (socket: TestSocket, count: number) => {
      const found: any[] = [];
      while (found.length < count) {
        const status = (await socket.next(3_000)).entry[0].resource;
        if (status.type === 'event-notification') found.push(status);
      }
      return found;
    };
    expect((await events(theirs, 2)).map((status) => status.eventsSinceSubscriptionStart)).toEqual(['1', '2']);
    const [event] = await events(mine, 1);
    expect(event.notificationEvent[0].eventNumber).toBe('1');
    let heartbeat = (await mine.next(3_000)).entry[0].resource;
    while (heartbeat.type !== 'heartbeat') heartbeat = (await mine.next(3_000)).entry[0].resource;
    expect(heartbeat.eventsSinceSubscriptionStart).toBe('1');
  });
});
