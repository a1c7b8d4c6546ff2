import { randomUUID } from 'node:crypto';
import { rm } from 'node:fs/promises';
import { afterAll, describe, expect, it } from 'vitest';
import { newDataDir, projectClient, startServerProcess, startTestServer, superAdminClient, type ProjectClient } from '../helpers/server.js';
import { startReceiver, type Receiver } from '../helpers/receiver.js';

const cleanup: (() => Promise<unknown>)[] = [];
// In reverse order, one at a time: servers stop before their data folders are removed.
afterAll(async () => {
  for (const step of cleanup.reverse()) await step();
});

async function receiver(statuses: number[]): Promise<Receiver> {
  const r = await startReceiver(statuses);
  cleanup.push(() => r.close());
  return r;
}

/** A Subscription for Observations of a code no other test writes. */
async function subscribe(client: ProjectClient, endpoint: string, code: string): Promise<void> {
  const res = await client.post('/Subscription', {
    resourceType: 'Subscription', status: 'active', reason: 'test', criteria: `Observation?code=${code}`,
    channel: { type: 'rest-hook', endpoint, payload: 'application/fhir+json' },
  });
  expect(res.status).toBe(201);
}

const observation = (code: string) => ({ resourceType: 'Observation', status: 'final', code: { coding: [{ system: 'http://loinc.org', code }] } });

describe('deliveries that outlive their server', () => {
  it('delivers after a restart what a killed server had committed but not delivered', async () => {
    const dataDir = process.env.DATABASE_URL ? undefined : await newDataDir();
    if (dataDir) cleanup.push(() => rm(dataDir, { recursive: true, force: true }));
    const env = { ...(dataDir ? { DATA_DIR: dataDir } : {}), SUBSCRIPTION_TIMEOUT_MS: '500', SUBSCRIPTION_RETRY_BASE_MS: '20', SUBSCRIPTION_POLL_MS: '100' };
    // The first request is never answered: the first server is killed while it waits.
    const hook = await receiver([0, 200]);
    const code = randomUUID();
    const first = await startServerProcess(env);
    const firstExited = new Promise((resolve) => first.child.once('exit', resolve));
    cleanup.push(async () => first.child.kill('SIGKILL'));
    const client = superAdminClient(first.url);
    await subscribe(client, hook.url, code);
    expect((await client.post('/Observation', observation(code))).status).toBe(201);
    const [inFlight] = await hook.waitFor(1);
    first.child.kill('SIGKILL');
    await firstExited;

    // Stopped at the end of this test: its short lease (SUBSCRIPTION_TIMEOUT_MS) must not take
    // rows of the next test's servers on a shared database.
    const second = await startServerProcess(env);
    try {
      const deliveries = await hook.waitFor(2);
      expect(deliveries[1].headers['x-event-id']).toBe(inFlight.headers['x-event-id']);
      expect(JSON.parse(deliveries[1].body).code.coding[0].code).toBe(code);
    } finally {
      // Waited for: a server still writing its embedded database would race the folder's removal.
      const exited = second.child.exitCode === null ? new Promise((resolve) => second.child.once('exit', resolve)) : undefined;
      second.child.kill('SIGTERM');
      await exited;
    }
  }, 240_000);

  it.skipIf(!process.env.DATABASE_URL)('delivers each event once when two servers share the database', async () => {
    const env = { SUBSCRIPTION_POLL_MS: '50', SUBSCRIPTION_RETRY_BASE_MS: '20' };
    const [one, two] = await Promise.all([startTestServer(env), startTestServer(env)]);
    cleanup.push(() => one.server.close(), () => two.server.close());
    const hook = await receiver([200]);
    const code = randomUUID();
    const client = one.newProject();
    await subscribe(client, hook.url, code);
    // The same project's client, through the second server (the servers share keys and tokens).
    const viaTwo = projectClient(two.fhir, client.projectId, () => client.token());
    const writes = Array.from({ length: 20 }, (_, i) => (i % 2 === 0 ? client : viaTwo).post('/Observation', observation(code)));
    expect((await Promise.all(writes)).map((w) => w.status)).toEqual(Array(20).fill(201));
    await hook.waitFor(20);
    const drained = async () => (await one.server.services.db.query<{ n: number }>('SELECT count(*)::int AS n FROM "event_outbox" WHERE "projectId" = $1', [client.projectId]))[0].n;
    while ((await drained()) > 0) await new Promise((resolve) => setTimeout(resolve, 50));
    expect(hook.received).toHaveLength(20);
    expect(new Set(hook.received.map((r) => r.headers['x-event-id'])).size).toBe(20);
  }, 120_000);
});
