import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { clientCredentialsToken, lazyToken, nicknameSearchParameter, patientBody, projectClient, useTestServer } from '../helpers/server.js';
import { addMemberClient } from '../auth/helpers.js';
import { out, params as terminologyParams, SYSTEM, withAnimals, withValueSet } from '../terminology/fixtures.js';

const api = await useTestServer();

const params = (values: Record<string, string | string[]>) => {
  const parameter = Object.entries(values).flatMap(([name, value]) => (Array.isArray(value) ? value : [value]).map((v) => ({ name, valueString: v })));
  return parameter.length > 0 ? { resourceType: 'Parameters', parameter } : { resourceType: 'Parameters' };
};
/** This server's FHIR base as it names itself (BASE_URL), as in absolute references. */
const fhirBase = api.server.services.config.fhirBaseUrl;

async function contentsOf(projectId: string) {
  const rows = await api.server.services.db.query<{ resourceType: string; content: string }>(
    `SELECT "resourceType", content::text AS content FROM resource WHERE "projectId" = $1 AND NOT deleted`,
    [projectId],
  );
  return rows.map((row) => JSON.parse(row.content));
}

async function sourceProject() {
  const admin = api.newProject();
  const patient = await admin.post('/Patient', patientBody());
  const observation = await admin.post('/Observation', {
    resourceType: 'Observation',
    status: 'final',
    code: { text: 'weight' },
    subject: { reference: `Patient/${patient.body.id}` },
  });
  const binary = await admin.request('POST', '/Binary', new Uint8Array([1, 2, 3, 4]), { 'Content-Type': 'application/octet-stream' });
  const document = await admin.post('/DocumentReference', {
    resourceType: 'DocumentReference',
    status: 'current',
    subject: { reference: `${fhirBase}/Patient/${patient.body.id}` },
    content: [{ attachment: { contentType: 'application/octet-stream', url: `Binary/${binary.body.id}` } }],
  });
  const audit = await admin.post('/AuditEvent', {
    resourceType: 'AuditEvent',
    type: { code: 'rest' },
    recorded: new Date().toISOString(),
    agent: [{ requestor: true }],
    source: { observer: { display: 'x' } },
  });
  expect([patient.status, observation.status, binary.status, document.status, audit.status]).toEqual([201, 201, 201, 201, 201]);
  return { admin, patient: patient.body, observation: observation.body, binary: binary.body, document: document.body };
}

const clone = async (token: string, projectId: string, body: unknown) => {
  const res = await api.raw(`/fhir/R4/Project/${projectId}/$clone`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/fhir+json' },
    body: JSON.stringify(body),
  });
  return { status: res.status, body: await res.json() };
};

