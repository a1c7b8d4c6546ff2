import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { receiversClosedAfterAll } from '../helpers/receiver.js';
import { useTestServer } from '../helpers/server.js';

/**
 * A Subscription the super admin wrote in another project acts as the super admin's own
 * membership, and gets everything.
 */
const api = await useTestServer();
const receiver = receiversClosedAfterAll();

describe('a Subscription the super admin took on', () => {
  it('delivers everything, its author being the super admin', async () => {
    const admin = api.newProject();
    const code = randomUUID();
    const hook = await receiver();
    const created = await admin.post('/Subscription', {
      resourceType: 'Subscription', status: 'active', reason: 'test', criteria: `Observation?code=${code}`, channel: { type: 'rest-hook', endpoint: hook.url, payload: 'application/fhir+json' },
    });
    expect(created.status).toBe(201);
    const taken = await api.superAdmin.put(`/Subscription/${created.body.id}`, { ...created.body, reason: 'taken on' });
    expect(taken.status).toBe(200);
    expect(taken.body.meta.author.reference).not.toBe(created.body.meta.author.reference);
    const observation = await admin.post('/Observation', { resourceType: 'Observation', status: 'preliminary', code: { coding: [{ system: 'http://loinc.org', code }] } });
    const [delivery] = await hook.waitFor(1);
    expect(JSON.parse(delivery.body).id).toBe(observation.body.id);
  });
});
