import { describe, expect, it } from 'vitest';
import { patientBody, useTestServer } from '../helpers/server.js';

const api = await useTestServer();

describe('create', () => {
  it('returns 201 with Location, ETag, Last-Modified and server-set meta', async () => {
    const client = api.newProject();
    const res = await client.post('/Patient', patientBody());
    expect(res.status).toBe(201);
    const { id, meta } = res.body as { id: string; meta: Record<string, string> };
    expect(id).toMatch(/^[0-9a-f-]{36}$/);
    expect(res.headers.get('location')).toBe(`http://localhost/fhir/R4/Patient/${id}/_history/${meta.versionId}`);
    expect(res.headers.get('etag')).toBe(`W/"${meta.versionId}"`);
    expect(res.headers.get('last-modified')).toBe(new Date(meta.lastUpdated).toUTCString());
    expect(meta.project).toBe(client.projectId);
    expect(res.headers.get('content-type')).toBe('application/fhir+json; charset=utf-8');
  });

  it('ignores a client id and client meta.versionId on POST', async () => {
    const client = api.newProject();
    const res = await client.post('/Patient', patientBody({ id: 'mine', meta: { versionId: '9', project: 'other' } }));
    expect(res.status).toBe(201);
    expect(res.body.id).not.toBe('mine');
    expect((res.body.meta as Record<string, string>).versionId).not.toBe('9');
    expect((res.body.meta as Record<string, string>).project).toBe(client.projectId);
  });

  it('keeps client meta such as tags and profiles', async () => {
    const client = api.newProject();
    const tag = { system: 'http://example.org/tags', code: 'vip' };
    const res = await client.post('/Patient', patientBody({ meta: { tag: [tag] } }));
    expect((res.body.meta as { tag: unknown[] }).tag).toEqual([tag]);
  });

  it('rejects a body whose resourceType differs from the URL type', async () => {
    const client = api.newProject();
    const res = await client.post('/Observation', patientBody());
    expect(res.status).toBe(400);
    expect(res.body.resourceType).toBe('OperationOutcome');
    expect(res.body.issue).toEqual([expect.objectContaining({ code: 'invalid', expression: ['resourceType'] })]);
  });

  it('rejects invalid JSON with 400 invalid', async () => {
    const client = api.newProject();
    const res = await client.post('/Patient', '{"resourceType": "Patient",');
    expect(res.status).toBe(400);
    expect((res.body.issue as { code: string; details: { text: string } }[])[0]).toMatchObject({
      code: 'invalid',
      details: { text: expect.stringContaining('not valid JSON') },
    });
  });

  it('rejects an empty body', async () => {
    const res = await api.newProject().request('POST', '/Patient', '', { 'Content-Type': 'application/fhir+json' });
    expect(res.status).toBe(400);
    expect(res.body.resourceType).toBe('OperationOutcome');
  });

  it('rejects a non-JSON content type with 415', async () => {
    const res = await api.newProject().request('POST', '/Patient', '<Patient/>', { 'Content-Type': 'application/fhir+xml' });
    expect(res.status).toBe(415);
    expect((res.body.issue as { code: string }[])[0].code).toBe('not-supported');
  });

  it('accepts application/json as well as application/fhir+json', async () => {
    const res = await api.newProject().request('POST', '/Patient', JSON.stringify(patientBody()), {
      'Content-Type': 'application/json; charset=utf-8',
    });
    expect(res.status).toBe(201);
  });

  it('answers 404 not-supported for an unknown resource type', async () => {
    const res = await api.newProject().post('/Unicorn', { resourceType: 'Unicorn' });
    expect(res.status).toBe(404);
    expect((res.body.issue as { code: string }[])[0].code).toBe('not-supported');
  });

  it('creates admin resource types such as AccessPolicy', async () => {
    const res = await api.newProject().post('/AccessPolicy', { resourceType: 'AccessPolicy', name: 'read-only', resource: [{ resourceType: 'Patient', readonly: true }] });
    expect(res.status).toBe(201);
  });
});

