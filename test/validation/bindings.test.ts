import { describe, expect, it } from 'vitest';
import type { OperationOutcomeIssue } from '../../src/fhir/types.js';
import { patientBody, useTestServer, type TestResponse } from '../helpers/server.js';

/**
 * Writes are refused when a `code` element with a required binding holds a code outside its
 * value set (when the value set expands from the definitions).
 */
const api = await useTestServer();

function issuesOf(res: TestResponse): OperationOutcomeIssue[] {
  expect(res.body.resourceType).toBe('OperationOutcome');
  return res.body.issue as OperationOutcomeIssue[];
}

describe('required bindings on write', () => {
  it('refuses a Patient whose gender is not an administrative-gender code', async () => {
    const client = api.newProject();
    const res = await client.post('/Patient', patientBody({ gender: 'robot' }));
    expect(res.status).toBe(400);
    const [issue] = issuesOf(res);
    expect(issue).toMatchObject({ severity: 'error', code: 'code-invalid', expression: ['Patient.gender'] });
    expect(issue?.details?.text).toContain('"robot"');
    expect(issue?.details?.text).toContain('http://hl7.org/fhir/ValueSet/administrative-gender');
    expect(issue?.details?.text).toContain('male, female, other, unknown');
  });

  it('accepts every code of the value set', async () => {
    const client = api.newProject();
    for (const gender of ['male', 'female', 'other', 'unknown']) {
      const res = await client.post('/Patient', patientBody({ gender }));
      expect(res.status, gender).toBe(201);
    }
  });

  it('compares codes case-sensitively', async () => {
    const client = api.newProject();
    const res = await client.post('/Patient', patientBody({ gender: 'Male' }));
    expect(res.status).toBe(400);
    expect(issuesOf(res)[0]).toMatchObject({ code: 'code-invalid', expression: ['Patient.gender'] });
  });

  it('checks codes inside data types', async () => {
    const client = api.newProject();
    const res = await client.post('/Patient', patientBody({ telecom: [{ system: 'pigeon', value: 'coo' }] }));
    expect(res.status).toBe(400);
    expect(issuesOf(res)[0]).toMatchObject({ code: 'code-invalid', expression: ['Patient.telecom[0].system'] });
  });

  it('checks each item of a repeating code element', async () => {
    const client = api.newProject();
    const res = await client.post('/AllergyIntolerance', {
      resourceType: 'AllergyIntolerance',
      patient: { reference: 'Patient/example' },
      category: ['food', 'weather'],
    });
    expect(res.status).toBe(400);
    expect(issuesOf(res)).toEqual([expect.objectContaining({ code: 'code-invalid', expression: ['AllergyIntolerance.category[1]'] })]);
  });

  it('checks codes of contained resources', async () => {
    const client = api.newProject();
    const observation = { resourceType: 'Observation', id: 'o1', status: 'guessed', code: { text: 'weight' } };
    const res = await client.post('/Patient', patientBody({ contained: [observation] }));
    expect(res.status).toBe(400);
    expect(issuesOf(res)[0]).toMatchObject({ code: 'code-invalid', expression: ['Patient.contained[0].status'] });
  });

  it('refuses an update that writes an invalid code', async () => {
    const client = api.newProject();
    const created = await client.post('/Patient', patientBody());
    const res = await client.put(`/Patient/${created.body.id}`, { ...created.body, gender: 'robot' });
    expect(res.status).toBe(400);
    expect(issuesOf(res)[0]).toMatchObject({ code: 'code-invalid', expression: ['Patient.gender'] });
  });

  it('refuses a patch that writes an invalid code', async () => {
    const client = api.newProject();
    const created = await client.post('/Patient', patientBody());
    const res = await client.patch(`/Patient/${created.body.id}`, [{ op: 'replace', path: '/gender', value: 'robot' }], {
      'Content-Type': 'application/json-patch+json',
    });
    expect(res.status).toBe(400);
    expect(issuesOf(res)[0]).toMatchObject({ code: 'code-invalid', expression: ['Patient.gender'] });
  });

  it('accepts any code where the value set does not expand from the definitions', async () => {
    // Attachment.contentType is bound (required) to BCP-13 mime types, which no definition lists.
    const client = api.newProject();
    const res = await client.post('/Patient', patientBody({ photo: [{ contentType: 'application/x-flint-test' }] }));
    expect(res.status).toBe(201);
  });

  it('accepts the admin resource types where a resource type is required', async () => {
    const client = api.newProject();
    const res = await client.post('/SearchParameter', {
      resourceType: 'SearchParameter',
      url: 'http://example.org/SearchParameter/project-name-test',
      name: 'project-name-test',
      status: 'draft',
      description: 'test',
      code: 'name-test',
      base: ['Project'],
      type: 'string',
      expression: 'Project.name',
    });
    expect(res.status, JSON.stringify(res.body.issue)).toBe(201);
  });

  it('shortens the list of allowed codes of a large value set', async () => {
    const client = api.newProject();
    const res = await client.post('/Questionnaire', { resourceType: 'Questionnaire', status: 'draft', subjectType: ['Robot'] });
    expect(res.status).toBe(400);
    const [issue] = issuesOf(res);
    expect(issue).toMatchObject({ code: 'code-invalid', expression: ['Questionnaire.subjectType[0]'] });
    expect(issue?.details?.text).toMatch(/Account, .*, … \(\d+ codes\)$/);
  });
});
