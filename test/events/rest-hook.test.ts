import { createHmac } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { useOwnOutboxServer } from '../helpers/own-database.js';
import { eventually, patientBody, type ProjectClient } from '../helpers/server.js';
import { startReceiver, type Receiver } from '../helpers/receiver.js';

const api = await useOwnOutboxServer({ SUBSCRIPTION_RETRY_BASE_MS: '20' });
const receivers: Receiver[] = [];
afterAll(() => Promise.all(receivers.map((r) => r.close())));

async function receiver(statuses?: number[]): Promise<Receiver> {
  const r = await startReceiver(statuses);
  receivers.push(r);
  return r;
}

const observation = (code: string, extra: Record<string, unknown> = {}) => ({
  resourceType: 'Observation',
  status: 'final',
  code: { coding: [{ system: 'http://loinc.org', code }] },
  ...extra,
});

async function subscribe(client: ProjectClient, endpoint: string, extra: Record<string, unknown> = {}) {
  const res = await client.post('/Subscription', {
    resourceType: 'Subscription',
    status: 'active',
    reason: 'test',
    criteria: 'Observation?code=8867-4',
    channel: { type: 'rest-hook', endpoint, payload: 'application/fhir+json' },
    ...extra,
  });
  expect(res.status).toBe(201);
  return res.body;
}

/** Rows of the project's outbox still waiting (none once every change is matched and delivered). */
function outboxRows(projectId: string): Promise<number> {
  return api.server.services.db
    .query<{ n: number }>('SELECT count(*)::int AS n FROM "event_outbox" WHERE "projectId" = $1', [projectId])
    .then((rows) => rows[0].n);
}

