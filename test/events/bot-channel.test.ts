import { describe, expect, it } from 'vitest';
import { useOwnOutboxServer } from '../helpers/own-database.js';
import { eventually } from '../helpers/server.js';
import { deployedBot } from '../bots/helpers.js';

const api = await useOwnOutboxServer({ SUBSCRIPTION_RETRY_BASE_MS: '20' });

describe('Subscriptions whose endpoint is a Bot', () => {
  it('run the bot with the resource as input, and record the attempt', async () => {
    const client = api.newProject();
    const botId = await deployedBot(
      client,
      `exports.handler = async (medplum, event) => {
        await medplum.createResource({ resourceType: 'Communication', status: 'completed', payload: [{ contentString: event.input.resourceType + '/' + event.input.id }] });
        return 'ok';
      };`,
    );
    const subscription = await client.post('/Subscription', {
      resourceType: 'Subscription', status: 'active', reason: 'test', criteria: 'Observation?code=8867-4',
      channel: { type: 'rest-hook', endpoint: `Bot/${botId}`, payload: 'application/fhir+json' },
    });
    expect(subscription.status).toBe(201);
    const observation = await client.post('/Observation', { resourceType: 'Observation', status: 'final', code: { coding: [{ system: 'http://loinc.org', code: '8867-4' }] } });
    const written = async () => (await client.get('/Communication')).body.entry?.map((e: any) => e.resource.payload[0].contentString).join() ?? '';
    expect(await eventually(written, `Observation/${observation.body.id}`, 20_000)).toBe(`Observation/${observation.body.id}`);
    const outcomes = async () => (await client.get(`/AuditEvent?entity=Subscription/${subscription.body.id}`)).body.entry?.map((e: any) => e.resource.outcome).join() ?? '';
    expect(await eventually(outcomes, '0', 5_000)).toBe('0');
  });
});
