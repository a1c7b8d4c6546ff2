import { describe, expect, it } from 'vitest';
import { deployedBot } from '../bots/helpers.js';
import type { ProjectClient } from '../helpers/server.js';
import { useTestServer } from '../helpers/server.js';
import { ASYNC, create, exportDone, exportedLines, idsOf, manifestOf, type Json } from './export-helpers.js';

/**
 * What an export leaves out besides the server's own records: the Binaries holding a Bot's code
 * (they hold the keys a Bot's code calls with, as the Bot does) and a Subscription's
 * `channel.header`, endpoint userinfo and signing secret (the credentials its endpoint is called with).
 */

const api = await useTestServer();

const CODE = 'exports.handler = async () => "API_KEY=not-for-export";';
const SECRET_URL = 'https://www.medplum.com/fhir/StructureDefinition/subscription-secret';
const MAX_ATTEMPTS_URL = 'https://medplum.com/fhir/StructureDefinition/subscription-max-attempts';

async function binary(client: ProjectClient, text: string): Promise<string> {
  const res = await client.request('POST', '/Binary', text, { 'Content-Type': 'text/plain' });
  expect(res.status, res.text).toBe(201);
  return res.body.id;
}

/** The `executableCode` Binary of a deployed Bot. */
async function codeBinary(client: ProjectClient, botId: string): Promise<string> {
  const bot = await client.get(`/Bot/${botId}`);
  return bot.body.executableCode.url.slice('Binary/'.length);
}

async function exportedIds(client: ProjectClient, query = ''): Promise<string[]> {
  const { manifest } = await exportDone(client, query);
  return idsOf(await exportedLines(client, manifest));
}

function subscription(channel: Json, extension?: Json[]): Json {
  return { resourceType: 'Subscription', status: 'off', reason: 'export test', criteria: 'Observation?code=8867-4', channel, ...(extension ? { extension } : {}) };
}

async function exportedSubscriptions(client: ProjectClient, query = ''): Promise<Json[]> {
  const { manifest } = await exportDone(client, query);
  return (await exportedLines(client, manifest)).filter(({ type }) => type === 'Subscription').map(({ resource }) => resource);
}

describe('Bot code Binaries in a bulk export', () => {
  it('a system-level export leaves out the Binary $deploy stored and keeps other Binaries', async () => {
    const p = api.newProject();
    const code = await codeBinary(p, await deployedBot(p, CODE));
    const other = await binary(p, 'a scanned letter');
    const ids = await exportedIds(p);
    expect(ids).toContain(`Binary/${other}`);
    expect(ids).not.toContain(`Binary/${code}`);
  });

  it('leaves out the Binary a Bot names as its sourceCode', async () => {
    const p = api.newProject();
    const source = await binary(p, 'const API_KEY = "not-for-export";');
    await create(p, { resourceType: 'Bot', name: 'with source', sourceCode: { contentType: 'text/typescript', url: `Binary/${source}` } });
    expect(await exportedIds(p, '?_type=Binary')).toEqual([]);
  });

  it('leaves out the code of an earlier deployment of a Bot', async () => {
    const p = api.newProject();
    const botId = await deployedBot(p, CODE);
    const first = await codeBinary(p, botId);
    const again = await p.post(`/Bot/${botId}/$deploy`, { code: `${CODE}\n// v2` }, { 'Content-Type': 'application/json' });
    expect(again.status, again.text).toBe(200);
    expect(await codeBinary(p, botId)).not.toBe(first);
    expect(await exportedIds(p, '?_type=Binary')).toEqual([]);
  });

  /** A Patient, and a DocumentReference of its compartment whose `related` names the Bot's code. */
  async function codeReferencedFromCompartment(p: ProjectClient): Promise<{ patient: string; document: string }> {
    const code = await codeBinary(p, await deployedBot(p, CODE));
    const patient = (await create(p, { resourceType: 'Patient', name: [{ family: 'Referrer' }] })).id;
    const document = (
      await create(p, {
        resourceType: 'DocumentReference',
        status: 'current',
        subject: { reference: `Patient/${patient}` },
        content: [{ attachment: { contentType: 'text/plain', url: 'https://example.org/letter' } }],
        context: { related: [{ reference: `Binary/${code}` }] },
      })
    ).id;
    return { patient, document };
  }

  it('a Patient-level export does not add the code Binary a resource of a compartment references', async () => {
    const p = api.newProject();
    const { patient, document } = await codeReferencedFromCompartment(p);
    const manifest = await manifestOf(p, await p.get('/Patient/$export', ASYNC));
    expect(idsOf(await exportedLines(p, manifest))).toEqual([`DocumentReference/${document}`, `Patient/${patient}`]);
  });

  it('a Group export does not add the code Binary a resource of a member compartment references', async () => {
    const p = api.newProject();
    const { patient, document } = await codeReferencedFromCompartment(p);
    const group = (await create(p, { resourceType: 'Group', type: 'person', actual: true, member: [{ entity: { reference: `Patient/${patient}` } }] })).id;
    const manifest = await manifestOf(p, await p.get(`/Group/${group}/$export`, ASYNC));
    expect(idsOf(await exportedLines(p, manifest))).toEqual([`DocumentReference/${document}`, `Group/${group}`, `Patient/${patient}`]);
  });
});