describe('read and vread', () => {
  it('reads the current version exactly as created', async () => {
    const client = api.newProject();
    const created = await client.post('/Patient', patientBody());
    const res = await client.get(`/Patient/${created.body.id}`);
    expect(res.status).toBe(200);
    expect(res.body).toEqual(created.body);
    expect(res.headers.get('etag')).toBe(created.headers.get('etag'));
    expect(res.headers.get('last-modified')).toBe(created.headers.get('last-modified'));
  });

  it('keeps resourceType first in the stored JSON', async () => {
    const client = api.newProject();
    const created = await client.post('/Patient', patientBody());
    const res = await client.get(`/Patient/${created.body.id}`);
    expect(res.text.startsWith('{"resourceType":"Patient","id":')).toBe(true);
  });

  it('gives 404 not-found for a missing id', async () => {
    const res = await api.newProject().get('/Patient/does-not-exist');
    expect(res.status).toBe(404);
    expect((res.body.issue as { code: string }[])[0].code).toBe('not-found');
  });

  it('reads an old version by vread', async () => {
    const client = api.newProject();
    const v1 = await client.post('/Patient', patientBody());
    await client.put(`/Patient/${v1.body.id}`, { ...v1.body, gender: 'female' });
    const versionId = (v1.body.meta as { versionId: string }).versionId;
    const res = await client.get(`/Patient/${v1.body.id}/_history/${versionId}`);
    expect(res.status).toBe(200);
    expect(res.body.gender).toBe('male');
    expect(res.headers.get('etag')).toBe(`W/"${versionId}"`);
  });

  it('gives 404 for a vread of an unknown version', async () => {
    const client = api.newProject();
    const v1 = await client.post('/Patient', patientBody());
    const res = await client.get(`/Patient/${v1.body.id}/_history/00000000-0000-0000-0000-000000000000`);
    expect(res.status).toBe(404);
  });

  it('pretty-prints with _pretty=true', async () => {
    const client = api.newProject();
    const created = await client.post('/Patient', patientBody());
    const res = await client.get(`/Patient/${created.body.id}?_pretty=true`);
    expect(res.text).toContain('\n  "resourceType": "Patient"');
  });

  it('returns only summary elements with _summary=true and marks them SUBSETTED', async () => {
    const client = api.newProject();
    const created = await client.post('/Patient', patientBody({ photo: [{ contentType: 'image/png', url: 'http://example.org/p.png' }] }));
    const res = await client.get(`/Patient/${created.body.id}?_summary=true`);
    expect(res.body.name).toBeDefined();
    expect(res.body.photo).toBeUndefined();
    expect((res.body.meta as { tag: { code: string }[] }).tag).toContainEqual(expect.objectContaining({ code: 'SUBSETTED' }));
  });

  it('returns only the listed elements with _elements', async () => {
    const client = api.newProject();
    const created = await client.post('/Patient', patientBody());
    const res = await client.get(`/Patient/${created.body.id}?_elements=gender`);
    expect(Object.keys(res.body).sort()).toEqual(['gender', 'id', 'meta', 'resourceType']);
  });

  it('rejects an unknown _summary value', async () => {
    const client = api.newProject();
    const created = await client.post('/Patient', patientBody());
    const res = await client.get(`/Patient/${created.body.id}?_summary=bogus`);
    expect(res.status).toBe(400);
  });

  it('answers 406 when only XML is acceptable', async () => {
    const client = api.newProject();
    const created = await client.post('/Patient', patientBody());
    const res = await client.get(`/Patient/${created.body.id}`, { Accept: 'application/fhir+xml' });
    expect(res.status).toBe(406);
    expect(res.body.resourceType).toBe('OperationOutcome');
  });
});

