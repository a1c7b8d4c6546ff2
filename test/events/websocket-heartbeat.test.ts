import { afterEach, describe, expect, it } from 'vitest';
import { useTestServer } from '../helpers/server.js';
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
});
