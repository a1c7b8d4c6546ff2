import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { patientBody, useTestServer, type ProjectClient } from '../helpers/server.js';

const api = await useTestServer();
const MRN = 'http://example.org/mrn';

async function patientWithMrn(client: ProjectClient, mrn: string): Promise<{ id: string; meta: { versionId: string } }> {
  const res = await client.post('/Patient', patientBody({ identifier: [{ system: MRN, value: mrn }] }));
  expect(res.status).toBe(201);
  return res.body;
}

async function countByMrn(client: ProjectClient, mrn: string): Promise<number> {
  const res = await client.get(`/Patient?identifier=${encodeURIComponent(`${MRN}|${mrn}`)}&_total=accurate`);
  return res.body.total as number;
}

describe('conditional create (If-None-Exist)', () => {
  it('creates when nothing matches (201)', async () => {
    const client = api.newProject();
    const mrn = randomUUID();
    const res = await client.post('/Patient', patientBody({ identifier: [{ system: MRN, value: mrn }] }), { 'If-None-Exist': `identifier=${MRN}|${mrn}` });
    expect(res.status).toBe(201);
    expect(await countByMrn(client, mrn)).toBe(1);
  });

  it('answers 200 with the match, its Location and ETag, and writes nothing', async () => {
    const client = api.newProject();
    const mrn = randomUUID();
    const existing = await patientWithMrn(client, mrn);
    const res = await client.post('/Patient', patientBody({ identifier: [{ system: MRN, value: mrn }], gender: 'female' }), {
      'If-None-Exist': `identifier=${MRN}|${mrn}`,
    });
    expect(res.status).toBe(200);
    expect(res.body.id).toBe(existing.id);
    expect(res.body.gender).toBe('male');
    expect(res.headers.get('location')).toBe(`http://localhost/fhir/R4/Patient/${existing.id}/_history/${existing.meta.versionId}`);
    expect(res.headers.get('etag')).toBe(`W/"${existing.meta.versionId}"`);
    expect(await countByMrn(client, mrn)).toBe(1);
  });

  it('accepts the header in the Type?search form some clients send', async () => {
    const client = api.newProject();
    const mrn = randomUUID();
    const existing = await patientWithMrn(client, mrn);
    const res = await client.post('/Patient', patientBody(), { 'If-None-Exist': `Patient?identifier=${MRN}|${mrn}` });
    expect(res.status).toBe(200);
    expect(res.body.id).toBe(existing.id);
  });

  it('refuses with 412 when several match', async () => {
    const client = api.newProject();
    const mrn = randomUUID();
    await patientWithMrn(client, mrn);
    await patientWithMrn(client, mrn);
    const res = await client.post('/Patient', patientBody(), { 'If-None-Exist': `identifier=${MRN}|${mrn}` });
    expect(res.status).toBe(412);
    expect(res.body.resourceType).toBe('OperationOutcome');
    expect(await countByMrn(client, mrn)).toBe(2);
  });

  it('refuses an unknown search parameter with 400 rather than treating it as no match', async () => {
    const client = api.newProject();
    const res = await client.post('/Patient', patientBody(), { 'If-None-Exist': 'no-such-parameter=1' });
    expect(res.status).toBe(400);
    expect(JSON.stringify(res.body)).toContain('no-such-parameter');
  });

  it('does not see a match in another project', async () => {
    const mine = api.newProject();
    const other = api.newProject();
    const mrn = randomUUID();
    await patientWithMrn(other, mrn);
    const res = await mine.post('/Patient', patientBody({ identifier: [{ system: MRN, value: mrn }] }), { 'If-None-Exist': `identifier=${MRN}|${mrn}` });
    expect(res.status).toBe(201);
  });

  it('creates one resource when 32 identical requests race', async () => {
    const client = api.newProject();
    const mrn = randomUUID();
    await client.token();
    const results = await Promise.all(
      Array.from({ length: 32 }, () =>
        client.post('/Patient', patientBody({ identifier: [{ system: MRN, value: mrn }] }), { 'If-None-Exist': `identifier=${MRN}|${mrn}` }),
      ),
    );
    expect(results.filter((r) => r.status === 201)).toHaveLength(1);
    expect(results.filter((r) => r.status === 200)).toHaveLength(31);
    expect(new Set(results.map((r) => r.body.id)).size).toBe(1);
    expect(await countByMrn(client, mrn)).toBe(1);
  });
});