describe('rest-hook subscriptions', () => {
  it('stores a requested Subscription as active', async () => {
    const client = api.newProject();
    const created = await subscribe(client, 'https://example.com/hook', { status: 'requested' });
    expect(created.status).toBe('active');
  });

  it('refuses an endpoint that is not an http(s) URL or a Bot', async () => {
    const client = api.newProject();
    const res = await client.post('/Subscription', {
      resourceType: 'Subscription', status: 'active', reason: 'test', criteria: 'Observation', channel: { type: 'rest-hook', endpoint: 'ftp://example.com/x' },
    });
    expect(res.status).toBe(400);
    expect(res.body.issue[0].expression).toEqual(['Subscription.channel.endpoint']);
  });

  it('delivers a matching create with the resource, Medplum headers, channel headers and the HMAC signature', async () => {
    const client = api.newProject();
    const hook = await receiver();
    const subscription = await subscribe(client, hook.url, {
      channel: { type: 'rest-hook', endpoint: hook.url, payload: 'application/fhir+json', header: ['Authorization: Bearer abc'] },
      extension: [{ url: 'https://www.medplum.com/fhir/StructureDefinition/subscription-secret', valueString: 'shh' }],
    });
    const created = await client.post('/Observation', observation('8867-4'));
    const [delivery] = await hook.waitFor(1);
    expect(JSON.parse(delivery.body)).toEqual(created.body);
    expect(delivery.headers['content-type']).toBe('application/fhir+json');
    expect(delivery.headers['x-medplum-subscription']).toBe(subscription.id);
    expect(delivery.headers['x-medplum-interaction']).toBe('create');
    expect(delivery.headers.authorization).toBe('Bearer abc');
    expect(delivery.headers['x-signature']).toBe(createHmac('sha256', 'shh').update(delivery.body).digest('hex'));
    expect(delivery.headers['x-event-id']).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('sends no body when the channel has no payload', async () => {
    const client = api.newProject();
    const hook = await receiver();
    await subscribe(client, hook.url, { channel: { type: 'rest-hook', endpoint: hook.url } });
    await client.post('/Observation', observation('8867-4'));
    const [delivery] = await hook.waitFor(1);
    expect(delivery.body).toBe('');
  });

  it('delivers only changes that match the criteria, chained parameters included', async () => {
    const client = api.newProject();
    const hook = await receiver();
    const smith = await client.post('/Patient', patientBody({ name: [{ family: 'Smith' }] }));
    const jones = await client.post('/Patient', patientBody({ name: [{ family: 'Jones' }] }));
    await subscribe(client, hook.url, { criteria: 'Observation?code=8867-4&subject.name=Smith' });
    await client.post('/Observation', observation('8867-4', { subject: { reference: `Patient/${jones.body.id}` } }));
    await client.post('/Observation', observation('1234-5', { subject: { reference: `Patient/${smith.body.id}` } }));
    const matching = await client.post('/Observation', observation('8867-4', { subject: { reference: `Patient/${smith.body.id}` } }));
    await hook.waitFor(1);
    expect(await eventually(() => outboxRows(client.projectId), 0)).toBe(0);
    expect(hook.received.map((r) => JSON.parse(r.body).id)).toEqual([matching.body.id]);
  });

  it('retries with the same event id until the receiver succeeds, one AuditEvent per attempt', async () => {
    const client = api.newProject();
    const hook = await receiver([500, 503, 200]);
    const subscription = await subscribe(client, hook.url);
    await client.post('/Observation', observation('8867-4'));
    const deliveries = await hook.waitFor(3);
    expect(new Set(deliveries.map((d) => d.headers['x-event-id'])).size).toBe(1);
    const audit = async () => (await client.get(`/AuditEvent?entity=Subscription/${subscription.id}&_count=100`)).body.entry?.length ?? 0;
    expect(await eventually(audit, 3)).toBe(3);
    const events = (await client.get(`/AuditEvent?entity=Subscription/${subscription.id}&_count=100`)).body.entry.map((e: any) => e.resource);
    expect(events.map((e: any) => e.outcome).sort()).toEqual(['0', '4', '4']);
    expect(events.map((e: any) => e.outcomeDesc).sort()).toEqual(['Attempt 1 received status 500', 'Attempt 2 received status 503', 'Attempt 3 received status 200']);
    expect(events[0].period.start <= events[0].period.end).toBe(true);
  });

  it('stops after the max attempts of the Subscription', async () => {
    const client = api.newProject();
    const hook = await receiver([500]);
    await subscribe(client, hook.url, { extension: [{ url: 'https://medplum.com/fhir/StructureDefinition/subscription-max-attempts', valueInteger: 2 }] });
    await client.post('/Observation', observation('8867-4'));
    await hook.waitFor(2);
    expect(await eventually(() => outboxRows(client.projectId), 0)).toBe(0);
    expect(hook.received).toHaveLength(2);
  });

  it('has written the AuditEvent of every attempt by the time the outbox row is gone', async () => {
    const client = api.newProject();
    const hook = await receiver([200]);
    const subscription = await subscribe(client, hook.url);
    await Promise.all([1, 2, 3].map(() => client.post('/Observation', observation('8867-4'))));
    await hook.waitFor(3);
    expect(await eventually(() => outboxRows(client.projectId), 0)).toBe(0);
    const audit = await client.get(`/AuditEvent?entity=Subscription/${subscription.id}&_count=100`);
    expect(audit.body.entry).toHaveLength(3);
  });

  it('writes AuditEvents found by the resource delivered, their outcome and date', async () => {
    const client = api.newProject();
    const hook = await receiver([200]);
    const subscription = await subscribe(client, hook.url);
    const before = new Date(Date.now() - 1000).toISOString();
    const created = await client.post('/Observation', observation('8867-4'));
    await hook.waitFor(1);
    expect(await eventually(() => outboxRows(client.projectId), 0)).toBe(0);
    const found = await client.get(`/AuditEvent?entity=Observation/${created.body.id}&outcome=0&date=ge${encodeURIComponent(before)}`);
    expect(found.status).toBe(200);
    expect(found.body.entry).toHaveLength(1);
    expect(found.body.entry[0].resource.entity[1].what.reference).toBe(`Subscription/${subscription.id}`);
    expect((await client.get(`/AuditEvent?entity=Observation/${created.body.id}&outcome=4`)).body.entry ?? []).toHaveLength(0);
  });

  it('delivers nothing of a transaction Bundle that was rolled back', async () => {
    const client = api.newProject();
    const hook = await receiver();
    await subscribe(client, hook.url);
    const failed = await client.post('/', {
      resourceType: 'Bundle',
      type: 'transaction',
      entry: [
        { resource: observation('8867-4'), request: { method: 'POST', url: 'Observation' } },
        { request: { method: 'DELETE', url: 'Patient/does-not-exist' } },
        { resource: { resourceType: 'Observation', status: 'not-a-status' }, request: { method: 'POST', url: 'Observation' } },
      ],
    });
    expect(failed.status).toBeGreaterThanOrEqual(400);
    expect(await outboxRows(client.projectId)).toBe(0);
    const later = await client.post('/Observation', observation('8867-4'));
    await hook.waitFor(1);
    expect(await eventually(() => outboxRows(client.projectId), 0)).toBe(0);
    expect(hook.received.map((r) => JSON.parse(r.body).id)).toEqual([later.body.id]);
  });

  it('delivers a delete to a Subscription for deletes, with the deleted reference and an empty object', async () => {
    const client = api.newProject();
    const hook = await receiver();
    await subscribe(client, hook.url, { extension: [{ url: 'https://medplum.com/fhir/StructureDefinition/subscription-supported-interaction', valueCode: 'delete' }] });
    const created = await client.post('/Observation', observation('8867-4'));
    expect((await client.delete(`/Observation/${created.body.id}`)).status).toBe(200);
    const [delivery] = await hook.waitFor(1);
    expect(delivery.headers['x-medplum-interaction']).toBe('delete');
    expect(delivery.headers['x-medplum-deleted-resource']).toBe(`Observation/${created.body.id}`);
    expect(delivery.body).toBe('{}');
    expect(await eventually(() => outboxRows(client.projectId), 0)).toBe(0);
    expect(hook.received).toHaveLength(1);
  });

  it('evaluates the FHIRPath criteria with %previous and %current', async () => {
    const client = api.newProject();
    const hook = await receiver();
    await subscribe(client, hook.url, {
      extension: [{ url: 'https://medplum.com/fhir/StructureDefinition/fhir-path-criteria-expression', valueString: "%previous.status = 'preliminary' and %current.status = 'final'" }],
    });
    const created = await client.post('/Observation', observation('8867-4', { status: 'preliminary' }));
    const updated = await client.put(`/Observation/${created.body.id}`, { ...created.body, status: 'final' });
    expect(updated.status).toBe(200);
    const [delivery] = await hook.waitFor(1);
    expect(JSON.parse(delivery.body).meta.versionId).toBe(updated.body.meta.versionId);
    expect(await eventually(() => outboxRows(client.projectId), 0)).toBe(0);
    expect(hook.received).toHaveLength(1);
  });

  it('stops delivering once the Subscription is off', async () => {
    const client = api.newProject();
    const hook = await receiver();
    const subscription = await subscribe(client, hook.url);
    await client.post('/Observation', observation('8867-4'));
    await hook.waitFor(1);
    expect((await client.put(`/Subscription/${subscription.id}`, { ...subscription, status: 'off' })).status).toBe(200);
    await client.post('/Observation', observation('8867-4'));
    expect(await eventually(() => outboxRows(client.projectId), 0)).toBe(0);
    expect(hook.received).toHaveLength(1);
  });

  it('writes no outbox row in a project without an active Subscription', async () => {
    const client = api.newProject();
    await client.post('/Observation', observation('8867-4'));
    expect(await outboxRows(client.projectId)).toBe(0);
  });
});

describe('$resend', () => {
  it('queues the current version again for the matching Subscriptions, as Medplum posts it', async () => {
    const client = api.newProject();
    const hook = await receiver();
    await subscribe(client, hook.url);
    const created = await client.post('/Observation', observation('8867-4'));
    await hook.waitFor(1);
    const res = await client.post(`/Observation/${created.body.id}/$resend`, {});
    expect(res.status).toBe(200);
    expect(res.body.resourceType).toBe('OperationOutcome');
    const deliveries = await hook.waitFor(2);
    expect(JSON.parse(deliveries[1].body)).toEqual(created.body);
    expect(deliveries[1].headers['x-event-id']).not.toBe(deliveries[0].headers['x-event-id']);
  });

  it('resends to the one Subscription named, in a Parameters body', async () => {
    const client = api.newProject();
    const named = await receiver();
    const other = await receiver();
    await client.post('/Observation', observation('8867-4'));
    const subscription = await subscribe(client, named.url);
    await subscribe(client, other.url);
    const created = await client.post('/Observation', observation('1234-5'));
    const res = await client.post(`/Observation/${created.body.id}/$resend`, {
      resourceType: 'Parameters',
      parameter: [{ name: 'subscription', valueString: `Subscription/${subscription.id}` }],
    });
    expect(res.status).toBe(200);
    const [delivery] = await named.waitFor(1);
    expect(JSON.parse(delivery.body).id).toBe(created.body.id);
    expect(await eventually(() => outboxRows(client.projectId), 0)).toBe(0);
    expect(other.received).toHaveLength(0);
  });

  it('answers 404 for a resource of another project', async () => {
    const owner = api.newProject();
    const created = await owner.post('/Observation', observation('8867-4'));
    const res = await api.newProject().post(`/Observation/${created.body.id}/$resend`, {});
    expect(res.status).toBe(404);
  });
});
