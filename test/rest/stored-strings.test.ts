import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { patientBody, useTestServer, type ProjectClient } from '../helpers/server.js';

const api = await useTestServer();

interface Issue {
  code: string;
  details: { text: string };
  expression?: string[];
}

const firstIssue = (body: { issue: Issue[] }) => body.issue[0];

async function newPatientId(client: ProjectClient): Promise<string> {
  return (await client.post('/Patient', patientBody())).body.id as string;
}

describe('strings', () => {
  it('refuses a lone UTF-16 surrogate in a created resource with 400 naming the element', async () => {
    const client = api.newProject();
    const res = await client.request('POST', '/Patient', '{"resourceType":"Patient","name":[{"family":"Sm\\ud800ith"}]}');
    expect(res.status).toBe(400);
    expect(firstIssue(res.body).expression).toEqual(['Patient.name[0].family']);
    expect(firstIssue(res.body).details.text).toContain('surrogate');
  });

  it('refuses a lone UTF-16 surrogate added by a patch with 400 naming the element', async () => {
    const client = api.newProject();
    const id = await newPatientId(client);
    const res = await client.patch(`/Patient/${id}`, '[{"op":"add","path":"/name/0/family","value":"\\udc00"}]');
    expect(res.status).toBe(400);
    expect(firstIssue(res.body).expression).toEqual(['Patient.name[0].family']);
  });

  it('refuses NUL in a string of a created resource with 400 naming the element', async () => {
    const client = api.newProject();
    const res = await client.post('/Patient', patientBody({ name: [{ family: 'a\u0000b' }] }));
    expect(res.status).toBe(400);
    expect(firstIssue(res.body).expression).toEqual(['Patient.name[0].family']);
    expect(firstIssue(res.body).details.text).toContain('U+0000');
  });

  it('refuses NUL in a CodeSystem concept with 400 naming the element', async () => {
    const client = api.newProject();
    const res = await client.post('/CodeSystem', {
      resourceType: 'CodeSystem',
      url: `http://example.org/cs/${randomUUID()}`,
      status: 'active',
      content: 'complete',
      concept: [{ code: 'a', display: 'x\u0000y' }],
    });
    expect(res.status).toBe(400);
    expect(firstIssue(res.body).expression).toEqual(['CodeSystem.concept[0].display']);
  });

  it('refuses NUL in an update of a ProjectMembership with 400', async () => {
    const client = api.newProject();
    const memberships = await client.get('/ProjectMembership');
    const membership = memberships.body.entry[0].resource;
    const res = await client.put(`/ProjectMembership/${membership.id}`, { ...membership, externalId: 'ext\u0000' });
    expect(res.status).toBe(400);
    expect(firstIssue(res.body).expression).toEqual(['ProjectMembership.externalId']);
  });
});
