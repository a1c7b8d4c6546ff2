import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { patientBody, useTestServer, type ProjectClient } from '../helpers/server.js';

const api = await useTestServer();
const MRN = 'http://example.org/mrn';
const onPostgres = process.env.DATABASE_URL !== undefined;

type Entry = { fullUrl?: string; request: { method: string; url: string; ifNoneExist?: string; ifMatch?: string }; resource?: Record<string, unknown> };
const transaction = (entry: Entry[]) => ({ resourceType: 'Bundle', type: 'transaction', entry });
const urn = () => `urn:uuid:${randomUUID()}`;
const observation = (subject: string, extra: Record<string, unknown> = {}) => ({
  resourceType: 'Observation',
  status: 'final',
  code: { coding: [{ system: 'http://loinc.org', code: '8867-4' }] },
  subject: { reference: subject },
  ...extra,
});

/** Rows of every table that has a projectId column, for one project: what a transaction may have written. */
async function projectRowCounts(projectId: string): Promise<Record<string, number>> {
  const db = api.server.services.db;
  const tables = await db.query<{ table_name: string }>(
    `SELECT table_name::text AS table_name FROM information_schema.columns WHERE column_name = 'projectId' AND table_schema = current_schema() ORDER BY table_name`,
  );
  const counts: Record<string, number> = {};
  for (const { table_name: table } of tables) {
    const rows = await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM "${table}" WHERE "projectId" = $1`, [projectId]);
    counts[table] = rows[0].n;
  }
  return counts;
}

const MEASURE_PERIOD = {
  resourceType: 'Parameters',
  parameter: [
    { name: 'periodStart', valueDate: '2024-01-01' },
    { name: 'periodEnd', valueDate: '2024-12-31' },
  ],
};
const measureBody = () => ({
  resourceType: 'Measure',
  status: 'active',
  group: [{ population: [{ criteria: { language: 'application/x-fhir-query', expression: 'Patient' } }] }],
});

async function post(client: ProjectClient, entries: Entry[]) {
  return client.post('', transaction(entries));
}

describe('transaction', () => {
  it('creates a Patient and the Observations that refer to it by urn:uuid', async () => {
    const client = api.newProject();
    const patientUrl = urn();
    const res = await post(client, [
      { fullUrl: patientUrl, request: { method: 'POST', url: 'Patient' }, resource: patientBody() },
      { fullUrl: urn(), request: { method: 'POST', url: 'Observation' }, resource: observation(patientUrl) },
    ]);
    expect(res.status).toBe(200);
    expect(res.body.type).toBe('transaction-response');
    const [patient, obs] = res.body.entry;
    expect(patient.response.status).toBe('201 Created');
    expect(obs.resource.subject.reference).toBe(`Patient/${patient.resource.id}`);
    const stored = await client.get(`/Observation?subject=Patient/${patient.resource.id}`);
    expect(stored.body.entry).toHaveLength(1);
  });

  it('rewrites urn:uuid references at any depth, in uri elements and in the narrative, but not in canonicals', async () => {
    const client = api.newProject();
    const patientUrl = urn();
    const doc = {
      resourceType: 'DocumentReference',
      status: 'current',
      meta: { profile: [patientUrl] },
      text: { status: 'generated', div: `<div xmlns="http://www.w3.org/1999/xhtml"><a href="${patientUrl}">patient</a></div>` },
      contained: [{ resourceType: 'Provenance', id: 'p', recorded: '2024-01-01T00:00:00Z', agent: [{ who: { reference: patientUrl } }], target: [{ reference: patientUrl }] }],
      extension: [
        { url: 'http://example.org/about', valueReference: { reference: patientUrl } },
        // A contained resource must be referred to (invariant dom-3).
        { url: 'http://example.org/provenance', valueReference: { reference: '#p' } },
      ],
      subject: { reference: patientUrl },
      content: [{ attachment: { contentType: 'text/plain', url: patientUrl } }],
    };
    const res = await post(client, [
      { fullUrl: patientUrl, request: { method: 'POST', url: 'Patient' }, resource: patientBody() },
      { request: { method: 'POST', url: 'DocumentReference' }, resource: doc },
    ]);
    expect(res.status).toBe(200);
    const target = `Patient/${res.body.entry[0].resource.id}`;
    const stored = res.body.entry[1].resource;
    expect(stored.subject.reference).toBe(target);
    expect(stored.contained[0].agent[0].who.reference).toBe(target);
    expect(stored.extension[0].valueReference.reference).toBe(target);
    expect(stored.content[0].attachment.url).toBe(target);
    expect(stored.text.div).toContain(`href="${target}"`);
    expect(stored.meta.profile).toEqual([patientUrl]);
  });

  it('processes deletes, creates, updates, then reads, and answers in request order', async () => {
    const client = api.newProject();
    const existing = (await client.post('/Patient', patientBody())).body;
    const doomed = (await client.post('/Patient', patientBody())).body;
    const res = await post(client, [
      { request: { method: 'GET', url: `Patient/${existing.id}` } },
      { request: { method: 'PUT', url: `Patient/${existing.id}` }, resource: { ...existing, gender: 'female' } },
      { request: { method: 'DELETE', url: `Patient/${doomed.id}` } },
    ]);
    expect(res.status).toBe(200);
    expect(res.body.entry.map((e: { response: { status: string } }) => e.response.status)).toEqual(['200 OK', '200 OK', '200 OK']);
    expect(res.body.entry[0].resource.gender).toBe('female');
  });

  it('writes nothing when an entry fails, and names the entry in the outcome', async () => {
    const client = api.newProject();
    await client.post('/Patient', patientBody());
    const before = await projectRowCounts(client.projectId);
    const patientUrl = urn();
    const res = await post(client, [
      { fullUrl: patientUrl, request: { method: 'POST', url: 'Patient' }, resource: patientBody() },
      { request: { method: 'POST', url: 'Observation' }, resource: observation(patientUrl) },
      { request: { method: 'POST', url: 'Patient' }, resource: { resourceType: 'Patient', gender: 'not-a-gender' } },
    ]);
    expect(res.status).toBe(400);
    expect(res.body.issue[0].expression[0]).toBe('Bundle.entry[2]');
    expect(await projectRowCounts(client.projectId)).toEqual(before);
  });

  it('fails with the entry status: 404 for a missing resource', async () => {
    const client = api.newProject();
    const res = await post(client, [
      { request: { method: 'POST', url: 'Patient' }, resource: patientBody() },
      { request: { method: 'DELETE', url: 'Patient/no-such-patient' } },
    ]);
    expect(res.status).toBe(404);
    expect(res.body.issue[0].expression).toContain('Bundle.entry[1]');
    expect((await client.get('/Patient?_total=accurate')).body.total).toBe(0);
  });

  it('resolves a conditional reference to its one match', async () => {
    const client = api.newProject();
    const mrn = randomUUID();
    const patient = (await client.post('/Patient', patientBody({ identifier: [{ system: MRN, value: mrn }] }))).body;
    const res = await post(client, [{ request: { method: 'POST', url: 'Observation' }, resource: observation(`Patient?identifier=${MRN}|${mrn}`) }]);
    expect(res.status).toBe(200);
    expect(res.body.entry[0].resource.subject.reference).toBe(`Patient/${patient.id}`);
  });

  it('fails with 412 when a conditional reference matches nothing', async () => {
    const res = await post(api.newProject(), [{ request: { method: 'POST', url: 'Observation' }, resource: observation(`Patient?identifier=${MRN}|${randomUUID()}`) }]);
    expect(res.status).toBe(412);
    expect(res.body.issue[0].details.text).toContain('Patient?identifier=');
  });

  it('fails with 412 when a conditional reference matches several', async () => {
    const client = api.newProject();
    const mrn = randomUUID();
    await client.post('/Patient', patientBody({ identifier: [{ system: MRN, value: mrn }] }));
    await client.post('/Patient', patientBody({ identifier: [{ system: MRN, value: mrn }] }));
    const res = await post(client, [{ request: { method: 'POST', url: 'Observation' }, resource: observation(`Patient?identifier=${MRN}|${mrn}`) }]);
    expect(res.status).toBe(412);
  });

  it('maps the fullUrl of a conditional create that finds its match to the existing resource', async () => {
    const client = api.newProject();
    const mrn = randomUUID();
    const patient = (await client.post('/Patient', patientBody({ identifier: [{ system: MRN, value: mrn }] }))).body;
    const patientUrl = urn();
    const res = await post(client, [
      { fullUrl: patientUrl, request: { method: 'POST', url: 'Patient', ifNoneExist: `identifier=${MRN}|${mrn}` }, resource: patientBody() },
      { request: { method: 'POST', url: 'Observation' }, resource: observation(patientUrl) },
    ]);
    expect(res.status).toBe(200);
    expect(res.body.entry[0].response.status).toBe('200 OK');
    expect(res.body.entry[1].resource.subject.reference).toBe(`Patient/${patient.id}`);
    expect((await client.get(`/Patient?identifier=${MRN}|${mrn}&_total=accurate`)).body.total).toBe(1);
  });

  it('maps the fullUrl of a conditional update to the resource it updates or creates', async () => {
    const client = api.newProject();
    const known = randomUUID();
    const patient = (await client.post('/Patient', patientBody({ identifier: [{ system: MRN, value: known }] }))).body;
    const [knownUrl, newUrl] = [urn(), urn()];
    const fresh = randomUUID();
    const res = await post(client, [
      { fullUrl: knownUrl, request: { method: 'PUT', url: `Patient?identifier=${MRN}|${known}` }, resource: patientBody({ identifier: [{ system: MRN, value: known }] }) },
      { fullUrl: newUrl, request: { method: 'PUT', url: `Patient?identifier=${MRN}|${fresh}` }, resource: patientBody({ identifier: [{ system: MRN, value: fresh }] }) },
      { request: { method: 'POST', url: 'Observation' }, resource: observation(knownUrl) },
      { request: { method: 'POST', url: 'Observation' }, resource: observation(newUrl) },
    ]);
    expect(res.status).toBe(200);
    const [updated, created, first, second] = res.body.entry;
    expect(updated.response.status).toBe('200 OK');
    expect(created.response.status).toBe('201 Created');
    expect(first.resource.subject.reference).toBe(`Patient/${patient.id}`);
    expect(second.resource.subject.reference).toBe(`Patient/${created.resource.id}`);
  });

  it('refuses two entries that write the same resource, naming both', async () => {
    const client = api.newProject();
    const existing = (await client.post('/Patient', patientBody())).body;
    const res = await post(client, [
      { request: { method: 'PUT', url: `Patient/${existing.id}` }, resource: existing },
      { request: { method: 'DELETE', url: `Patient/${existing.id}` } },
    ]);
    expect(res.status).toBe(400);
    expect(res.body.issue[0].details.text).toContain('Bundle.entry[0] and Bundle.entry[1]');
  });

  it('collapses conditional creates with the same criteria into one resource, which every entry answers with', async () => {
    const client = api.newProject();
    const mrn = randomUUID();
    const [firstUrl, secondUrl] = [urn(), urn()];
    const create = (fullUrl: string, ifNoneExist: string): Entry => ({
      fullUrl,
      request: { method: 'POST', url: 'Patient', ifNoneExist },
      resource: patientBody({ identifier: [{ system: MRN, value: mrn }] }),
    });
    // The second in the `Type?search` form some clients send: the same criteria.
    const res = await post(client, [
      create(firstUrl, `identifier=${MRN}|${mrn}`),
      create(secondUrl, `Patient?identifier=${MRN}|${mrn}`),
      { request: { method: 'POST', url: 'Observation' }, resource: observation(firstUrl) },
      { request: { method: 'POST', url: 'Observation' }, resource: observation(secondUrl) },
    ]);
    expect(res.status, res.text).toBe(200);
    const [first, second, byFirst, bySecond] = res.body.entry;
    expect(first.response.status).toBe('201 Created');
    expect(second.response.status).toBe('200 OK');
    expect(second.response.location).toBe(first.response.location);
    expect(second.resource.id).toBe(first.resource.id);
    expect(byFirst.resource.subject.reference).toBe(`Patient/${first.resource.id}`);
    expect(bySecond.resource.subject.reference).toBe(`Patient/${first.resource.id}`);
    expect((await client.get(`/Patient?identifier=${MRN}|${mrn}&_total=accurate`)).body.total).toBe(1);
  });

  it('answers collapsed conditional creates with the match they find', async () => {
    const client = api.newProject();
    const mrn = randomUUID();
    const existing = (await client.post('/Patient', patientBody({ identifier: [{ system: MRN, value: mrn }] }))).body;
    const create: Entry = { request: { method: 'POST', url: 'Patient', ifNoneExist: `identifier=${MRN}|${mrn}` }, resource: patientBody() };
    const res = await post(client, [create, create]);
    expect(res.status, res.text).toBe(200);
    expect(res.body.entry.map((e: { response: { status: string } }) => e.response.status)).toEqual(['200 OK', '200 OK']);
    expect(res.body.entry.map((e: { resource: { id: string } }) => e.resource.id)).toEqual([existing.id, existing.id]);
    expect((await client.get(`/Patient?identifier=${MRN}|${mrn}&_total=accurate`)).body.total).toBe(1);
  });

  it('still refuses a conditional update beside a conditional create of the same criteria, naming both', async () => {
    const client = api.newProject();
    const mrn = randomUUID();
    const body = patientBody({ identifier: [{ system: MRN, value: mrn }] });
    const res = await post(client, [
      { request: { method: 'POST', url: 'Patient', ifNoneExist: `identifier=${MRN}|${mrn}` }, resource: body },
      { request: { method: 'PUT', url: `Patient?identifier=${MRN}|${mrn}` }, resource: body },
    ]);
    expect(res.status, res.text).toBe(400);
    expect(res.body.issue[0].details.text).toContain('Bundle.entry[0] and Bundle.entry[1] both write Patient?identifier=');
    expect(res.body.issue[0].expression).toEqual(['Bundle.entry[1]']);
    expect((await client.get(`/Patient?identifier=${MRN}|${mrn}&_total=accurate`)).body.total).toBe(0);
  });

  it('still refuses two conditional creates with the same fullUrl', async () => {
    const client = api.newProject();
    const fullUrl = urn();
    const res = await post(client, [
      { fullUrl, request: { method: 'POST', url: 'Patient', ifNoneExist: 'identifier=a|1' }, resource: patientBody() },
      { fullUrl, request: { method: 'POST', url: 'Patient', ifNoneExist: 'identifier=a|1' }, resource: patientBody() },
    ]);
    expect(res.status, res.text).toBe(400);
    expect(res.body.issue[0].details.text).toContain(`both write ${fullUrl}`);
  });

  it('refuses a reference to a urn:uuid that no entry defines', async () => {
    const missing = urn();
    const res = await post(api.newProject(), [{ request: { method: 'POST', url: 'Observation' }, resource: observation(missing) }]);
    expect(res.status).toBe(400);
    expect(res.body.issue[0].details.text).toContain(missing);
  });

  it('runs an operation that only reads inside the transaction', async () => {
    const client = api.newProject();
    const res = await post(client, [
      { request: { method: 'POST', url: 'Patient' }, resource: patientBody() },
      { request: { method: 'GET', url: 'ValueSet/$expand?url=http://hl7.org/fhir/ValueSet/administrative-gender' } },
    ]);
    expect(res.status).toBe(200);
    expect(res.body.entry[1].response.status).toBe('200 OK');
    expect(res.body.entry[1].resource.expansion.contains.map((c: { code: string }) => c.code)).toContain('female');
  });

  it('refuses operations that change data, which a transaction could not roll back', async () => {
    const client = api.newProject();
    const res = await post(client, [{ request: { method: 'POST', url: `Project/${client.projectId}/$clone` }, resource: { resourceType: 'Parameters' } }]);
    expect(res.status).toBe(400);
    expect(res.body.issue[0].expression[0]).toBe('Bundle.entry[0].request');
  });

  it('runs an operation whose writes a rollback undoes, and it sees the entries written before it', async () => {
    const client = api.newProject();
    const measure = (await client.post('/Measure', measureBody())).body;
    const res = await post(client, [
      { request: { method: 'POST', url: 'Patient' }, resource: patientBody() },
      { request: { method: 'POST', url: `Measure/${measure.id}/$evaluate-measure` }, resource: MEASURE_PERIOD },
    ]);
    expect(res.status).toBe(200);
    expect(res.body.entry[1].response.status).toBe('201 Created');
    expect(res.body.entry[1].resource.group[0].population[0].count).toBe(1);
  });

  it('rolls back what such an operation wrote when a later entry fails', async () => {
    const client = api.newProject();
    const measure = (await client.post('/Measure', measureBody())).body;
    const res = await post(client, [
      { request: { method: 'POST', url: `Measure/${measure.id}/$evaluate-measure` }, resource: MEASURE_PERIOD },
      { request: { method: 'PUT', url: 'Patient/not-here' }, resource: { resourceType: 'Patient', id: 'elsewhere' } },
    ]);
    expect(res.status).toBe(400);
    expect((await client.get('/MeasureReport?_total=accurate')).body.total).toBe(0);
  });

  it('checks each entry as the single request: a refused entry fails the transaction', async () => {
    const client = api.newProject();
    const res = await post(client, [
      { request: { method: 'POST', url: 'Patient' }, resource: patientBody() },
      { request: { method: 'POST', url: 'Project' }, resource: { resourceType: 'Project', name: 'mine' } },
    ]);
    expect(res.status).toBe(403);
    expect((await client.get('/Patient?_total=accurate')).body.total).toBe(0);
  });

  it('stores a Binary with data as part of the transaction', async () => {
    const client = api.newProject();
    const res = await post(client, [
      { request: { method: 'POST', url: 'Binary' }, resource: { resourceType: 'Binary', contentType: 'text/plain', data: Buffer.from('hello').toString('base64') } },
    ]);
    expect(res.status).toBe(200);
    const id = res.body.entry[0].resource.id;
    const raw = await api.raw(`/fhir/R4/Binary/${id}`, { headers: await client.authHeaders() });
    expect(await raw.text()).toBe('hello');
  });

  it('leaves no stored bytes of a Binary when its transaction rolls back', async () => {
    const client = api.newProject();
    const data = Buffer.from('rolled back').toString('base64');
    const res = await post(client, [
      { request: { method: 'POST', url: 'Binary' }, resource: { resourceType: 'Binary', contentType: 'text/plain', data } },
      // A PUT runs after the POSTs: its version conflict comes once the Binary's bytes are written.
      { request: { method: 'PUT', url: 'Patient/p1', ifMatch: 'W/"not-the-version"' }, resource: { resourceType: 'Patient', id: 'p1' } },
    ]);
    expect(res.status).toBeGreaterThanOrEqual(400);
    const db = api.server.services.db;
    const prefix = `${client.projectId}/%`;
    const [chunks] = await db.query<{ n: number }>('SELECT count(*)::int AS n FROM binary_chunk WHERE key LIKE $1', [prefix]);
    const [objects] = await db.query<{ n: number }>('SELECT count(*)::int AS n FROM binary_content WHERE "projectId" = $1', [client.projectId]);
    expect({ chunks: chunks.n, objects: objects.n }).toEqual({ chunks: 0, objects: 0 });
  });

  it.skipIf(onPostgres)('caps the entries of a transaction on the embedded database (413)', async () => {
    const small = await useTestServer({ EMBEDDED_TRANSACTION_ENTRIES: '2' });
    const entries = Array.from({ length: 3 }, () => ({ request: { method: 'POST', url: 'Patient' }, resource: patientBody() }));
    const res = await small.newProject().post('', transaction(entries));
    expect(res.status).toBe(413);
  });

  it('creates one Patient when a REST conditional create and a transaction entry with ifNoneExist race', async () => {
    const client = api.newProject();
    const mrn = randomUUID();
    const body = patientBody({ identifier: [{ system: MRN, value: mrn }] });
    await client.token();
    const results = await Promise.all(
      Array.from({ length: 16 }, (_, i) =>
        i % 2 === 0
          ? client.post('/Patient', body, { 'If-None-Exist': `identifier=${MRN}|${mrn}` })
          : post(client, [{ request: { method: 'POST', url: 'Patient', ifNoneExist: `identifier=${MRN}|${mrn}` }, resource: body }]),
      ),
    );
    expect(results.every((r) => r.status === 200 || r.status === 201)).toBe(true);
    expect((await client.get(`/Patient?identifier=${MRN}|${mrn}&_total=accurate`)).body.total).toBe(1);
  });
});
