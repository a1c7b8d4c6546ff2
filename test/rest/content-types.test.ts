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
