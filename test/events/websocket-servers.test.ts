import { randomUUID } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { projectClient, startTestServer } from '../helpers/server.js';
import { boundSocket, websocketSubscription } from '../helpers/websocket.js';

const cleanup: (() => Promise<unknown> | void)[] = [];
afterAll(() => Promise.all(cleanup.map((step) => step())));

const observation = (code: string) => ({ resourceType: 'Observation', status: 'final', code: { coding: [{ system: 'http://loinc.org', code }] } });
const redisUrl = process.env.TEST_REDIS_URL;

/**
 * The socket is held by the first server, the change is written through the second. Test servers
 * poll for due work every 10 minutes (testEnv), so only the second server's workers, woken by its
 * own commit, match the change: the event reaches the socket through the notice channel alone.
 */
async function deliveredAcrossServers(env: Record<string, string>): Promise<void> {
  const shared = { CACHE_NAMESPACE: `ws_${randomUUID().replace(/-/g, '').slice(0, 12)}`, ...env };
  const [one, two] = await Promise.all([startTestServer(shared), startTestServer(shared)]);
  cleanup.push(() => one.server.close(), () => two.server.close());
  const client = one.newProject();
  const code = randomUUID();
  const id = await websocketSubscription(client, `Observation?code=${code}`);
  const socket = await boundSocket(one.url, client, id);
  cleanup.push(() => socket.close());
  const viaTwo = projectClient(two.fhir, client.projectId, () => client.token());
  const created = await viaTwo.post('/Observation', observation(code));
  expect(created.status).toBe(201);
  const bundle = await socket.next(10_000);
  expect(bundle.entry[0].resource.notificationEvent[0].focus.reference).toBe(`Observation/${created.body.id}`);
  expect(bundle.entry[1].resource.id).toBe(created.body.id);
}

describe('WebSocket subscriptions on several servers', () => {
  it.skipIf(!process.env.DATABASE_URL)('reach a socket of another server over LISTEN/NOTIFY', () => deliveredAcrossServers({}), 120_000);

  it.skipIf(!process.env.DATABASE_URL || !redisUrl)('reach a socket of another server over Redis', () => deliveredAcrossServers({ REDIS_URL: redisUrl! }), 120_000);
});