describe('Subscription credentials in a bulk export', () => {
  it('writes a Subscription without channel.header, marked SUBSETTED', async () => {
    const p = api.newProject();
    const channel = { type: 'rest-hook', endpoint: 'https://example.org/hook', payload: 'application/fhir+json', header: ['Authorization: Bearer not-for-export'] };
    const id = (await create(p, subscription(channel))).id;
    const [exported] = await exportedSubscriptions(p);
    expect(exported.id).toBe(id);
    expect(exported.channel).toEqual({ type: 'rest-hook', endpoint: 'https://example.org/hook', payload: 'application/fhir+json' });
    expect(exported.meta.tag.map((tag: Json) => tag.code)).toEqual(['SUBSETTED']);
  });

  it('leaves out the signing secret extension and keeps the other extensions', async () => {
    const p = api.newProject();
    const extension = [{ url: SECRET_URL, valueString: 'not-for-export' }, { url: MAX_ATTEMPTS_URL, valueInteger: 3 }];
    await create(p, subscription({ type: 'rest-hook', endpoint: 'https://example.org/hook' }, extension));
    const [exported] = await exportedSubscriptions(p);
    expect(exported.extension).toEqual([{ url: MAX_ATTEMPTS_URL, valueInteger: 3 }]);
    expect(JSON.stringify(exported)).not.toContain('not-for-export');
  });

  it('writes channel.endpoint without its user and password, marked SUBSETTED', async () => {
    const p = api.newProject();
    await create(p, subscription({ type: 'rest-hook', endpoint: 'https://hook-user:not-for-export@example.org/hook' }));
    const [exported] = await exportedSubscriptions(p);
    expect(exported.channel).toEqual({ type: 'rest-hook', endpoint: 'https://example.org/hook' });
    expect(JSON.stringify(exported)).not.toContain('not-for-export');
    expect(exported.meta.tag.map((tag: Json) => tag.code)).toEqual(['SUBSETTED']);
  });

  it('writes a Subscription without header nor secret as stored, not marked', async () => {
    const p = api.newProject();
    const stored = await create(p, subscription({ type: 'rest-hook', endpoint: 'https://example.org/hook' }));
    expect(await exportedSubscriptions(p)).toEqual([stored]);
  });

  it('leaves channel.header out when _elements keeps channel', async () => {
    const p = api.newProject();
    await create(p, subscription({ type: 'rest-hook', endpoint: 'https://example.org/hook', header: ['Authorization: Basic bm90LWZvci1leHBvcnQ='] }));
    const [exported] = await exportedSubscriptions(p, '?_elements=Subscription.channel');
    expect(exported.channel).toEqual({ type: 'rest-hook', endpoint: 'https://example.org/hook' });
    expect(exported.meta.tag.filter((tag: Json) => tag.code === 'SUBSETTED')).toHaveLength(1);
  });
});
