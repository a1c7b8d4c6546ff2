import { describe, expect, it } from 'vitest';
import { useTestServer, type ProjectClient } from '../helpers/server.js';

/** Invariants of the R4 definitions (FHIRPath constraints and the native ones) on every write. */

const api = await useTestServer();

interface Issue {
  severity: string;
  code: string;
  details?: { text?: string };
  expression?: string[];
}

const observation = (extra: Record<string, unknown> = {}) => ({
  resourceType: 'Observation',
  status: 'final',
  code: { text: 'Body weight' },
  ...extra,
});

/** obs-6: a value and a dataAbsentReason together. */
const observationBreakingObs6 = () =>
  observation({ valueQuantity: { value: 70, unit: 'kg' }, dataAbsentReason: { text: 'Patient refused' } });

function issuesOf(body: { issue?: Issue[] }): Issue[] {
  return body.issue ?? [];
}

async function createdStatus(client: ProjectClient, resource: Record<string, unknown>): Promise<number> {
  return (await client.post(`/${resource.resourceType as string}`, resource)).status;
}

describe('invariants on writes', () => {
  it('refuses an Observation breaking obs-6 with the key, the human text and the expression', async () => {
    const client = api.newProject();
    const res = await client.post('/Observation', observationBreakingObs6());
    expect(res.status, res.text).toBe(400);
    expect(res.body.resourceType).toBe('OperationOutcome');
    expect(issuesOf(res.body)).toEqual([
      {
        severity: 'error',
        code: 'invariant',
        details: { text: 'obs-6: dataAbsentReason SHALL only be present if Observation.value[x] is not present' },
        expression: ['Observation'],
      },
    ]);
    expect((await client.get('/Observation')).body.total ?? 0).toBe(0);
  });

  it('refuses an update breaking an invariant of the resource', async () => {
    const client = api.newProject();
    const created = await client.post('/Observation', observation({ valueString: 'fine' }));
    expect(created.status).toBe(201);
    const res = await client.put(`/Observation/${created.body.id as string}`, {
      ...observationBreakingObs6(),
      id: created.body.id,
    });
    expect(res.status, res.text).toBe(400);
    expect(issuesOf(res.body)[0]?.details?.text).toMatch(/^obs-6: /);
  });

  it('locates an invariant of a backbone element at its instance (pat-1 on Patient.contact)', async () => {
    const client = api.newProject();
    const res = await client.post('/Patient', {
      resourceType: 'Patient',
      contact: [{ name: { family: 'Chalmers' } }, { gender: 'female' }],
    });
    expect(res.status, res.text).toBe(400);
    const [found] = issuesOf(res.body);
    expect(found?.code).toBe('invariant');
    expect(found?.details?.text).toMatch(/^pat-1: SHALL at least contain a contact's details/);
    expect(found?.expression).toEqual(['Patient.contact[1]']);
  });

  it('checks ext-1 on each extension: neither a value nor nested extensions', async () => {
    const client = api.newProject();
    const res = await client.post('/Patient', {
      resourceType: 'Patient',
      name: [{ family: 'Chalmers', extension: [{ url: 'http://example.org/fhir/StructureDefinition/empty' }] }],
    });
    expect(res.status, res.text).toBe(400);
    expect(issuesOf(res.body)).toEqual([
      expect.objectContaining({
        code: 'invariant',
        details: { text: 'ext-1: Must have either extensions or value[x], not both' },
        expression: ['Patient.name[0].extension[0]'],
      }),
    ]);
  });

  it('checks ele-1 on an element holding only an id', async () => {
    const client = api.newProject();
    const res = await client.post('/Patient', { resourceType: 'Patient', name: [{ id: 'n1' }] });
    expect(res.status, res.text).toBe(400);
    expect(issuesOf(res.body)[0]).toMatchObject({
      code: 'invariant',
      details: { text: 'ele-1: All FHIR elements must have a @value or children' },
      expression: ['Patient.name[0]'],
    });
  });

  it('checks an invariant of a data type where it is used (per-1 on a Period)', async () => {
    const client = api.newProject();
    const res = await client.post('/Patient', {
      resourceType: 'Patient',
      name: [{ family: 'Chalmers', period: { start: '2020-05-01', end: '2019-01-01' } }],
    });
    expect(res.status, res.text).toBe(400);
    expect(issuesOf(res.body)[0]).toMatchObject({ code: 'invariant', expression: ['Patient.name[0].period'] });
    expect(issuesOf(res.body)[0]?.details?.text).toMatch(/^per-1: /);
  });

  it('refuses a contained resource nothing refers to (dom-3) and a local reference to no contained resource (ref-1)', async () => {
    const client = api.newProject();
    const res = await client.post('/Patient', {
      resourceType: 'Patient',
      contained: [{ resourceType: 'Organization', id: 'org1', name: 'Clinic' }],
      generalPractitioner: [{ reference: '#nobody' }],
    });
    expect(res.status, res.text).toBe(400);
    const found = issuesOf(res.body).map((item) => [item.details?.text?.slice(0, 6), item.expression?.[0]]);
    expect(found).toEqual([
      ['dom-3:', 'Patient'],
      ['ref-1:', 'Patient.generalPractitioner[0]'],
    ]);
  });

  it('refuses a narrative with active content (txt-1)', async () => {
    const client = api.newProject();
    const res = await client.post('/Patient', {
      resourceType: 'Patient',
      text: { status: 'generated', div: '<div xmlns="http://www.w3.org/1999/xhtml"><script>alert(1)</script>Peter</div>' },
    });
    expect(res.status, res.text).toBe(400);
    expect(issuesOf(res.body)[0]).toMatchObject({ code: 'invariant', expression: ['Patient.text.div'] });
    expect(issuesOf(res.body)[0]?.details?.text).toMatch(/^txt-1: /);
  });

  it('gives a transaction entry the same issue as a direct write, naming the entry', async () => {
    const client = api.newProject();
    const direct = await client.post('/Observation', observationBreakingObs6());
    const res = await client.post('/', {
      resourceType: 'Bundle',
      type: 'transaction',
      entry: [
        { request: { method: 'POST', url: 'Patient' }, resource: { resourceType: 'Patient', gender: 'male' } },
        { request: { method: 'POST', url: 'Observation' }, resource: observationBreakingObs6() },
      ],
    });
    expect(res.status, res.text).toBe(400);
    const [entryIssue] = issuesOf(res.body);
    const [directIssue] = issuesOf(direct.body);
    expect(entryIssue?.code).toBe('invariant');
    expect(entryIssue?.details?.text).toBe(`Bundle.entry[1]: ${directIssue?.details?.text ?? ''}`);
    expect(entryIssue?.expression?.[0]).toBe('Bundle.entry[1]');
    expect((await client.get('/Patient')).body.total ?? 0).toBe(0);
  });

  it('treats an invariant the engine fails to evaluate as unchecked, never as a 500', async () => {
    const client = api.newProject();
    // fhirpath.js throws comparing a Quantity with a unit to one without (rng-2: low <= high).
    const low = { value: 160, unit: 'lb', system: 'http://unitsofmeasure.org', code: '[lb_av]' };
    const res = await client.post('/Observation', observation({ valueRange: { low, high: { value: 200 } } }));
    expect(res.status, res.text).toBe(201);
  });

  it("checks a profile's own invariants on a write claiming it (vs-2 of HL7's vital signs profile)", async () => {
    const client = api.newProject();
    const profile = 'http://hl7.org/fhir/StructureDefinition/vitalsigns';
    const res = await client.post('/Observation', {
      ...observation(),
      meta: { profile: [profile] },
      category: [{ coding: [{ system: 'http://terminology.hl7.org/CodeSystem/observation-category', code: 'vital-signs' }] }],
      code: { coding: [{ system: 'http://loinc.org', code: '29463-7' }] },
      subject: { reference: 'Patient/p1' },
      effectiveDateTime: '2024-03-05T10:00:00Z',
    });
    expect(res.status, res.text).toBe(400);
    const texts = issuesOf(res.body).map((found) => found.details?.text ?? '');
    expect(texts).toContain(`vs-2: If there is no component or hasMember element then either a value[x] or a data absent reason must be present. (profile ${profile})`);
  });

  it('accepts resources that keep every invariant, contained and narrative included', async () => {
    const client = api.newProject();
    expect(await createdStatus(client, observation({ valueQuantity: { value: 70, unit: 'kg', system: 'http://unitsofmeasure.org', code: 'kg' } }))).toBe(201);
    expect(await createdStatus(client, observation({ dataAbsentReason: { text: 'Patient refused' } }))).toBe(201);
    expect(
      await createdStatus(client, {
        resourceType: 'Patient',
        text: { status: 'generated', div: '<div xmlns="http://www.w3.org/1999/xhtml"><p>Peter <b>Chalmers</b></p></div>' },
        contained: [{ resourceType: 'Organization', id: 'org1', name: 'Clinic' }],
        managingOrganization: { reference: '#org1' },
        contact: [{ name: { family: 'Chalmers' } }],
        extension: [{ url: 'http://example.org/fhir/StructureDefinition/nickname', valueString: 'Pete' }],
      }),
    ).toBe(201);
  });
});