describe('Project/$clone', () => {
  it('is for super admins only (403), and 404 for an unknown project', async () => {
    const { admin } = await sourceProject();
    const denied = await clone(await admin.token(), admin.projectId, params({}));
    expect(denied.status).toBe(403);
    expect(denied.body.issue[0].code).toBe('forbidden');
    const missing = await clone(await api.superAdmin.token(), 'no-such-project', params({}));
    expect(missing.status).toBe(404);
  });

  it('copies every resource with new ids and rewritten references, bytes included, and renames', async () => {
    const source = await sourceProject();
    const res = await clone(await api.superAdmin.token(), source.admin.projectId, params({ name: 'Copy' }));
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ resourceType: 'Project', name: 'Copy', strictMode: true });
    const newId = res.body.id;
    expect(newId).not.toBe(source.admin.projectId);
    const cloned = await contentsOf(newId);
    const byType = (type: string) => cloned.filter((r) => r.resourceType === type);
    expect(byType('Login')).toEqual([]);
    expect(byType('AuditEvent')).toEqual([]);
    const [patient] = byType('Patient');
    expect(patient.id).not.toBe(source.patient.id);
    expect(patient.meta.project).toBe(newId);
    expect(byType('Observation')[0].subject.reference).toBe(`Patient/${patient.id}`);
    const [binary] = byType('Binary');
    const [document] = byType('DocumentReference');
    expect(document.subject.reference).toBe(`${fhirBase}/Patient/${patient.id}`);
    expect(document.content[0].attachment.url).toBe(`Binary/${binary.id}`);
    const bytes = await api.raw(`/fhir/R4/Binary/${binary.id}`, { headers: await api.superAdmin.authHeaders() });
    expect(new Uint8Array(await bytes.arrayBuffer())).toEqual(new Uint8Array([1, 2, 3, 4]));
    expect(byType('ClientApplication')[0].name).toBe('Copy Default Client');
    for (const membership of byType('ProjectMembership')) {
      expect(membership.project.display).toBe('Copy');
      expect(membership.profile.reference).toMatch(new RegExp(`/(${cloned.map((r) => r.id).join('|')})$`));
    }
    // The source is untouched.
    expect((await source.admin.get(`/Patient/${source.patient.id}`)).body).toEqual(source.patient);
  });

  it('filters by resourceTypes, includeIds and excludeIds (excluded wins)', async () => {
    const source = await sourceProject();
    const token = await api.superAdmin.token();
    const onlyPatients = await clone(token, source.admin.projectId, params({ resourceTypes: ['Patient'] }));
    expect((await contentsOf(onlyPatients.body.id)).map((r) => r.resourceType).sort()).toEqual(['Patient', 'Project']);
    const both = await clone(
      token,
      source.admin.projectId,
      params({ includeIds: [source.patient.id, source.observation.id], excludeIds: [source.patient.id] }),
    );
    const kept = await contentsOf(both.body.id);
    expect(kept.map((r) => r.resourceType).sort()).toEqual(['Observation', 'Project']);
    // A reference to a resource that was not cloned is left as it was.
    expect(kept.find((r) => r.resourceType === 'Observation').subject.reference).toBe(`Patient/${source.patient.id}`);
  });

  it('gives cloned client applications new secrets their admins can use', async () => {
    const admin = api.newProject();
    const member = await addMemberClient(api, admin, { admin: true });
    const res = await clone(await api.superAdmin.token(), admin.projectId, params({}));
    const clients = (await contentsOf(res.body.id)).filter((r) => r.resourceType === 'ClientApplication');
    const copy = clients.find((c) => c.name === 'member app');
    const read = await api.raw(`/fhir/R4/ClientApplication/${copy.id}`, { headers: await api.superAdmin.authHeaders() });
    const { secret } = await read.json();
    expect(secret).toBeTruthy();
    expect(secret).not.toBe(member.secret);
    const token = await api.raw('/oauth2/token', {
      method: 'POST',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ grant_type: 'client_credentials', client_id: copy.id, client_secret: secret }),
    });
    expect(token.status).toBe(200);
    expect((await token.json()).project.reference).toBe(`Project/${res.body.id}`);
  });

  it('keeps externalId and User email unique: the clone memberships lose externalId and keep the same User', async () => {
    const admin = api.newProject();
    const externalId = `idp|${randomUUID()}`;
    const email = `${randomUUID()}@example.org`;
    const invited = await api.raw(`/admin/projects/${admin.projectId}/invite`, {
      method: 'POST',
      headers: { ...(await admin.authHeaders()), 'Content-Type': 'application/json' },
      body: JSON.stringify({ resourceType: 'Practitioner', firstName: 'Ida', lastName: 'Ext', externalId, email }),
    });
    expect(invited.status).toBe(201);
    const source = await invited.json();
    const res = await clone(await api.superAdmin.token(), admin.projectId, params({ name: 'Copy' }));
    expect(res.status).toBe(201);
    const cloned = await contentsOf(res.body.id);
    expect(cloned.filter((r) => r.resourceType === 'User')).toEqual([]);
    const copy = cloned.find((r) => r.resourceType === 'ProjectMembership' && r.user?.reference === source.user.reference);
    expect(copy).toBeDefined();
    expect(copy.externalId).toBeUndefined();
    expect(copy.profile.reference).not.toBe(source.profile.reference);
    // External sign-in by this sub still finds exactly the source membership.
    const withId = await api.raw(`/fhir/R4/ProjectMembership?external-id=${encodeURIComponent(externalId)}`, { headers: await api.superAdmin.authHeaders() });
    expect(((await withId.json()).entry ?? []).map((e: any) => e.resource.id)).toEqual([source.id]);
    const users = await api.raw(`/fhir/R4/User?email=${encodeURIComponent(email)}`, { headers: await api.superAdmin.authHeaders() });
    expect((await users.json()).entry).toHaveLength(1);
  });
});

