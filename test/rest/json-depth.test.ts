import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { patientBody, useTestServer, type ProjectClient } from '../helpers/server.js';

const api = await useTestServer();

interface Issue {
  code: string;
  details: { text: string };
  expression?: string[];
}

const DEEP = 100_000;
const deepArray = () => `${'['.repeat(DEEP)}${']'.repeat(DEEP)}`;
const firstIssue = (body: { issue: Issue[] }) => body.issue[0];

async function newPatientId(client: ProjectClient): Promise<string> {
  return (await client.post('/Patient', patientBody())).body.id as string;
}

describe('nesting depth', () => {
  it('refuses a resource body nested 100,000 levels deep with 400', async () => {
    const client = api.newProject();
    const res = await client.request('POST', '/Patient', `{"resourceType":"Patient","extension":${deepArray()}}`);
    expect(res.status).toBe(400);
    expect(firstIssue(res.body).details.text).toMatch(/nested more than \d+ levels/);
  });

  it('refuses a JSON Patch value nested 100,000 levels deep with 400', async () => {
    const client = api.newProject();
    const id = await newPatientId(client);
    const res = await client.patch(`/Patient/${id}`, `[{"op":"add","path":"/extension","value":${deepArray()}}]`);
    expect(res.status).toBe(400);
    expect(firstIssue(res.body).details.text).toMatch(/nested more than \d+ levels/);
  });

  it('refuses a transaction Bundle with an entry nested 100,000 levels deep with 400', async () => {
    const client = api.newProject();
    const entry = `{"fullUrl":"urn:uuid:${randomUUID()}","request":{"method":"POST","url":"Patient"},"resource":{"resourceType":"Patient","extension":${deepArray()}}}`;
    const res = await client.request('POST', '/', `{"resourceType":"Bundle","type":"transaction","entry":[${entry}]}`);
    expect(res.status).toBe(400);
    expect(res.text).not.toContain('call stack');
  });
});
