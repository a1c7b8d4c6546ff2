import { describe, expect, it } from 'vitest';
import { useTestServer, type ProjectClient } from '../helpers/server.js';
import { deployedBot } from './helpers.js';

const api = await useTestServer();

const IMPLEMENTATION = 'https://medplum.com/fhir/StructureDefinition/operationDefinition-implementation';

/** Stores an OperationDefinition `$code` on Patient (type and instance levels) implemented by `botId`. */
async function storeDefinition(client: ProjectClient, code: string, botId: string, affectsState = false): Promise<void> {
  const stored = await client.post('/OperationDefinition', {
    resourceType: 'OperationDefinition',
    extension: [{ url: IMPLEMENTATION, valueReference: { reference: `Bot/${botId}` } }],
    name: code,
    status: 'active',
    kind: 'operation',
    code,
    resource: ['Patient'],
    system: false,
    type: true,
    instance: true,
    affectsState,
    parameter: [
      { use: 'in', name: 'greeting', min: 1, max: '1', type: 'string' },
      { use: 'out', name: 'message', min: 1, max: '1', type: 'string' },
    ],
  });
  expect(stored.status, stored.text).toBe(201);
}

const GREETER = 'exports.handler = async (medplum, event) => ({ message: event.input.greeting + " from " + (event.input.id ?? "the type") });';

describe('custom operations implemented by bots', () => {
  it('runs the bot with the decoded parameters and answers its output as Parameters', async () => {
    const client = api.newProject();
    await storeDefinition(client, 'greet', await deployedBot(client, GREETER));
    const answer = await client.post('/Patient/$greet', { resourceType: 'Parameters', parameter: [{ name: 'greeting', valueString: 'hello' }] });
    expect(answer.status, answer.text).toBe(200);
    expect(answer.body).toEqual({ resourceType: 'Parameters', parameter: [{ name: 'message', valueString: 'hello from the type' }] });
  });

  it('passes the instance id at instance level, and takes GET when the operation changes nothing', async () => {
    const client = api.newProject();
    await storeDefinition(client, 'greet', await deployedBot(client, GREETER));
    const answer = await client.get('/Patient/p-1/$greet?greeting=hi');
    expect(answer.status, answer.text).toBe(200);
    expect(answer.body.parameter[0].valueString).toBe('hi from p-1');
  });

  it('checks the input against the stored definition before the bot runs', async () => {
    const client = api.newProject();
    await storeDefinition(client, 'greet', await deployedBot(client, GREETER));
    const answer = await client.post('/Patient/$greet', { resourceType: 'Parameters', parameter: [] });
    expect(answer.status).toBe(400);
    expect(answer.text).toContain('greeting');
  });

  it('refuses GET for an operation that changes data', async () => {
    const client = api.newProject();
    await storeDefinition(client, 'stamp', await deployedBot(client, GREETER), true);
    expect((await client.get('/Patient/$stamp?greeting=x')).status).toBe(405);
  });

  it('is 404 in other projects', async () => {
    const owner = api.newProject();
    await storeDefinition(owner, 'greet', await deployedBot(owner, GREETER));
    const answer = await api.newProject().post('/Patient/$greet', { resourceType: 'Parameters', parameter: [{ name: 'greeting', valueString: 'hello' }] });
    expect(answer.status).toBe(404);
  });
});
