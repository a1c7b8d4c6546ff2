import { describe, expect, it } from 'vitest';
import { useTestServer } from '../helpers/server.js';
import { deployedBot, diagnostics, execute } from './helpers.js';

const api = await useTestServer();

describe('Bot/$deploy', () => {
  it('stores the code as a Binary that Bot.executableCode references', async () => {
    const client = api.newProject();
    const id = await deployedBot(client, 'exports.handler = async () => "ok";');
    const bot = await client.get(`/Bot/${id}`);
    expect(bot.body.executableCode).toMatchObject({ contentType: 'application/javascript', title: 'index.js' });
    const binary = await client.get(`/${bot.body.executableCode.url}`, { Accept: 'application/fhir+json' });
    expect(Buffer.from(binary.body.data, 'base64').toString()).toBe('exports.handler = async () => "ok";');
  });

  it('takes a Parameters body too, and the latest deployment is the one that runs', async () => {
    const client = api.newProject();
    const id = await deployedBot(client, 'exports.handler = async () => "first";');
    const parameters = { resourceType: 'Parameters', parameter: [{ name: 'code', valueString: 'exports.handler = async () => "second";' }] };
    expect((await client.post(`/Bot/${id}/$deploy`, parameters)).status).toBe(200);
    const answer = await execute(client, id, 'hello', 'text/plain');
    expect(answer.text).toBe('second');
  });

  it('refuses a body without code (400 naming it)', async () => {
    const client = api.newProject();
    const created = await client.post('/Bot', { resourceType: 'Bot', name: 'empty' });
    const answer = await client.post(`/Bot/${created.body.id}/$deploy`, { filename: 'x.js' }, { 'Content-Type': 'application/json' });
    expect(answer.status).toBe(400);
    expect(answer.text).toContain('code');
  });
});

describe('Bot/$execute', () => {
  it('passes a JSON body as event.input and answers the JSON the handler returns', async () => {
    const client = api.newProject();
    const id = await deployedBot(client, 'exports.handler = async (medplum, event) => ({ doubled: event.input.n * 2, type: event.contentType });');
    const answer = await execute(client, id, { n: 21 });
    expect(answer.status).toBe(200);
    expect(answer.headers.get('content-type')).toContain('application/json');
    expect(answer.body).toEqual({ doubled: 42, type: 'application/json' });
  });

  it('runs ES module code and answers text in the request text type', async () => {
    const client = api.newProject();
    const id = await deployedBot(client, 'export async function handler(medplum, event) { return event.input.toUpperCase(); }');
    const answer = await execute(client, id, 'shout', 'text/plain');
    expect(answer.status).toBe(200);
    expect(answer.headers.get('content-type')).toContain('text/plain');
    expect(answer.text).toBe('SHOUT');
  });

  it('gives an HL7 v2 body to the handler as an Hl7Message and answers the message it returns', async () => {
    const client = api.newProject();
    const id = await deployedBot(client, 'exports.handler = async (medplum, event) => event.input.buildAck();');
    const message = 'MSH|^~\\&|LAB|HOSP|EHR|HOSP|20240101||ORU^R01|MSG1|P|2.5\rPID|1||123';
    const answer = await execute(client, id, message, 'x-application/hl7-v2+er7');
    expect(answer.status).toBe(200);
    expect(answer.text).toContain('MSA|AA|MSG1');
  });

  it('takes the query parameters of a GET as input', async () => {
    const client = api.newProject();
    const id = await deployedBot(client, 'exports.handler = async (medplum, event) => event.input;');
    const answer = await client.get(`/Bot/${id}/$execute?name=Ada&city=Paris`);
    expect(answer.status).toBe(200);
    expect(answer.body).toEqual({ name: 'Ada', city: 'Paris' });
  });

  it('finds the bot by identifier (Bot/$execute?identifier=system|value)', async () => {
    const client = api.newProject();
    await deployedBot(client, 'exports.handler = async () => "by identifier";', { identifier: [{ system: 'https://example.org/bots', value: 'router' }] });
    const answer = await client.request('POST', '/Bot/$execute?identifier=https://example.org/bots|router', '{}', { 'Content-Type': 'application/json' });
    expect(answer.status).toBe(200);
    expect(answer.text).toBe('by identifier');
  });

  it('answers a bot error with 400 and the bot message, without a server stack', async () => {
    const client = api.newProject();
    const id = await deployedBot(client, 'exports.handler = async () => { throw new Error("no such lab code"); };');
    const answer = await execute(client, id, {});
    expect(answer.status).toBe(400);
    expect(answer.body.resourceType).toBe('OperationOutcome');
    expect(diagnostics(answer.body)).toContain('no such lab code');
    expect(answer.text).not.toContain('/src/');
  });

  it('answers 400 for a bot that was never deployed', async () => {
    const client = api.newProject();
    const created = await client.post('/Bot', { resourceType: 'Bot', name: 'undeployed' });
    const answer = await execute(client, created.body.id, {});
    expect(answer.status).toBe(400);
    expect(diagnostics(answer.body)).toContain('$deploy');
  });

  it('answers 404 for a Bot of another project', async () => {
    const owner = api.newProject();
    const id = await deployedBot(owner, 'exports.handler = async () => "secret";');
    const answer = await execute(api.newProject(), id, {});
    expect(answer.status).toBe(404);
  });

  it('passes the project secrets as event.secrets', async () => {
    const client = api.newProject();
    await client.token();
    const project = await api.superAdmin.get(`/Project/${client.projectId}`);
    const updated = await api.superAdmin.put(`/Project/${client.projectId}`, { ...project.body, secret: [{ name: 'API_KEY', valueString: 'k-123' }] });
    expect(updated.status, updated.text).toBe(200);
    const id = await deployedBot(client, 'exports.handler = async (medplum, event) => event.secrets.API_KEY.valueString;');
    const answer = await execute(client, id, {});
    expect(answer.text).toBe('k-123');
  });

  it('records an AuditEvent per execution with the bot, the outcome and the period', async () => {
    const client = api.newProject();
    const id = await deployedBot(client, 'exports.handler = async () => { console.log("ran"); return "done"; };');
    await execute(client, id, {});
    const events = await client.get(`/AuditEvent?entity=Bot/${id}`);
    expect(events.body.entry).toHaveLength(1);
    const event = events.body.entry[0].resource;
    expect(event.outcome).toBe('0');
    expect(event.outcomeDesc).toContain('ran');
    expect(event.period.start).toBeDefined();
    expect(event.period.end).toBeDefined();
    expect(event.agent[0].requestor).toBe(true);
  });
});