describe('update', () => {
  it('writes a new version and returns 200', async () => {
    const client = api.newProject();
    const created = await client.post('/Patient', patientBody());
    const res = await client.put(`/Patient/${created.body.id}`, { ...created.body, gender: 'female' });
    expect(res.status).toBe(200);
    expect(res.body.gender).toBe('female');
    expect((res.body.meta as { versionId: string }).versionId).not.toBe((created.body.meta as { versionId: string }).versionId);
  });

  it('creates the resource with the client id when it does not exist (201)', async () => {
    const client = api.newProject();
    const id = `client-${Date.now()}`;
    const res = await client.put(`/Patient/${id}`, patientBody({ id }));
    expect(res.status).toBe(201);
    expect(res.body.id).toBe(id);
    expect((await client.get(`/Patient/${id}`)).status).toBe(200);
  });

  it('writes no new version when the content is unchanged', async () => {
    const client = api.newProject();
    const created = await client.post('/Patient', patientBody());
    const res = await client.put(`/Patient/${created.body.id}`, { ...created.body });
    expect(res.status).toBe(200);
    expect((res.body.meta as { versionId: string }).versionId).toBe((created.body.meta as { versionId: string }).versionId);
    const history = await client.get(`/Patient/${created.body.id}/_history`);
    expect(history.body.entry).toHaveLength(1);
  });

  it('rejects a body id different from the URL id', async () => {
    const client = api.newProject();
    const created = await client.post('/Patient', patientBody());
    const res = await client.put(`/Patient/${created.body.id}`, { ...created.body, id: 'other' });
    expect(res.status).toBe(400);
    expect(res.body.issue).toEqual([expect.objectContaining({ code: 'invalid', expression: ['Patient.id'] })]);
  });

  it('rejects a body without an id', async () => {
    const client = api.newProject();
    const created = await client.post('/Patient', patientBody());
    const res = await client.put(`/Patient/${created.body.id}`, patientBody());
    expect(res.status).toBe(400);
  });

  it('gives 412 for a stale If-Match and changes nothing', async () => {
    const client = api.newProject();
    const created = await client.post('/Patient', patientBody());
    const stale = created.headers.get('etag')!;
    await client.put(`/Patient/${created.body.id}`, { ...created.body, gender: 'female' });
    const res = await client.put(`/Patient/${created.body.id}`, { ...created.body, gender: 'other' }, { 'If-Match': stale });
    expect(res.status).toBe(412);
    expect((await client.get(`/Patient/${created.body.id}`)).body.gender).toBe('female');
  });

  it('refuses an If-Match tag cut short (W/"1) with 400 naming If-Match, and changes nothing', async () => {
    const client = api.newProject();
    const created = await client.post('/Patient', patientBody());
    const version = created.body.meta.versionId as string;
    for (const ifMatch of [`W/"${version}`, `${version}"`]) {
      const update = await client.put(`/Patient/${created.body.id}`, { ...created.body, gender: 'other' }, { 'If-Match': ifMatch });
      const patch = await client.patch(`/Patient/${created.body.id}`, [{ op: 'replace', path: '/gender', value: 'other' }], { 'If-Match': ifMatch });
      const removal = await client.delete(`/Patient/${created.body.id}`, { 'If-Match': ifMatch });
      for (const res of [update, patch, removal]) {
        expect(res.status, res.text).toBe(400);
        expect(res.body.issue[0]).toMatchObject({ code: 'invalid', expression: ['If-Match'] });
        expect(res.body.issue[0].details.text).toContain('Malformed If-Match');
      }
    }
    expect((await client.get(`/Patient/${created.body.id}`)).body.meta.versionId).toBe(version);
  });

  it('takes If-Match: * as whatever version is current, and refuses it for a resource that does not exist', async () => {
    const client = api.newProject();
    const created = await client.post('/Patient', patientBody());
    const res = await client.put(`/Patient/${created.body.id}`, { ...created.body, gender: 'female' }, { 'If-Match': '*' });
    expect(res.status, res.text).toBe(200);
    expect(res.body.gender).toBe('female');
    const absent = await client.put('/Patient/never-written', { ...patientBody(), id: 'never-written' }, { 'If-Match': '*' });
    expect(absent.status, absent.text).toBe(412);
    expect((await client.get('/Patient/never-written')).status).toBe(404);
  });

  it('accepts a current If-Match', async () => {
    const client = api.newProject();
    const created = await client.post('/Patient', patientBody());
    const res = await client.put(`/Patient/${created.body.id}`, { ...created.body, gender: 'female' }, { 'If-Match': created.headers.get('etag')! });
    expect(res.status).toBe(200);
  });

  it('gives every one of many concurrent updates its own version', async () => {
    const client = api.newProject();
    const created = await client.post('/Patient', patientBody());
    const updates = await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        client.put(`/Patient/${created.body.id}`, { ...created.body, birthDate: `19${10 + i}-01-01` }),
      ),
    );
    expect(updates.map((u) => u.status)).toEqual(Array(10).fill(200));
    const versions = new Set(updates.map((u) => (u.body.meta as { versionId: string }).versionId));
    expect(versions.size).toBe(10);
    const history = await client.get(`/Patient/${created.body.id}/_history?_count=100`);
    expect(history.body.entry).toHaveLength(11);
  });

  it('lets only one of two concurrent If-Match updates of the same version win', async () => {
    const client = api.newProject();
    const created = await client.post('/Patient', patientBody());
    const etag = created.headers.get('etag')!;
    const [a, b] = await Promise.all([
      client.put(`/Patient/${created.body.id}`, { ...created.body, gender: 'female' }, { 'If-Match': etag }),
      client.put(`/Patient/${created.body.id}`, { ...created.body, gender: 'other' }, { 'If-Match': etag }),
    ]);
    expect([a.status, b.status].sort()).toEqual([200, 412]);
  });
});