describe('conditional update (PUT [type]?search)', () => {
  it('creates when nothing matches and the body has no id (201)', async () => {
    const client = api.newProject();
    const mrn = randomUUID();
    const res = await client.put(`/Patient?identifier=${MRN}|${mrn}`, patientBody({ identifier: [{ system: MRN, value: mrn }] }));
    expect(res.status).toBe(201);
    expect(await countByMrn(client, mrn)).toBe(1);
  });

  it('creates with the body id when nothing matches and the id is free (201)', async () => {
    const client = api.newProject();
    const id = `c-${randomUUID()}`;
    const res = await client.put(`/Patient?identifier=${MRN}|${randomUUID()}`, patientBody({ id }));
    expect(res.status).toBe(201);
    expect(res.body.id).toBe(id);
  });

  it('refuses with 409 when nothing matches but the body id names an existing resource', async () => {
    const client = api.newProject();
    const existing = await patientWithMrn(client, randomUUID());
    const res = await client.put(`/Patient?identifier=${MRN}|${randomUUID()}`, patientBody({ id: existing.id }));
    expect(res.status).toBe(409);
  });

  it('updates the one match (200, new version)', async () => {
    const client = api.newProject();
    const mrn = randomUUID();
    const existing = await patientWithMrn(client, mrn);
    const res = await client.put(`/Patient?identifier=${MRN}|${mrn}`, patientBody({ identifier: [{ system: MRN, value: mrn }], gender: 'female' }));
    expect(res.status).toBe(200);
    expect(res.body.id).toBe(existing.id);
    expect(res.body.gender).toBe('female');
    expect(res.body.meta.versionId).not.toBe(existing.meta.versionId);
  });

  it('refuses a body id other than the match (400)', async () => {
    const client = api.newProject();
    const mrn = randomUUID();
    await patientWithMrn(client, mrn);
    const res = await client.put(`/Patient?identifier=${MRN}|${mrn}`, patientBody({ id: 'someone-else' }));
    expect(res.status).toBe(400);
  });

  it('refuses with 412 when several match', async () => {
    const client = api.newProject();
    const mrn = randomUUID();
    await patientWithMrn(client, mrn);
    await patientWithMrn(client, mrn);
    const res = await client.put(`/Patient?identifier=${MRN}|${mrn}`, patientBody());
    expect(res.status).toBe(412);
  });

  it('applies If-Match to the match', async () => {
    const client = api.newProject();
    const mrn = randomUUID();
    await patientWithMrn(client, mrn);
    const res = await client.put(`/Patient?identifier=${MRN}|${mrn}`, patientBody(), { 'If-Match': 'W/"not-the-version"' });
    expect(res.status).toBe(412);
  });

  it('refuses a conditional update without search parameters (400)', async () => {
    const res = await api.newProject().put('/Patient', patientBody());
    expect(res.status).toBe(400);
  });

  it('creates one resource when 32 identical conditional updates race', async () => {
    const client = api.newProject();
    const mrn = randomUUID();
    await client.token();
    const results = await Promise.all(
      Array.from({ length: 32 }, () => client.put(`/Patient?identifier=${MRN}|${mrn}`, patientBody({ identifier: [{ system: MRN, value: mrn }] }))),
    );
    expect(results.every((r) => r.status === 200 || r.status === 201)).toBe(true);
    expect(results.filter((r) => r.status === 201)).toHaveLength(1);
    expect(await countByMrn(client, mrn)).toBe(1);
  });
});

