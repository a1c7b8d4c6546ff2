import { describe, expect, it } from 'vitest';
import { useTestServer } from '../helpers/server.js';
import { BODY_WEIGHT, bodyWeight } from './helpers.js';

/** `$validate` runs the profile check every write runs, with the `profile` parameter and warnings. */

const api = await useTestServer();

interface Issue {
  severity: string;
  details: { text: string };
}

describe('$validate and profiles', () => {
  it('checks the resource against the profile given as a parameter', async () => {
    const { code: _code, ...withoutCode } = bodyWeight();
    const res = await api.newProject().post('/Observation/$validate', {
      resourceType: 'Parameters',
      parameter: [
        { name: 'resource', resource: { ...withoutCode, code: { text: 'weight' } } },
        { name: 'profile', valueUri: BODY_WEIGHT },
      ],
    });
    expect(res.status, res.text).toBe(200);
    const errors = (res.body.issue as Issue[]).filter((issue) => issue.severity === 'error');
    expect(errors.length, res.text).toBeGreaterThan(0);
    expect(errors.every((issue) => issue.details.text.includes(`profile ${BODY_WEIGHT}`))).toBe(true);
  });

  it('says All OK for a resource that conforms to the profile given', async () => {
    const res = await api.newProject().post('/Observation/$validate', {
      resourceType: 'Parameters',
      parameter: [
        { name: 'resource', resource: bodyWeight() },
        { name: 'profile', valueUri: BODY_WEIGHT },
      ],
    });
    expect(res.status, res.text).toBe(200);
    expect((res.body.issue as Issue[]).map((issue) => issue.severity)).toEqual(['information']);
  });

  it('warns of a meta.profile url no definition has, which a write accepts', async () => {
    const unknown = 'https://example.org/fhir/StructureDefinition/nobody-knows';
    const resource = { resourceType: 'Patient', meta: { profile: [unknown] }, active: true };
    const client = api.newProject();
    const res = await client.post('/Patient/$validate', resource);
    expect(res.status, res.text).toBe(200);
    const warnings = (res.body.issue as Issue[]).filter((issue) => issue.severity === 'warning');
    expect(warnings.map((issue) => issue.details.text).join(' ')).toContain(unknown);
    expect((await client.post('/Patient', resource)).status).toBe(201);
  });
});