describe('delete', () => {
  it('makes reads answer 410 Gone', async () => {
    const client = api.newProject();
    const created = await client.post('/Patient', patientBody());
    const res = await client.delete(`/Patient/${created.body.id}`);
    expect(res.status).toBe(200);
    const read = await client.get(`/Patient/${created.body.id}`);
    expect(read.status).toBe(410);
    expect((read.body.issue as { code: string }[])[0].code).toBe('deleted');
  });

  it('is idempotent', async () => {
    const client = api.newProject();
    const created = await client.post('/Patient', patientBody());
    await client.delete(`/Patient/${created.body.id}`);
    expect((await client.delete(`/Patient/${created.body.id}`)).status).toBe(200);
  });

  it('gives 404 for an id that never existed', async () => {
    expect((await api.newProject().delete('/Patient/never-was')).status).toBe(404);
  });

  it('gives 412 for a stale If-Match and keeps the resource', async () => {
    const client = api.newProject();
    const created = await client.post('/Patient', patientBody());
    const res = await client.delete(`/Patient/${created.body.id}`, { 'If-Match': 'W/"00000000-0000-0000-0000-000000000000"' });
    expect(res.status).toBe(412);
    expect((await client.get(`/Patient/${created.body.id}`)).status).toBe(200);
  });

  it('allows the resource to be re-created by update afterwards', async () => {
    const client = api.newProject();
    const created = await client.post('/Patient', patientBody());
    await client.delete(`/Patient/${created.body.id}`);
    const res = await client.put(`/Patient/${created.body.id}`, { ...created.body });
    expect(res.status).toBe(201);
    expect((await client.get(`/Patient/${created.body.id}`)).status).toBe(200);
  });
});

describe('history', () => {
  it('lists versions of a resource newest first, deletes included', async () => {
    const client = api.newProject();
    const created = await client.post('/Patient', patientBody());
    const id = created.body.id as string;
    await client.put(`/Patient/${id}`, { ...created.body, gender: 'female' });
    await client.delete(`/Patient/${id}`);
    const res = await client.get(`/Patient/${id}/_history`);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ resourceType: 'Bundle', type: 'history' });
    const entries = res.body.entry as { request: { method: string }; resource?: { gender: string } }[];
    expect(entries.map((e) => e.request.method)).toEqual(['DELETE', 'PUT', 'POST']);
    expect(entries[0].resource).toBeUndefined();
    expect(entries[1].resource?.gender).toBe('female');
  });

  it('lists the history of a type within the caller project only', async () => {
    const client = api.newProject();
    const other = api.newProject();
    await client.post('/Patient', patientBody());
    await client.post('/Patient', patientBody());
    await other.post('/Patient', patientBody());
    const res = await client.get('/Patient/_history');
    expect(res.body.entry).toHaveLength(2);
  });

  it('pages with _count and a next link', async () => {
    const client = api.newProject();
    for (let i = 0; i < 3; i++) await client.post('/Patient', patientBody());
    const res = await client.get('/Patient/_history?_count=2');
    expect(res.body.entry).toHaveLength(2);
    const next = (res.body.link as { relation: string; url: string }[]).find((l) => l.relation === 'next');
    expect(next?.url).toContain('_cursor=');
    const page2 = await client.get(next!.url.replace('http://localhost/fhir/R4', ''));
    expect(page2.body.entry).toHaveLength(1);
  });

  it('gives 404 for the history of an unknown resource', async () => {
    expect((await api.newProject().get('/Patient/nope/_history')).status).toBe(404);
  });
});

