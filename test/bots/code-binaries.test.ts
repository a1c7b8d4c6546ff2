import { describe, expect, it } from 'vitest';
import { addMemberClient } from '../auth/helpers.js';
import { projectClient, useTestServer, type ProjectClient } from '../helpers/server.js';
import { deployedBot } from './helpers.js';

/**
 * The Binaries that hold a Bot's code (what any version of a Bot names as `executableCode` or
 * `sourceCode`) are seen by project admins and super admins only: to a member allowed to read
 * Binaries they do not exist (404), on every path that shows a resource. Bot code often holds the
 * keys of the systems it calls.
 */

const api = await useTestServer();

const CODE = 'exports.handler = async () => "API_KEY=members-must-not-read-this";';
const FHIR_JSON = { Accept: 'application/fhir+json' };

type Json = Record<string, any>;

interface Setup {
  admin: ProjectClient;
  member: ProjectClient;
  memberToken: string;
  botId: string;
  /** The id of the Binary $deploy stored. */
  code: string;
  /** A Binary that is no Bot's code. */
  other: string;
}

async function binary(client: ProjectClient, text: string): Promise<string> {
  const res = await client.request('POST', '/Binary', text, { 'Content-Type': 'text/plain' });
  expect(res.status, res.text).toBe(201);
  return res.body.id;
}

/** A project with a deployed Bot, a Binary of its own, and a member without an AccessPolicy (every type but the admin ones). */
async function setup(): Promise<Setup> {
  const admin = api.newProject();
  const botId = await deployedBot(admin, CODE);
  const bot = await admin.get(`/Bot/${botId}`);
  const code = bot.body.executableCode.url.slice('Binary/'.length);
  const other = await binary(admin, 'a scanned letter');
  const { token } = await addMemberClient(api, admin);
  return { admin, member: projectClient(api.fhir, admin.projectId, async () => token), memberToken: token, botId, code, other };
}

async function create(client: ProjectClient, resource: Json): Promise<Json> {
  const res = await client.post(`/${resource.resourceType}`, resource);
  expect(res.status, res.text).toBe(201);
  return res.body;
}

function entryIds(bundle: Json): string[] {
  return (bundle.entry ?? []).map((entry: Json) => `${entry.resource.resourceType}/${entry.resource.id}`);
}

async function graphql(token: string, query: string): Promise<Json> {
  const res = await api.raw('/graphql', {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${token}` },
    body: JSON.stringify({ query }),
  });
  return res.json();
}

describe('a Bot code Binary read by id', () => {
  it('is 404 not-found to a member', async () => {
    const s = await setup();
    const res = await s.member.get(`/Binary/${s.code}`, FHIR_JSON);
    expect(res.status).toBe(404);
    expect(res.body.issue[0].code).toBe('not-found');
  });

  it('is 404 to a member as raw bytes too', async () => {
    const s = await setup();
    const res = await s.member.get(`/Binary/${s.code}`, { Accept: 'application/octet-stream' });
    expect(res.status).toBe(404);
    expect(res.text).not.toContain('members-must-not-read-this');
  });

  it('is read by a member when it is no Bot code', async () => {
    const s = await setup();
    expect((await s.member.get(`/Binary/${s.other}`, FHIR_JSON)).status).toBe(200);
  });

  it('is read by the project admin', async () => {
    const s = await setup();
    const res = await s.admin.get(`/Binary/${s.code}`, { Accept: 'application/javascript' });
    expect(res.status).toBe(200);
    expect(res.text).toContain('members-must-not-read-this');
  });

  it('is read by a super admin', async () => {
    const s = await setup();
    expect((await api.superAdmin.get(`/Binary/${s.code}`, FHIR_JSON)).status).toBe(200);
  });

  it('is 404 to a member by vread', async () => {
    const s = await setup();
    const versionId = (await s.admin.get(`/Binary/${s.code}`, FHIR_JSON)).body.meta.versionId;
    expect((await s.member.get(`/Binary/${s.code}/_history/${versionId}`, FHIR_JSON)).status).toBe(404);
  });

  it('is 404 to a member when named as sourceCode', async () => {
    const s = await setup();
    const source = await binary(s.admin, 'const API_KEY = "members-must-not-read-this";');
    await create(s.admin, { resourceType: 'Bot', name: 'with source', sourceCode: { contentType: 'text/typescript', url: `Binary/${source}` } });
    expect((await s.member.get(`/Binary/${source}`, FHIR_JSON)).status).toBe(404);
  });

  it("is 404 to a member for an earlier deployment's code", async () => {
    const s = await setup();
    const again = await s.admin.post(`/Bot/${s.botId}/$deploy`, { code: `${CODE}\n// v2` }, { 'Content-Type': 'application/json' });
    expect(again.status, again.text).toBe(200);
    expect((await s.member.get(`/Binary/${s.code}`, FHIR_JSON)).status).toBe(404);
  });
});