describe('Project/$clone with a plain JSON body (SPEC 4.7)', () => {
  const plainClone = async (token: string, projectId: string, body: unknown) => {
    const res = await api.raw(`/fhir/R4/Project/${projectId}/$clone`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' },
      body: JSON.stringify(body),
    });
    return { status: res.status, body: await res.json() };
  };

  it('clones with name and resourceTypes given as plain JSON', async () => {
    const source = await sourceProject();
    const res = await plainClone(await api.superAdmin.token(), source.admin.projectId, { name: 'Plain copy', resourceTypes: ['Patient'] });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ resourceType: 'Project', name: 'Plain copy' });
  });

  it('names an unknown key with 400 invalid', async () => {
    const source = await sourceProject();
    const res = await plainClone(await api.superAdmin.token(), source.admin.projectId, { colour: 'blue' });
    expect(res.status).toBe(400);
    expect(res.body.issue[0]).toMatchObject({ code: 'invalid', expression: ['colour'] });
  });

  it('refuses a non-super-admin with 403 before looking at the body', async () => {
    const source = await sourceProject();
    const res = await plainClone(await source.admin.token(), source.admin.projectId, { colour: 'blue' });
    expect(res.status).toBe(403);
  });
});

describe('Project/$clone of terminology resources', () => {
  const VS = 'http://flint.test/ValueSet/mammals';
  const MAP = 'http://flint.test/ConceptMap/animals-to-latin';
  const LATIN = 'http://flint.test/CodeSystem/latin';

  /** A client of the cloned project, as its (cloned, admin) default ClientApplication. */
  async function clientOfClone(projectId: string) {
    const clients = (await contentsOf(projectId)).filter((r) => r.resourceType === 'ClientApplication');
    expect(clients).toHaveLength(1);
    const read = await api.raw(`/fhir/R4/ClientApplication/${clients[0].id}`, { headers: await api.superAdmin.authHeaders() });
    const { secret } = await read.json();
    return projectClient(api.fhir, projectId, lazyToken(() => clientCredentialsToken(api.url, clients[0].id, secret)));
  }

  it('indexes cloned CodeSystems (imported concepts included) for $lookup, $subsumes, $validate-code and $translate', async () => {
    const source = api.newProject();
    const codeSystemId = await withAnimals(source);
    // A concept that exists only in the concept tables (CodeSystem/$import), not in the resource.
    const imported = await source.post(
      '/CodeSystem/$import',
      terminologyParams(
        { name: 'system', valueUri: SYSTEM },
        { name: 'concept', valueCoding: { code: 'wolf', display: 'Wolf' } },
        { name: 'property', part: [{ name: 'code', valueCode: 'wolf' }, { name: 'property', valueCode: 'parent' }, { name: 'value', valueCode: 'mammal' }] },
      ),
    );
    expect(imported.status).toBe(200);
    await withValueSet(source, VS, { include: [{ system: SYSTEM, filter: [{ property: 'concept', op: 'is-a', value: 'mammal' }] }] });
    const map = await source.post('/ConceptMap', {
      resourceType: 'ConceptMap',
      url: MAP,
      status: 'active',
      group: [{ source: SYSTEM, target: LATIN, element: [{ code: 'dog', target: [{ code: 'canis', equivalence: 'equivalent' }] }] }],
    });
    expect(map.status).toBe(201);
    const res = await clone(await api.superAdmin.token(), source.projectId, params({ name: 'Terminology copy' }));
    expect(res.status).toBe(201);
    const copy = await clientOfClone(res.body.id);
    const [clonedCodeSystem] = (await contentsOf(res.body.id)).filter((r) => r.resourceType === 'CodeSystem');
    expect(clonedCodeSystem.id).not.toBe(codeSystemId);
    // The clone's index stands on its own: deleting the source CodeSystem (and its index) changes nothing.
    expect((await source.delete(`/CodeSystem/${codeSystemId}`)).status).toBeLessThan(300);
    expect((await source.get(`/CodeSystem/$lookup?system=${encodeURIComponent(SYSTEM)}&code=dog`)).status).toBe(404);

    const dog = await copy.get(`/CodeSystem/$lookup?system=${encodeURIComponent(SYSTEM)}&code=dog`);
    expect(dog.status, dog.text).toBe(200);
    expect(out(dog.body, 'display')).toEqual([{ name: 'display', valueString: 'Dog' }]);
    expect(out(dog.body, 'name')).toEqual([{ name: 'name', valueString: 'Animals and plants' }]);
    expect(out(dog.body, 'designation')).toHaveLength(1);
    const wolf = await copy.get(`/CodeSystem/${clonedCodeSystem.id}/$lookup?code=wolf`);
    expect(wolf.status, wolf.text).toBe(200);
    expect(out(wolf.body, 'display')).toEqual([{ name: 'display', valueString: 'Wolf' }]);
    const subsumes = await copy.get(`/CodeSystem/$subsumes?system=${encodeURIComponent(SYSTEM)}&codeA=animal&codeB=wolf`);
    expect(out(subsumes.body, 'outcome')).toEqual([{ name: 'outcome', valueCode: 'subsumes' }]);
    const member = await copy.get(`/ValueSet/$validate-code?url=${encodeURIComponent(VS)}&system=${encodeURIComponent(SYSTEM)}&code=wolf`);
    expect(out(member.body, 'result')).toEqual([{ name: 'result', valueBoolean: true }]);
    const outside = await copy.get(`/ValueSet/$validate-code?url=${encodeURIComponent(VS)}&system=${encodeURIComponent(SYSTEM)}&code=tree`);
    expect(out(outside.body, 'result')).toEqual([{ name: 'result', valueBoolean: false }]);
    const translated = await copy.get(`/ConceptMap/$translate?url=${encodeURIComponent(MAP)}&system=${encodeURIComponent(SYSTEM)}&code=dog`);
    expect(out(translated.body, 'result')).toEqual([{ name: 'result', valueBoolean: true }]);
    expect(out(translated.body, 'match')[0].part[1].valueCoding).toMatchObject({ system: LATIN, code: 'canis' });
    const unknown = await copy.get(`/CodeSystem/$lookup?system=${encodeURIComponent(SYSTEM)}&code=unicorn`);
    expect(unknown.status).toBe(404);
  });

  it("indexes the cloned resources by the project's own SearchParameters", async () => {
    const source = api.newProject();
    const parameter = await source.post('/SearchParameter', nicknameSearchParameter());
    expect(parameter.status).toBe(201);
    expect((await source.post('/Patient', { resourceType: 'Patient', name: [{ use: 'nickname', given: ['Ace'] }] })).status).toBe(201);
    const res = await clone(await api.superAdmin.token(), source.projectId, params({ name: 'Parameters copy' }));
    expect(res.status).toBe(201);
    const copy = await clientOfClone(res.body.id);
    const [clonedPatient] = (await contentsOf(res.body.id)).filter((r) => r.resourceType === 'Patient');
    const found = await copy.get('/Patient?nickname=ace');
    expect(found.status, found.text).toBe(200);
    expect(found.body.entry.map((entry: { resource: { id: string } }) => entry.resource.id)).toEqual([clonedPatient.id]);
  });
});
