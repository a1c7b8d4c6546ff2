import { afterAll, describe, expect, it } from 'vitest';
import { useOwnOutboxServer } from '../helpers/own-database.js';
import { eventually } from '../helpers/server.js';
import { startReceiver, type Receiver } from '../helpers/receiver.js';

/**
 * A Binary that holds a Bot's code (src/storage/bot-code.ts) is no Subscription's business: a
 * notification would carry the code, and the keys it often holds, to an endpoint outside the server.
 */

const api = await useOwnOutboxServer({ SUBSCRIPTION_RETRY_BASE_MS: '20' });
const receivers: Receiver[] = [];
afterAll(() => Promise.all(receivers.map((r) => r.close())));

function outboxRows(projectId: string): Promise<number> {
  return api.server.services.db
    .query<{ n: number }>('SELECT count(*)::int AS n FROM "event_outbox" WHERE "projectId" = $1', [projectId])
    .then((rows) => rows[0].n);
}

describe('Subscriptions and Bot code Binaries', () => {
  it('delivers no notification of a change to a Binary once a Bot names it as its code', async () => {
    const client = api.newProject();
    const hook = await startReceiver();
    receivers.push(hook);
    const subscription = await client.post('/Subscription', {
      resourceType: 'Subscription',
      status: 'active',
      reason: 'every Binary',
      criteria: 'Binary',
      channel: { type: 'rest-hook', endpoint: hook.url, payload: 'application/fhir+json' },
    });
    expect(subscription.status, subscription.text).toBe(201);
    // Binary bytes are written by createBinary, which records no change; a PATCH of the resource does.
    const source = await client.request('POST', '/Binary', 'const API_KEY = "not-for-the-hook";', { 'Content-Type': 'text/plain' });
    const ordinary = await client.request('POST', '/Binary', 'a scanned letter', { 'Content-Type': 'text/plain' });
    const bot = await client.post('/Bot', { resourceType: 'Bot', name: 'with source', sourceCode: { contentType: 'text/plain', url: `Binary/${source.body.id}` } });
    expect([source.status, ordinary.status, bot.status]).toEqual([201, 201, 201]);
    const retyped = [{ op: 'replace', path: '/contentType', value: 'text/x-typescript' }];
    expect((await client.patch(`/Binary/${source.body.id}`, retyped)).status).toBe(200);
    expect((await client.patch(`/Binary/${ordinary.body.id}`, retyped)).status).toBe(200);
    await hook.waitFor(1);
    await eventually(() => outboxRows(client.projectId), 0, 10_000);
    expect(hook.received.map((delivery) => JSON.parse(delivery.body).id)).toEqual([ordinary.body.id]);
  });
});