describe('a Bot code Binary in history', () => {
  it('is 404 to a member by instance history', async () => {
    const s = await setup();
    expect((await s.member.get(`/Binary/${s.code}/_history`)).status).toBe(404);
  });

  it('is left out of the type history a member reads', async () => {
    const s = await setup();
    const res = await s.member.get('/Binary/_history');
    expect(res.status).toBe(200);
    expect(entryIds(res.body)).toEqual([`Binary/${s.other}`]);
  });

  it('is left out of the system history a member reads', async () => {
    const s = await setup();
    const res = await s.member.get('/_history?_count=100');
    expect(res.status).toBe(200);
    expect(entryIds(res.body)).toContain(`Binary/${s.other}`);
    expect(entryIds(res.body)).not.toContain(`Binary/${s.code}`);
  });
});

describe('a Bot code Binary in searches', () => {
  it('is left out of a member’s search of Binaries', async () => {
    const s = await setup();
    const res = await s.member.get('/Binary');
    expect(res.status).toBe(200);
    expect(entryIds(res.body)).toEqual([`Binary/${s.other}`]);
  });

  it('is not found by its _id', async () => {
    const s = await setup();
    expect(entryIds((await s.member.get(`/Binary?_id=${s.code}`)).body)).toEqual([]);
  });

  it('is found by the project admin', async () => {
    const s = await setup();
    expect(entryIds((await s.admin.get(`/Binary?_id=${s.code}`)).body)).toEqual([`Binary/${s.code}`]);
  });

  it('is left out of the resources a member’s _include adds', async () => {
    const s = await setup();
    const provenance = await create(s.admin, {
      resourceType: 'Provenance',
      target: [{ reference: `Binary/${s.code}` }, { reference: `Binary/${s.other}` }],
      recorded: new Date().toISOString(),
      agent: [{ who: { display: 'deployer' } }],
    });
    const res = await s.member.get(`/Provenance?_id=${provenance.id}&_include=Provenance:target`);
    expect(res.status).toBe(200);
    expect(entryIds(res.body)).toEqual([`Provenance/${provenance.id}`, `Binary/${s.other}`]);
  });
});

describe('a Bot code Binary through GraphQL, Bundles and $everything', () => {
  it('is not found by a member’s GraphQL read', async () => {
    const s = await setup();
    const answer = await graphql(s.memberToken, `{ Binary(id: "${s.code}") { id } }`);
    expect(answer.data?.Binary ?? null).toBeNull();
    expect(answer.errors[0].extensions.resource.issue[0].code).toBe('not-found');
  });

  it('is left out of a member’s GraphQL list', async () => {
    const s = await setup();
    const answer = await graphql(s.memberToken, '{ BinaryList { id } }');
    expect(answer.data.BinaryList).toEqual([{ id: s.other }]);
  });

  it('is an unresolved reference in a member’s GraphQL answer', async () => {
    const s = await setup();
    const provenance = await create(s.admin, { resourceType: 'Provenance', target: [{ reference: `Binary/${s.code}` }], recorded: new Date().toISOString(), agent: [{ who: { display: 'x' } }] });
    const answer = await graphql(s.memberToken, `{ Provenance(id: "${provenance.id}") { target { reference resource { ... on Binary { id } } } } }`);
    expect(answer.data.Provenance.target).toEqual([{ reference: `Binary/${s.code}`, resource: null }]);
  });

  it('is 404 in a member’s batch entry', async () => {
    const s = await setup();
    const res = await s.member.post('', { resourceType: 'Bundle', type: 'batch', entry: [{ request: { method: 'GET', url: `Binary/${s.code}` } }, { request: { method: 'GET', url: `Binary/${s.other}` } }] });
    expect(res.status, res.text).toBe(200);
    expect(res.body.entry.map((entry: Json) => entry.response.status)).toEqual(['404 Not Found', '200 OK']);
  });

  it('is left out of a member’s Patient/$everything where a record references it', async () => {
    const s = await setup();
    const patient = await create(s.admin, { resourceType: 'Patient', name: [{ family: 'Referrer' }] });
    await create(s.admin, {
      resourceType: 'DocumentReference',
      status: 'current',
      subject: { reference: `Patient/${patient.id}` },
      content: [{ attachment: { contentType: 'text/plain', url: 'https://example.org/letter' } }],
      context: { related: [{ reference: `Binary/${s.code}` }, { reference: `Binary/${s.other}` }] },
    });
    const ids = entryIds((await s.member.get(`/Patient/${patient.id}/$everything`)).body);
    expect(ids).toContain(`Binary/${s.other}`);
    expect(ids).not.toContain(`Binary/${s.code}`);
  });
});

describe('a Bot code Binary written by a member', () => {
  it('is 404 to a member’s PUT, and the Bot keeps its code', async () => {
    const s = await setup();
    const res = await s.member.request('PUT', `/Binary/${s.code}`, 'exports.handler = async (m, e) => e.secrets;', { 'Content-Type': 'application/javascript' });
    expect(res.status).toBe(404);
    expect((await s.admin.get(`/Binary/${s.code}`, { Accept: 'application/javascript' })).text).toContain('members-must-not-read-this');
  });

  it('is 404 to a member’s DELETE', async () => {
    const s = await setup();
    expect((await s.member.delete(`/Binary/${s.code}`)).status).toBe(404);
    expect((await s.admin.get(`/Binary/${s.code}`, FHIR_JSON)).status).toBe(200);
  });
});
