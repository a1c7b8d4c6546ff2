import { describe, expect, it } from 'vitest';
import { useOwnOutboxServer } from '../helpers/own-database.js';
import { eventually, type ProjectClient } from '../helpers/server.js';
import { receiversClosedAfterAll } from '../helpers/receiver.js';

/**
 * Criteria of built-in token parameters are tested on the version written, in memory, with the
 * comparison a search makes. One attempt at a time and a receiver that never answers hold the
 * workers back in the second test, so that a create and the update after it are matched together.
 */
const api = await useOwnOutboxServer({ SUBSCRIPTION_CONCURRENCY: '1', SUBSCRIPTION_TIMEOUT_MS: '4000' });
const receiver = receiversClosedAfterAll();

const observation = (coding: Record<string, string>, status = 'final') => ({ resourceType: 'Observation', status, code: { coding: [coding] } });

async function subscribe(client: ProjectClient, endpoint: string, criteria: string): Promise<void> {
  const res = await client.post('/Subscription', { resourceType: 'Subscription', status: 'active', reason: 'test', criteria, channel: { type: 'rest-hook', endpoint, payload: 'application/fhir+json' } });
  expect(res.status, res.text).toBe(201);
}

/** Outbox rows of the project's Observations still waiting (none once each change is matched and delivered). */
function outboxRows(projectId: string): Promise<number> {
  return api.server.services.db
    .query<{ n: number }>(`SELECT count(*)::int AS n FROM "event_outbox" WHERE "projectId" = $1 AND "resourceType" = 'Observation'`, [projectId])
    .then((rows) => rows[0].n);
}

describe('token criteria matched in memory', () => {
  it('match as a search does: system|code, |code, system|, code, alternatives and several parameters', async () => {
    const client = api.newProject();
    const criteria = [
      'Observation?code=http://loinc.org|8867-4',
      'Observation?code=|8867-4',
      'Observation?code=http://loinc.org|',
      'Observation?code=1111-1,8867-4',
      'Observation?code=8867-4&status=preliminary',
      'Observation?code=http://snomed.info/sct|8867-4',
      'Observation?code=8867-4&status=final,amended',
    ];
    const hooks = await Promise.all(criteria.map(() => receiver()));
    for (const [index, item] of criteria.entries()) await subscribe(client, hooks[index].url, item);
    await client.post('/Observation', observation({ system: 'http://loinc.org', code: '8867-4' }));
    await client.post('/Observation', observation({ code: '8867-4' }));
    await client.post('/Observation', observation({ system: 'http://loinc.org', code: '1111-1' }, 'preliminary'));
    expect(await eventually(() => outboxRows(client.projectId), 0, 20_000)).toBe(0);
    expect(hooks.map((hook) => hook.received.length)).toEqual([1, 1, 2, 3, 0, 0, 2]);
  });

  it('test a version replaced before it was matched on its own content', async () => {
    const client = api.newProject();
    const silent = await receiver([0]);
    const hook = await receiver();
    await subscribe(client, silent.url, 'Patient');
    await subscribe(client, hook.url, 'Observation?code=after');
    // The one attempt place is held by a receiver that never answers, and a second attempt waits: nothing more is claimed.
    await client.post('/Patient', { resourceType: 'Patient' });
    await silent.waitFor(1);
    await client.post('/Patient', { resourceType: 'Patient' });
    const created = await client.post('/Observation', observation({ code: 'before' }));
    const updated = await client.put(`/Observation/${created.body.id}`, { ...observation({ code: 'after' }), id: created.body.id });
    expect(updated.status).toBe(200);
    await hook.waitFor(1);
    expect(await eventually(() => outboxRows(client.projectId), 0, 20_000)).toBe(0);
    expect(hook.received.map((r) => r.headers['x-medplum-interaction'])).toEqual(['update']);
  });
});
