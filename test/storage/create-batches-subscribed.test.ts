import { randomUUID } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { createRequestContext } from '../../src/access/context.js';
import { useOwnOutboxServer } from '../helpers/own-database.js';
import { eventually, type ProjectClient } from '../helpers/server.js';
import { startReceiver, type Receiver } from '../helpers/receiver.js';

/**
 * Plain creates in a project with an active Subscription carry their outbox row in their own
 * statement, so they are still written together (src/storage/create-batches.ts), and each is
 * delivered once.
 */

const api = await useOwnOutboxServer({ CREATE_GROUPS_IN_FLIGHT: '1', SUBSCRIPTION_RETRY_BASE_MS: '20' });
const receivers: Receiver[] = [];
afterAll(() => Promise.all(receivers.map((r) => r.close())));
const BURST = 40;

const observation = (code: string) => ({ resourceType: 'Observation', status: 'final', code: { coding: [{ system: 'http://loinc.org', code }] } });

/** A project with a rest-hook Subscription to Observations of a code of its own, and its receiver. */
async function subscribedProject(): Promise<{ client: ProjectClient; hook: Receiver; code: string }> {
  const hook = await startReceiver();
  receivers.push(hook);
  const client = api.newProject();
  const code = randomUUID();
  const res = await client.post('/Subscription', {
    resourceType: 'Subscription', status: 'active', reason: 'test', criteria: `Observation?code=${code}`,
    channel: { type: 'rest-hook', endpoint: hook.url, payload: 'application/fhir+json' },
  });
  expect(res.status).toBe(201);
  return { client, hook, code };
}

async function query(sql: string, projectId: string): Promise<number> {
  return (await api.server.services.db.query<{ n: number }>(sql, [projectId]))[0].n;
}

/** Every change of the project matched and delivered (its outbox empty), then the ids delivered. */
async function deliveredIds(hook: Receiver, projectId: string, count: number): Promise<string[]> {
  await hook.waitFor(count);
  expect(await eventually(() => query('SELECT count(*)::int AS n FROM "event_outbox" WHERE "projectId" = $1', projectId), 0)).toBe(0);
  return hook.received.map((delivery) => JSON.parse(delivery.body).id as string).sort();
}

describe('creates written together in a project with Subscriptions', () => {
  it('writes a burst in fewer commits than creates and delivers each create once', async () => {
    const { client, hook, code } = await subscribedProject();
    const created = await Promise.all(Array.from({ length: BURST }, () => client.post('/Observation', observation(code))));

    expect(created.map((res) => res.status)).toEqual(Array(BURST).fill(201));
    // Rows written by one commit share its transaction id.
    const commits = await query(`SELECT count(DISTINCT xmin::text)::int AS n FROM resource WHERE "projectId" = $1 AND "resourceType" = 'Observation'`, client.projectId);
    expect(commits).toBeLessThan(BURST);
    expect(await deliveredIds(hook, client.projectId, BURST)).toEqual(created.map((res) => res.body.id as string).sort());
  });

  it('fails only the create at fault in a group and delivers the others', async () => {
    const { client, hook, code } = await subscribedProject();
    const repo = createRequestContext(api.server.services, { projectId: client.projectId, superAdmin: false, projectAdmin: true }, randomUUID()).repo;
    const taken = (await repo.createResource('Observation', observation(code))).resource.id!;
    const ids: string[] = Array.from({ length: 10 }, () => randomUUID());
    ids[5] = taken;

    const results = await Promise.allSettled(ids.map((id) => repo.createResource('Observation', observation(code), id)));

    expect(results.map((result) => result.status)).toEqual(ids.map((id) => (id === taken ? 'rejected' : 'fulfilled')));
    expect(await deliveredIds(hook, client.projectId, ids.length)).toEqual([...ids].sort());
    expect(hook.received).toHaveLength(ids.length);
  });

  it('delivers each create of a transaction Bundle written in one statement', async () => {
    const { client, hook, code } = await subscribedProject();
    const entries = Array.from({ length: 5 }, () => ({ resource: observation(code), request: { method: 'POST', url: 'Observation' } }));
    const res = await client.post('/', { resourceType: 'Bundle', type: 'transaction', entry: entries });

    expect(res.status).toBe(200);
    const ids = (res.body.entry as { resource: { id: string } }[]).map((entry) => entry.resource.id);
    expect(await deliveredIds(hook, client.projectId, entries.length)).toEqual([...ids].sort());
  });
});