describe('patch', () => {
  it('applies a JSON Patch and writes a new version', async () => {
    const client = api.newProject();
    const created = await client.post('/Patient', patientBody());
    const res = await client.patch(`/Patient/${created.body.id}`, [{ op: 'replace', path: '/gender', value: 'female' }]);
    expect(res.status).toBe(200);
    expect(res.body.gender).toBe('female');
  });

  it('gives 400 when a test operation fails and changes nothing', async () => {
    const client = api.newProject();
    const created = await client.post('/Patient', patientBody());
    const res = await client.patch(`/Patient/${created.body.id}`, [
      { op: 'replace', path: '/gender', value: 'female' },
      { op: 'test', path: '/birthDate', value: '2000-01-01' },
    ]);
    expect(res.status).toBe(400);
    expect((await client.get(`/Patient/${created.body.id}`)).body.gender).toBe('male');
  });

  it('gives 400 when the patched resource is invalid', async () => {
    const client = api.newProject();
    const created = await client.post('/Patient', patientBody());
    const res = await client.patch(`/Patient/${created.body.id}`, [{ op: 'add', path: '/birthDate', value: 'not-a-date' }]);
    expect(res.status).toBe(400);
    expect(res.body.issue).toEqual([expect.objectContaining({ expression: ['Patient.birthDate'] })]);
  });

  it('gives 400 for a malformed patch document', async () => {
    const client = api.newProject();
    const created = await client.post('/Patient', patientBody());
    const res = await client.patch(`/Patient/${created.body.id}`, { op: 'replace' });
    expect(res.status).toBe(400);
  });

  it('refuses a patch that changes the id', async () => {
    const client = api.newProject();
    const created = await client.post('/Patient', patientBody());
    const res = await client.patch(`/Patient/${created.body.id}`, [{ op: 'replace', path: '/id', value: 'x' }]);
    expect(res.status).toBe(400);
  });

  it('honours If-Match', async () => {
    const client = api.newProject();
    const created = await client.post('/Patient', patientBody());
    const res = await client.patch(`/Patient/${created.body.id}`, [{ op: 'replace', path: '/gender', value: 'female' }], {
      'If-Match': 'W/"00000000-0000-0000-0000-000000000000"',
    });
    expect(res.status).toBe(412);
  });
});

describe('Prefer', () => {
  it('return=minimal gives an empty body with headers', async () => {
    const res = await api.newProject().post('/Patient', patientBody(), { Prefer: 'return=minimal' });
    expect(res.status).toBe(201);
    expect(res.text).toBe('');
    expect(res.headers.get('location')).toContain('/Patient/');
  });

  it('return=OperationOutcome gives an OperationOutcome', async () => {
    const res = await api.newProject().post('/Patient', patientBody(), { Prefer: 'respond-async, return=OperationOutcome' });
    expect(res.status).toBe(201);
    expect(res.body.resourceType).toBe('OperationOutcome');
  });

  it('return=representation gives the resource', async () => {
    const res = await api.newProject().post('/Patient', patientBody(), { Prefer: 'return=representation' });
    expect(res.body.resourceType).toBe('Patient');
  });
});

describe('project isolation', () => {
  it('hides resources of another project on read', async () => {
    const created = await api.newProject().post('/Patient', patientBody());
    expect((await api.newProject().get(`/Patient/${created.body.id}`)).status).toBe(404);
  });

  it('hides resources of another project on delete and patch', async () => {
    const owner = api.newProject();
    const created = await owner.post('/Patient', patientBody());
    const intruder = api.newProject();
    expect((await intruder.delete(`/Patient/${created.body.id}`)).status).toBe(404);
    expect((await intruder.patch(`/Patient/${created.body.id}`, [{ op: 'remove', path: '/gender' }])).status).toBe(404);
    expect((await owner.get(`/Patient/${created.body.id}`)).body.gender).toBe('male');
  });

  it('never overwrites another project resource through update', async () => {
    const owner = api.newProject();
    const created = await owner.post('/Patient', patientBody());
    const res = await api.newProject().put(`/Patient/${created.body.id}`, { ...created.body, gender: 'female' });
    // Ids are server-wide: the id is in use (409), and nothing else about it is told.
    expect(res.status).toBe(409);
    expect((await owner.get(`/Patient/${created.body.id}`)).body.gender).toBe('male');
  });

  it('hides history of another project resource', async () => {
    const created = await api.newProject().post('/Patient', patientBody());
    expect((await api.newProject().get(`/Patient/${created.body.id}/_history`)).status).toBe(404);
  });
});

