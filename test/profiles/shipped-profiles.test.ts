import { describe, expect, it } from 'vitest';
import { useTestServer } from '../helpers/server.js';
import { BODY_WEIGHT, BP, bloodPressure, bodyWeight, texts } from './helpers.js';

/** Writes whose meta.profile names one of the HL7 R4 profiles shipped with the server are checked against it. */

const api = await useTestServer();

describe('shipped HL7 profiles', () => {
  it('stores an Observation that conforms to bodyweight', async () => {
    const res = await api.newProject().post('/Observation', bodyWeight());
    expect(res.status).toBe(201);
    expect(res.body.meta.profile).toEqual([BODY_WEIGHT]);
  });

  it('stores an Observation that conforms to bp', async () => {
    expect((await api.newProject().post('/Observation', bloodPressure())).status).toBe(201);
  });

  it('refuses a body weight whose code has no coding at all, as the required slice is missing', async () => {
    const res = await api.newProject().post('/Observation', bodyWeight({ code: { text: 'weight' } }));
    expect(res.status).toBe(400);
    expect(texts(res.body).some((text) => text.includes('cardinality 1..1 of Observation.code.coding:BodyWeightCode'))).toBe(true);
  });

  it('refuses a body weight without the LOINC code, naming the slice, the rule and the profile', async () => {
    const res = await api.newProject().post('/Observation', bodyWeight({ code: { coding: [{ system: 'http://loinc.org', code: '3141-9' }] } }));
    expect(res.status).toBe(400);
    expect(res.body.resourceType).toBe('OperationOutcome');
    const issue = res.body.issue.find((found: { details: { text: string } }) => found.details.text.includes('BodyWeightCode'));
    expect(issue.severity).toBe('error');
    expect(issue.expression).toEqual(['Observation.code.coding']);
    expect(issue.details.text).toContain(`profile ${BODY_WEIGHT}`);
    expect(issue.details.text).toContain('cardinality 1..1 of Observation.code.coding:BodyWeightCode');
  });

  it('refuses a body weight in another unit system, naming the fixed value (inherited rules of vitalsigns too)', async () => {
    const res = await api.newProject().post('/Observation', bodyWeight({ category: undefined, valueQuantity: { value: 160, unit: 'lb', system: 'http://example.org/units', code: 'lb' } }));
    expect(res.status).toBe(400);
    const at = (location: string) => res.body.issue.filter((found: { expression: string[] }) => found.expression[0] === location).map((found: { details: { text: string } }) => found.details.text);
    expect(at('Observation.valueQuantity.system')).toEqual([
      `The value "http://example.org/units" must be exactly "http://unitsofmeasure.org" (profile ${BODY_WEIGHT}, rule: fixedUri of Observation.value[x]:valueQuantity.system)`,
    ]);
    expect(at('Observation.category')).toContain(`Observation.category needs at least 1 value, found 0 (profile ${BODY_WEIGHT}, rule: cardinality 1..* of Observation.category)`);
  });

  it('refuses a subject of a type the targetProfile does not allow, without resolving it', async () => {
    const res = await api.newProject().post('/Observation', bodyWeight({ subject: { reference: 'Group/some-group' } }));
    expect(res.status).toBe(400);
    expect(res.body.issue[0].expression).toEqual(['Observation.subject.reference']);
    expect(res.body.issue[0].details.text).toContain('targetProfile of Observation.subject');
  });

  it('refuses a blood pressure without its diastolic component', async () => {
    const bp = bloodPressure();
    const res = await api.newProject().post('/Observation', { ...bp, component: [(bp.component as unknown[])[0]] });
    expect(res.status).toBe(400);
    expect(texts(res.body).some((text) => text.includes('Observation.component:DiastolicBP needs at least 1 value'))).toBe(true);
    expect(texts(res.body).every((text) => text.includes(`profile ${BP}`))).toBe(true);
  });

  it('leaves unchecked a slicing it cannot follow (lipidprofile slices results by resolve().code)', async () => {
    const report = {
      resourceType: 'DiagnosticReport',
      meta: { profile: ['http://hl7.org/fhir/StructureDefinition/lipidprofile'] },
      status: 'final',
      code: { coding: [{ system: 'http://loinc.org', code: '57698-3', display: 'Lipid panel with direct LDL - Serum or Plasma' }] },
      issued: '2026-11-01T10:00:00Z',
      result: [{ reference: 'Observation/cholesterol' }, { reference: 'Observation/triglyceride' }, { reference: 'Observation/hdl' }],
    };
    expect((await api.newProject().post('/DiagnosticReport', report)).status).toBe(201);
  });

  it('leaves unchecked a slicing without discriminators (familymemberhistory-genetic slices relationship so)', async () => {
    const history = {
      resourceType: 'FamilyMemberHistory',
      meta: { profile: ['http://hl7.org/fhir/StructureDefinition/familymemberhistory-genetic'] },
      status: 'completed',
      patient: { reference: 'Patient/example' },
      relationship: { coding: [{ system: 'http://terminology.hl7.org/CodeSystem/v3-RoleCode', code: 'FTH' }] },
    };
    expect((await api.newProject().post('/FamilyMemberHistory', history)).status).toBe(201);
  });

  it('checks an update against the profile too', async () => {
    const client = api.newProject();
    const created = (await client.post('/Observation', bodyWeight())).body;
    const res = await client.put(`/Observation/${created.id}`, { ...created, valueQuantity: { value: 72.5, unit: 'kg' } });
    expect(res.status).toBe(400);
    expect(res.body.issue.map((found: { expression: string[] }) => found.expression[0])).toEqual(['Observation.valueQuantity.system', 'Observation.valueQuantity.code']);
  });

  it('checks the result of a patch against the profile too', async () => {
    const client = api.newProject();
    const created = (await client.post('/Observation', bodyWeight())).body;
    const res = await client.patch(`/Observation/${created.id}`, [{ op: 'remove', path: '/category' }], { 'Content-Type': 'application/json-patch+json' });
    expect(res.status).toBe(400);
    expect(texts(res.body).some((text) => text.includes('cardinality 1..* of Observation.category'))).toBe(true);
  });

  it('gives a Bundle entry the same issues as a direct write', async () => {
    const client = api.newProject();
    const broken = bodyWeight({ subject: { reference: 'Device/d1' }, valueQuantity: { value: 1, unit: 'kg', system: 'http://unitsofmeasure.org' } });
    const direct = await client.post('/Observation', broken);
    const batch = await client.post('', { resourceType: 'Bundle', type: 'batch', entry: [{ request: { method: 'POST', url: 'Observation' }, resource: broken }] });
    expect(direct.status).toBe(400);
    expect(batch.status).toBe(200);
    expect(batch.body.entry[0].response.status).toMatch(/^400/);
    expect(batch.body.entry[0].response.outcome.issue).toEqual(direct.body.issue);
  });

  it('accepts a meta.profile url that no definition has', async () => {
    const res = await api.newProject().post('/Observation', bodyWeight({ meta: { profile: ['https://example.org/fhir/StructureDefinition/nobody-knows'] }, category: undefined }));
    expect(res.status).toBe(201);
  });

  it('resolves a versioned canonical (url|version) to the profile', async () => {
    const res = await api.newProject().post('/Observation', bodyWeight({ meta: { profile: [`${BODY_WEIGHT}|4.0.1`] }, category: undefined }));
    expect(res.status).toBe(400);
  });
});
