import { MedplumClient } from '@medplum/core';
import { describe, expect, it } from 'vitest';
import { projectClient, useTestServer, type ProjectClient } from '../helpers/server.js';
import { addMemberClient } from '../auth/helpers.js';

/** `Resource/$validate`: always 200 with an OperationOutcome listing every issue; nothing written. */

const api = await useTestServer();
const as = (projectId: string, token: string) => projectClient(api.fhir, projectId, async () => token);

const patient = { resourceType: 'Patient', name: [{ family: 'Smith', given: ['Alice'] }], gender: 'female' };
const badPatient = { resourceType: 'Patient', gender: 'woman', name: 'Alice' };

const asParameters = (resource: unknown, extra: Record<string, unknown>[] = []) => ({
  resourceType: 'Parameters',
  parameter: [{ name: 'resource', resource }, ...extra],
});

const texts = (body: { issue: { details?: { text?: string } }[] }) => body.issue.map((i) => i.details?.text);
interface Issue {
  severity: string;
  code: string;
  details: { text: string };
  expression?: string[];
}
const errorsOf = (body: { issue: Issue[] }): Issue[] => body.issue.filter((i) => i.severity === 'error');

async function count(p: ProjectClient, type: string): Promise<number> {
  const res = await p.get(`/${type}?_summary=count`);
  return res.body.total as number;
}

