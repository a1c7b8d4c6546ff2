import { describe, expect, it } from 'vitest';
import { patientBody, useTestServer, type ProjectClient } from '../helpers/server.js';

const api = await useTestServer();

interface Issue {
  code: string;
  details: { text: string };
  expression?: string[];
}

const json = (text: string) => new TextEncoder().encode(text);
const firstIssue = (body: { issue: Issue[] }) => body.issue[0];

async function newPatientId(client: ProjectClient): Promise<string> {
  return (await client.post('/Patient', patientBody())).body.id as string;
}

describe('content types of resource bodies', () => {
  it('refuses a POST body without Content-Type with 415', async () => {
    const res = await api.newProject().request('POST', '/Patient', json(JSON.stringify(patientBody())));
    expect(res.status).toBe(415);
    expect(firstIssue(res.body).details.text).toContain('Content-Type');
  });

  it('refuses a PUT body without Content-Type with 415', async () => {
    const client = api.newProject();
    const id = await newPatientId(client);
    const res = await client.request('PUT', `/Patient/${id}`, json(JSON.stringify(patientBody({ id }))));
    expect(res.status).toBe(415);
  });

  it('refuses a PATCH body without Content-Type with 415', async () => {
    const client = api.newProject();
    const id = await newPatientId(client);
    const res = await client.request('PATCH', `/Patient/${id}`, json('[{"op":"test","path":"/gender","value":"male"}]'));
    expect(res.status).toBe(415);
  });

  it('refuses a batch Bundle without Content-Type with 415', async () => {
    const res = await api.newProject().request('POST', '/', json('{"resourceType":"Bundle","type":"batch"}'));
    expect(res.status).toBe(415);
  });

  it('refuses an operation body without Content-Type with 415', async () => {
    const body = { resourceType: 'Parameters', parameter: [{ name: 'code', valueCode: 'male' }, { name: 'system', valueUri: 'http://hl7.org/fhir/administrative-gender' }] };
    const res = await api.newProject().request('POST', '/CodeSystem/$lookup', json(JSON.stringify(body)));
    expect(res.status).toBe(415);
  });

  it('refuses a charset other than UTF-8 with 415', async () => {
    const res = await api.newProject().request('POST', '/Patient', patientBody(), { 'Content-Type': 'application/fhir+json; charset=iso-8859-1' });
    expect(res.status).toBe(415);
    expect(firstIssue(res.body).details.text).toContain('UTF-8');
  });

  it('refuses a PATCH with a charset other than UTF-8 with 415', async () => {
    const client = api.newProject();
    const id = await newPatientId(client);
    const res = await client.patch(`/Patient/${id}`, [{ op: 'test', path: '/gender', value: 'male' }], { 'Content-Type': 'application/json-patch+json; charset=utf-16' });
    expect(res.status).toBe(415);
  });

  it('accepts charset=utf-8 in any letter case', async () => {
    const res = await api.newProject().request('POST', '/Patient', patientBody(), { 'Content-Type': 'application/fhir+json; Charset="UTF-8"' });
    expect(res.status).toBe(201);
  });

  it('refuses invalid UTF-8 in a resource body with 400 instead of storing U+FFFD', async () => {
    const client = api.newProject();
    const text = JSON.stringify(patientBody({ name: [{ family: 'XX' }] }));
    const bytes = json(text);
    const at = text.indexOf('XX');
    bytes[at] = 0xc3; // a lead byte followed by an ASCII byte: not UTF-8
    const res = await client.request('POST', '/Patient', bytes, { 'Content-Type': 'application/fhir+json' });
    expect(res.status).toBe(400);
    expect(firstIssue(res.body).details.text).toContain('UTF-8');
  });
});

describe('writes whose answer the client does not accept', () => {
  const XML = { Accept: 'application/fhir+xml' };

  function expectNotAcceptable(res: { status: number; body: any; text: string }): void {
    expect(res.status, res.text).toBe(406);
    expect(res.body.resourceType).toBe('OperationOutcome');
    expect(firstIssue(res.body).code).toBe('not-supported');
    expect(firstIssue(res.body).details.text).toContain('application/fhir+json');
  }

  it('are refused with 406 before anything is written, as reads are', async () => {
    const client = api.newProject();
    const id = await newPatientId(client);
    const version = (await client.get(`/Patient/${id}`)).body.meta.versionId;
    const marker = `xml-${id}`;
    expectNotAcceptable(await client.post('/Patient', patientBody({ name: [{ family: marker }] }), XML));
    expectNotAcceptable(await client.post('/Patient', patientBody({ name: [{ family: marker }] }), { ...XML, 'If-None-Exist': `name=${marker}` }));
    expectNotAcceptable(await client.put(`/Patient/${id}`, patientBody({ id, gender: 'female' }), XML));
    expectNotAcceptable(await client.put(`/Patient?_id=${id}`, patientBody({ id, gender: 'female' }), XML));
    expectNotAcceptable(await client.patch(`/Patient/${id}`, [{ op: 'replace', path: '/gender', value: 'female' }], XML));
    expectNotAcceptable(await client.delete(`/Patient/${id}`, XML));
    expectNotAcceptable(await client.delete(`/Patient?_id=${id}`, XML));
    expectNotAcceptable(await client.post('/Patient?_format=xml', patientBody({ name: [{ family: marker }] })));
    expect((await client.get(`/Patient/${id}`)).body.meta.versionId).toBe(version);
    expect((await client.get(`/Patient?name=${marker}&_total=accurate`)).body.total).toBe(0);
  });
});

describe('answers in FHIR JSON only, checked by the router for every route but those that choose their own', () => {
  const XML = { Accept: 'application/fhir+xml' };

  it('refuses XML with 406 on searches, history, metadata, operations and Bundles', async () => {
    const client = api.newProject();
    const id = await newPatientId(client);
    const answers = [
      await client.get('/Patient?gender=female', XML),
      await client.get('/?_type=Patient', XML),
      await client.post('/Patient/_search', 'gender=female', { ...XML, 'Content-Type': 'application/x-www-form-urlencoded' }),
      await client.get(`/Patient/${id}/_history`, XML),
      await client.get('/metadata', XML),
      await client.get(`/Patient/${id}/$everything`, XML),
      await client.get('/Patient?_format=xml'),
      await client.post('/', { resourceType: 'Bundle', type: 'batch', entry: [] }, XML),
    ];
    for (const res of answers) {
      expect(res.status, res.text).toBe(406);
      expect(res.body.resourceType).toBe('OperationOutcome');
    }
  });

  it('leaves a Binary read its own content type and $csv its CSV', async () => {
    const client = api.newProject();
    const binary = await client.request('POST', '/Binary', json('%PDF-1.4'), { 'Content-Type': 'application/pdf' });
    expect(binary.status, binary.text).toBe(201);
    const bytes = await fetch(`${api.fhir}/Binary/${binary.body.id}`, { headers: { ...(await client.authHeaders()), Accept: 'application/pdf' } });
    expect(bytes.status).toBe(200);
    expect(bytes.headers.get('content-type')).toContain('application/pdf');
    const csv = await fetch(`${api.fhir}/Patient/$csv?_fields=id`, { headers: { ...(await client.authHeaders()), Accept: 'text/csv' } });
    expect(csv.status, await csv.clone().text()).toBe(200);
  });
});