describe('index limits', () => {
  it('stores resources whose token, uri and reference values are very long', async () => {
    const client = api.newProject();
    const long = 'é'.repeat(3000);
    const res = await client.post('/Patient', patientBody({
      identifier: [{ system: `http://example.org/${long}`, value: long }],
      managingOrganization: { reference: `http://example.org/fhir/Organization/${long}` },
      name: [{ family: long }],
    }));
    expect(res.status).toBe(201);
  });
});

describe('conditional read', () => {
  it('answers 304 without a body when If-None-Match names the current version', async () => {
    const client = api.newProject();
    const created = await client.post('/Patient', patientBody());
    const res = await client.get(`/Patient/${created.body.id}`, { 'If-None-Match': created.headers.get('etag')! });
    expect(res.status).toBe(304);
    expect(res.text).toBe('');
    expect(res.headers.get('etag')).toBe(created.headers.get('etag'));
  });

  it('answers 200 when If-None-Match names an older version', async () => {
    const client = api.newProject();
    const created = await client.post('/Patient', patientBody());
    await client.put(`/Patient/${created.body.id}`, { ...created.body, gender: 'female' });
    const res = await client.get(`/Patient/${created.body.id}`, { 'If-None-Match': created.headers.get('etag')! });
    expect(res.status).toBe(200);
    expect(res.body.gender).toBe('female');
  });

  it('answers 304 with ETag and Last-Modified when unchanged since If-Modified-Since', async () => {
    const client = api.newProject();
    const created = await client.post('/Patient', patientBody());
    const res = await client.get(`/Patient/${created.body.id}`, { 'If-Modified-Since': created.headers.get('last-modified')! });
    expect(res.status).toBe(304);
    expect(res.text).toBe('');
    expect(res.headers.get('etag')).toBe(created.headers.get('etag'));
    expect(res.headers.get('last-modified')).toBe(created.headers.get('last-modified'));
  });

  it('answers 200 when the resource changed after If-Modified-Since', async () => {
    const client = api.newProject();
    const created = await client.post('/Patient', patientBody());
    const before = new Date(Date.parse(created.body.meta.lastUpdated) - 60_000).toUTCString();
    const res = await client.get(`/Patient/${created.body.id}`, { 'If-Modified-Since': before });
    expect(res.status).toBe(200);
    expect(res.body.id).toBe(created.body.id);
  });

  it('ignores an If-Modified-Since later than the server clock', async () => {
    const client = api.newProject();
    const created = await client.post('/Patient', patientBody());
    const future = new Date(Date.now() + 86_400_000).toUTCString();
    const res = await client.get(`/Patient/${created.body.id}`, { 'If-Modified-Since': future });
    expect(res.status).toBe(200);
  });

  it('ignores If-Modified-Since when If-None-Match is present', async () => {
    const client = api.newProject();
    const created = await client.post('/Patient', patientBody());
    const updated = await client.put(`/Patient/${created.body.id}`, { ...created.body, gender: 'female' });
    const res = await client.get(`/Patient/${created.body.id}`, {
      'If-None-Match': created.headers.get('etag')!,
      'If-Modified-Since': updated.headers.get('last-modified')!,
    });
    expect(res.status).toBe(200);
    expect(res.body.gender).toBe('female');
  });

  it('answers 304 on vread when that version is unchanged since If-Modified-Since', async () => {
    const client = api.newProject();
    const created = await client.post('/Patient', patientBody());
    const versionId = created.body.meta.versionId;
    const res = await client.get(`/Patient/${created.body.id}/_history/${versionId}`, { 'If-Modified-Since': created.headers.get('last-modified')! });
    expect(res.status).toBe(304);
    expect(res.headers.get('etag')).toBe(`W/"${versionId}"`);
  });
});
