import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config.js';
import { useOwnOutboxServer } from '../helpers/own-database.js';
import { receiversClosedAfterAll } from '../helpers/receiver.js';
import { eventually, testEnv, type ProjectClient } from '../helpers/server.js';

/**
 * Deliveries yield to requests in flight (SUBSCRIPTION_BUSY_SHARE_PERCENT, src/events/yielding.ts):
 * at the smallest share, deliveries wait in the outbox while a burst of writes is served, and
 * every one of them still arrives, once, with its AuditEvent; a quiet server delivers at once.
 */
const api = await useOwnOutboxServer({ SUBSCRIPTION_BUSY_SHARE_PERCENT: '1' });
const receiver = receiversClosedAfterAll();

const observation = { resourceType: 'Observation', status: 'final', code: { coding: [{ system: 'http://loinc.org', code: '8867-4' }] } };

async function subscribe(client: ProjectClient, endpoint: string): Promise<string> {
  const res = await client.post('/Subscription', {
    resourceType: 'Subscription', status: 'active', reason: 'test', criteria: 'Observation?code=8867-4',
    channel: { type: 'rest-hook', endpoint, payload: 'application/fhir+json' },
  });
  expect(res.status).toBe(201);
  return res.body.id;
}

/** `count` creates from `clients` concurrent clients, each sending its next as soon as its answer arrives. */
async function burst(client: ProjectClient, clients: number, count: number): Promise<string[]> {
  const ids: string[] = [];
  let started = 0;
  await Promise.all(Array.from({ length: clients }, async () => {
    while (started < count) {
      started++;
      const res = await client.post('/Observation', observation);
      expect(res.status).toBe(201);
      ids.push(res.body.id);
    }
  }));
  return ids;
}

describe('deliveries yield to requests in flight', () => {
  it('delivers every change of a burst of writes to every Subscription once, after the burst', async () => {
    const client = api.newProject();
    const hook = await receiver();
    const subscriptions = [await subscribe(client, `${hook.url}?n=1`), await subscribe(client, `${hook.url}?n=2`)];
    const ids = await burst(client, 8, 60);

    const received = await hook.waitFor(120);
    const pairs = received.map((r) => `${r.headers['x-medplum-subscription']} ${JSON.parse(r.body).id}`);
    const expected = subscriptions.flatMap((subscription) => ids.map((id) => `${subscription} ${id}`));
    expect(pairs.sort()).toEqual(expected.sort());
    expect(new Set(received.map((r) => r.headers['x-event-id'])).size).toBe(120);
  });

  it('writes an AuditEvent for each delivery of a burst', async () => {
    const client = api.newProject();
    const hook = await receiver();
    const subscription = await subscribe(client, hook.url);
    await burst(client, 8, 40);
    await hook.waitFor(40);

    const total = () => client.get(`/AuditEvent?entity=Subscription/${subscription}&outcome=0&_total=accurate&_count=0`).then((res) => res.body.total);
    expect(await eventually(total, 40, 10_000)).toBe(40);
  });

  it('delivers the write of a quiet server', async () => {
    const client = api.newProject();
    const hook = await receiver();
    await subscribe(client, hook.url);
    const created = await client.post('/Observation', observation);

    const [delivery] = await hook.waitFor(1);
    expect(JSON.parse(delivery.body).id).toBe(created.body.id);
  });

  it('refuses a share outside 1-100 at start, naming the setting', () => {
    for (const value of ['0', '101', 'half']) {
      expect(() => loadConfig(testEnv({ SUBSCRIPTION_BUSY_SHARE_PERCENT: value }))).toThrow(ConfigError);
    }
    expect(() => loadConfig(testEnv({ SUBSCRIPTION_BUSY_SHARE_PERCENT: '101' }))).toThrow(/SUBSCRIPTION_BUSY_SHARE_PERCENT must be an integer from 1 to 100, got "101"/);
  });

  it('refuses a negative SUBSCRIPTION_BUSY_MAX_MS at start, naming the setting', () => {
    expect(() => loadConfig(testEnv({ SUBSCRIPTION_BUSY_MAX_MS: '-1' }))).toThrow(/SUBSCRIPTION_BUSY_MAX_MS must be an integer >= 0, got "-1"/);
  });
});