describe('$validate', () => {
  it('answers 200 with one informational "All OK" issue for a valid resource in a Parameters body', async () => {
    const p = api.newProject();
    const res = await p.post('/Patient/$validate', asParameters(patient));
    expect(res.status, res.text).toBe(200);
    expect(res.body.resourceType).toBe('OperationOutcome');
    expect(res.body.issue).toEqual([{ severity: 'information', code: 'informational', details: { text: 'All OK' } }]);
  });

  it('takes the bare resource as the body', async () => {
    const p = api.newProject();
    const res = await p.post('/Patient/$validate', patient);
    expect(res.status, res.text).toBe(200);
    expect(texts(res.body)).toEqual(['All OK']);
  });

  it('lists every error of an invalid resource with its expression, still 200, and writes nothing', async () => {
    const p = api.newProject();
    const res = await p.post('/Patient/$validate', badPatient);
    expect(res.status, res.text).toBe(200);
    const found = errorsOf(res.body);
    expect(found).toHaveLength(2);
    expect(found.map((i) => i.expression)).toEqual([['Patient.gender'], ['Patient.name']]);
    expect(await count(p, 'Patient')).toBe(0);
  });

  it('does not write a valid resource either', async () => {
    const p = api.newProject();
    await p.post('/Patient/$validate', asParameters(patient, [{ name: 'mode', valueCode: 'create' }]));
    expect(await count(p, 'Patient')).toBe(0);
  });

  it('reports a body without resourceType as an issue of the resource', async () => {
    const p = api.newProject();
    const res = await p.post('/Patient/$validate', { gender: 'female' });
    expect(res.status).toBe(200);
    expect(errorsOf(res.body)[0]).toMatchObject({ code: 'structure', expression: ['resourceType'] });
  });

  it('reports a resource type that does not match the URL as an error issue', async () => {
    const p = api.newProject();
    const res = await p.post('/Observation/$validate', patient);
    expect(res.status).toBe(200);
    expect(errorsOf(res.body)[0].details.text).toContain('does not match the URL type "Observation"');
  });

  it('validates the stored resource at instance level when no resource is given (GET)', async () => {
    const p = api.newProject();
    const created = await p.post('/Patient', patient);
    const res = await p.get(`/Patient/${created.body.id}/$validate`);
    expect(res.status, res.text).toBe(200);
    expect(texts(res.body)).toEqual(['All OK']);
  });

  it('answers 404 at instance level for a resource that does not exist', async () => {
    const p = api.newProject();
    const res = await p.get('/Patient/does-not-exist/$validate');
    expect(res.status).toBe(404);
  });

  it('refuses a type-level call without a resource with 400', async () => {
    const p = api.newProject();
    const res = await p.get('/Patient/$validate');
    expect(res.status).toBe(400);
    expect(res.body.issue[0].details.text).toContain('needs the resource');
  });

  it('refuses an unknown mode with 400', async () => {
    const p = api.newProject();
    const res = await p.post('/Patient/$validate', asParameters(patient, [{ name: 'mode', valueCode: 'merge' }]));
    expect(res.status).toBe(400);
    expect(res.body.issue[0].details.text).toContain('"mode"');
  });

  it('takes mode from the query string with a bare body', async () => {
    const p = api.newProject();
    const res = await p.post('/Patient/$validate?mode=merge', patient);
    expect(res.status).toBe(400);
  });

  it('refuses mode=update at type level with 400', async () => {
    const p = api.newProject();
    const res = await p.post('/Patient/$validate', asParameters(patient, [{ name: 'mode', valueCode: 'update' }]));
    expect(res.status).toBe(400);
    expect(res.body.issue[0].details.text).toContain('on the instance');
  });

  it('with mode=update reports an id that does not match the URL', async () => {
    const p = api.newProject();
    const created = await p.post('/Patient', patient);
    const res = await p.post(`/Patient/${created.body.id}/$validate`, asParameters({ ...patient, id: 'other' }, [{ name: 'mode', valueCode: 'update' }]));
    expect(res.status).toBe(200);
    expect(errorsOf(res.body)[0].details.text).toBe(`The body id "other" does not match the URL id "${created.body.id}"`);
  });

  it('with mode=update accepts a matching update and leaves the stored version alone', async () => {
    const p = api.newProject();
    const created = await p.post('/Patient', patient);
    const changed = { ...created.body, gender: 'male' };
    const res = await p.post(`/Patient/${created.body.id}/$validate`, asParameters(changed, [{ name: 'mode', valueCode: 'update' }]));
    expect(texts(res.body)).toEqual(['All OK']);
    const read = await p.get(`/Patient/${created.body.id}`);
    expect(read.body.gender).toBe('female');
    expect(read.body.meta.versionId).toBe(created.body.meta.versionId);
  });

  it('with mode=delete says All OK for a resource the caller may delete, and keeps it', async () => {
    const p = api.newProject();
    const created = await p.post('/Patient', patient);
    const res = await p.post(`/Patient/${created.body.id}/$validate`, { resourceType: 'Parameters', parameter: [{ name: 'mode', valueCode: 'delete' }] });
    expect(res.status, res.text).toBe(200);
    expect(texts(res.body)).toEqual(['All OK']);
    expect((await p.get(`/Patient/${created.body.id}`)).status).toBe(200);
  });

  it('with mode=delete reports a resource that does not exist as a not-found issue', async () => {
    const p = api.newProject();
    const res = await p.get('/Patient/missing/$validate?mode=delete');
    expect(res.status).toBe(200);
    expect(res.body.issue[0]).toMatchObject({ severity: 'error', code: 'not-found' });
  });

  it('with mode=create and mode=delete reports what the AccessPolicy forbids as a forbidden issue, not a 403', async () => {
    const admin = api.newProject();
    const observation = await admin.post('/Observation', { resourceType: 'Observation', status: 'final', code: { text: 'weight' } });
    const policy = await admin.post('/AccessPolicy', {
      resourceType: 'AccessPolicy',
      name: 'observations read-only',
      resource: [{ resourceType: 'Observation', readonly: true }],
    });
    const member = await addMemberClient(api, admin, { accessPolicy: `AccessPolicy/${policy.body.id}` });
    const client = as(admin.projectId, member.token);
    const body = { resourceType: 'Observation', status: 'final', code: { text: 'x' } };
    const plain = await client.post('/Observation/$validate', body);
    expect(texts(plain.body)).toEqual(['All OK']);
    const create = await client.post('/Observation/$validate?mode=create', body);
    expect(create.status).toBe(200);
    expect(create.body.issue).toEqual([
      { severity: 'error', code: 'forbidden', details: { text: 'Your access policy allows Observation resources read-only' } },
    ]);
    const remove = await client.get(`/Observation/${observation.body.id}/$validate?mode=delete`);
    expect(remove.body.issue[0]).toMatchObject({ severity: 'error', code: 'forbidden' });
  });

  it('with mode=create reports a write only project admins may make', async () => {
    const admin = api.newProject();
    const member = await addMemberClient(api, admin);
    const client = as(admin.projectId, member.token);
    const res = await client.post('/AccessPolicy/$validate?mode=create', { resourceType: 'AccessPolicy', name: 'x' });
    expect(res.status).toBe(200);
    expect(res.body.issue[0]).toMatchObject({ severity: 'error', code: 'forbidden' });
  });

  it('answers MedplumClient.validateResource, which posts the bare resource', async () => {
    const p = api.newProject();
    const { clientId, clientSecret } = await api.credentialsOf(p);
    const medplum = new MedplumClient({ baseUrl: `${api.url}/`, fetch, cacheTime: 0 });
    await medplum.startClientLogin(clientId, clientSecret);
    const clean = await medplum.validateResource({ resourceType: 'Patient', name: [{ given: ['Alice'], family: 'Smith' }] });
    expect((clean.issue as Issue[] | undefined)?.map((i) => i.details.text)).toEqual(['All OK']);
    const broken = await medplum.validateResource({ resourceType: 'Patient', gender: 'woman' } as never);
    expect(broken.issue?.[0]).toMatchObject({ severity: 'error', code: 'code-invalid', expression: ['Patient.gender'] });
  });

  it('is a GraphQL field per type that gives the REST answer', async () => {
    const p = api.newProject();
    const rest = await p.post('/Patient/$validate', badPatient);
    const res = await api.raw('/fhir/R4/$graphql', {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', ...(await p.authHeaders()) },
      body: JSON.stringify({
        query: 'query ($resource: JSON) { PatientValidate(resource: $resource) { issue { severity code details { text } expression } } }',
        variables: { resource: badPatient },
      }),
    });
    const body = (await res.json()) as { data?: { PatientValidate: { issue: unknown[] } }; errors?: unknown[] };
    expect(body.errors).toBeUndefined();
    // GraphQL answers FHIR codes as they are (`code-invalid`), and null for an absent list.
    const asGraphQL = (i: Issue) => ({ ...i, expression: i.expression ?? null });
    expect(body.data?.PatientValidate.issue).toEqual((rest.body.issue as Issue[]).map(asGraphQL));
  });
});