describe('conditional patch (PATCH [type]?search)', () => {
  const patch = [{ op: 'replace', path: '/gender', value: 'female' }];

  it('patches the one match', async () => {
    const client = api.newProject();
    const mrn = randomUUID();
    const existing = await patientWithMrn(client, mrn);
    const res = await client.patch(`/Patient?identifier=${MRN}|${mrn}`, patch);
    expect(res.status).toBe(200);
    expect(res.body.id).toBe(existing.id);
    expect(res.body.gender).toBe('female');
  });

  it('answers 404 when nothing matches', async () => {
    const res = await api.newProject().patch(`/Patient?identifier=${MRN}|${randomUUID()}`, patch);
    expect(res.status).toBe(404);
  });

  it('answers 412 when several match', async () => {
    const client = api.newProject();
    const mrn = randomUUID();
    await patientWithMrn(client, mrn);
    await patientWithMrn(client, mrn);
    expect((await client.patch(`/Patient?identifier=${MRN}|${mrn}`, patch)).status).toBe(412);
  });
});

describe('conditional delete (DELETE [type]?search)', () => {
  it('deletes the one match', async () => {
    const client = api.newProject();
    const mrn = randomUUID();
    const existing = await patientWithMrn(client, mrn);
    const res = await client.delete(`/Patient?identifier=${MRN}|${mrn}`);
    expect(res.status).toBe(200);
    expect((await client.get(`/Patient/${existing.id}`)).status).toBe(410);
  });

  it('answers 200 with an informational outcome when nothing matches', async () => {
    const res = await api.newProject().delete(`/Patient?identifier=${MRN}|${randomUUID()}`);
    expect(res.status).toBe(200);
    expect(res.body.issue[0].severity).toBe('information');
  });

  it('refuses to delete several matches (412), whatever _count says', async () => {
    const client = api.newProject();
    const mrn = randomUUID();
    await patientWithMrn(client, mrn);
    await patientWithMrn(client, mrn);
    const res = await client.delete(`/Patient?identifier=${MRN}|${mrn}&_count=10`);
    expect(res.status).toBe(412);
    expect(await countByMrn(client, mrn)).toBe(2);
  });
});

describe('conditional criteria holding a NUL (U+0000)', () => {
  /** The search's own refusal: 400 `invalid` naming the parameter. */
  function expectNulRefused(res: { status: number; body: any; text: string }): void {
    expect(res.status, res.text).toBe(400);
    expect(res.body.resourceType).toBe('OperationOutcome');
    expect(res.body.issue[0].code).toBe('invalid');
    expect(res.body.issue[0].details.text).toContain('NUL');
    expect(res.body.issue[0].expression).toEqual(['identifier']);
  }

  it('are refused with 400 by conditional update, patch and delete, and the match is left as it was', async () => {
    const client = api.newProject();
    const mrn = randomUUID();
    const patient = await patientWithMrn(client, mrn);
    const criteria = `/Patient?identifier=${MRN}|${mrn}%00`;
    expectNulRefused(await client.put(criteria, patientBody({ identifier: [{ system: MRN, value: mrn }] })));
    expectNulRefused(await client.patch(criteria, [{ op: 'replace', path: '/gender', value: 'female' }]));
    expectNulRefused(await client.delete(criteria));
    const read = await client.get(`/Patient/${patient.id}`);
    expect(read.body.meta.versionId).toBe(patient.meta.versionId);
  });

  it('are refused with 400 in a transaction entry, which writes nothing', async () => {
    const client = api.newProject();
    const mrn = randomUUID();
    const entry = (ifNoneExist: string) => ({
      request: { method: 'POST', url: 'Patient', ifNoneExist },
      resource: patientBody({ identifier: [{ system: MRN, value: mrn }] }),
    });
    const res = await client.post('', { resourceType: 'Bundle', type: 'transaction', entry: [entry(`identifier=${MRN}|other`), entry(`identifier=${MRN}|${mrn}%00`)] });
    expect(res.status, res.text).toBe(400);
    expect(res.body.issue[0].details.text).toContain('NUL');
    expect(await countByMrn(client, mrn)).toBe(0);
  });
});

describe('CapabilityStatement', () => {
  it('states conditional create, update and delete, and the batch and transaction interactions', async () => {
    const res = await api.newProject().get('/metadata');
    const rest = res.body.rest[0];
    const patient = rest.resource.find((r: { type: string }) => r.type === 'Patient');
    expect(patient).toMatchObject({ conditionalCreate: true, conditionalUpdate: true, conditionalDelete: 'single' });
    expect(rest.interaction.map((i: { code: string }) => i.code)).toEqual(expect.arrayContaining(['transaction', 'batch']));
  });
});
