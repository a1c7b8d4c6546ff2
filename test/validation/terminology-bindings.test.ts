import { describe, expect, it } from 'vitest';
import type { OperationOutcomeIssue } from '../../src/fhir/types.js';
import { useTestServer, type ProjectClient } from '../helpers/server.js';

/**
 * Required bindings of Coding and CodeableConcept elements, checked with the terminology engine on
 * every write; extensible and preferred ones as warnings in `$validate`.
 */
const api = await useTestServer();

const CLINICAL = 'http://terminology.hl7.org/CodeSystem/condition-clinical';
const SNOMED = 'http://snomed.info/sct';

const condition = (clinicalStatus: unknown) => ({
  resourceType: 'Condition',
  clinicalStatus,
  code: { text: 'Headache' },
  subject: { reference: 'Patient/p1' },
});
const status = (...coding: { system?: string; code?: string }[]) => ({ coding });

const issuesOf = (body: { issue: OperationOutcomeIssue[] }) => body.issue;

async function validate(p: ProjectClient, resource: { resourceType: string }) {
  const res = await p.post(`/${resource.resourceType}/$validate`, resource);
  expect(res.status, res.text).toBe(200);
  return issuesOf(res.body);
}

describe('required bindings of CodeableConcept on write', () => {
  it('accepts a code of the value set', async () => {
    const p = api.newProject();
    const res = await p.post('/Condition', condition(status({ system: CLINICAL, code: 'active' })));
    expect(res.status, res.text).toBe(201);
  });

  it('refuses a code outside the value set with 400 code-invalid at the element', async () => {
    const p = api.newProject();
    const res = await p.post('/Condition', condition(status({ system: CLINICAL, code: 'bogus' })));
    expect(res.status).toBe(400);
    expect(issuesOf(res.body)).toEqual([
      {
        severity: 'error',
        code: 'code-invalid',
        details: {
          text:
            `Invalid code at Condition.clinicalStatus: The code ${CLINICAL}|bogus is not in the value set ` +
            'http://hl7.org/fhir/ValueSet/condition-clinical, which this element requires',
        },
        expression: ['Condition.clinicalStatus'],
      },
    ]);
  });

  it('accepts a CodeableConcept when one of its codings is in the value set, beside codings of other systems', async () => {
    const p = api.newProject();
    const res = await p.post('/Condition', condition(status({ system: SNOMED, code: '55561003' }, { system: CLINICAL, code: 'active' })));
    expect(res.status, res.text).toBe(201);
  });

  it('refuses a CodeableConcept whose only coding is of a system outside the value set', async () => {
    const p = api.newProject();
    const res = await p.post('/Condition', condition(status({ system: SNOMED, code: '55561003' })));
    expect(res.status).toBe(400);
    expect(issuesOf(res.body)[0].expression).toEqual(['Condition.clinicalStatus']);
  });

  it('refuses a CodeableConcept with text only where a code is required', async () => {
    const p = api.newProject();
    const res = await p.post('/Condition', condition({ text: 'active' }));
    expect(res.status).toBe(400);
    expect(issuesOf(res.body)[0].details?.text).toContain('Missing code at Condition.clinicalStatus: it has no coding');
  });

  it('checks a contained resource, naming its place', async () => {
    const p = api.newProject();
    const contained = { ...condition(status({ system: CLINICAL, code: 'bogus' })), id: 'c1' };
    // The Patient refers to its contained resource, as invariant dom-3 requires.
    const refersToIt = [{ url: 'http://example.org/fhir/StructureDefinition/condition', valueReference: { reference: '#c1' } }];
    const res = await p.post('/Patient', { resourceType: 'Patient', contained: [contained], extension: refersToIt });
    expect(res.status).toBe(400);
    expect(issuesOf(res.body)[0].expression).toEqual(['Patient.contained[0].clinicalStatus']);
  });

  it('checks an update too', async () => {
    const p = api.newProject();
    const created = await p.post('/Condition', condition(status({ system: CLINICAL, code: 'active' })));
    const res = await p.put(`/Condition/${created.body.id}`, { ...created.body, clinicalStatus: status({ system: CLINICAL, code: 'bogus' }) });
    expect(res.status).toBe(400);
    expect(issuesOf(res.body)[0].code).toBe('code-invalid');
  });

  it("uses the project's own ValueSet of that url once it has one", async () => {
    const p = api.newProject();
    const local = condition(status({ system: 'http://example.org/status', code: 'dormant' }));
    expect((await p.post('/Condition', local)).status).toBe(400);
    const valueSet = await p.post('/ValueSet', {
      resourceType: 'ValueSet',
      url: 'http://hl7.org/fhir/ValueSet/condition-clinical',
      status: 'active',
      compose: { include: [{ system: CLINICAL }, { system: 'http://example.org/status', concept: [{ code: 'dormant' }] }] },
    });
    expect(valueSet.status, valueSet.text).toBe(201);
    const res = await p.post('/Condition', local);
    expect(res.status, res.text).toBe(201);
    expect((await api.newProject().post('/Condition', local)).status).toBe(400);
  });
});

describe('bindings that cannot be decided', () => {
  // Bound (required) to the LOINC answer list LL379-9, which Flint does not ship.
  const sequence = {
    resourceType: 'MolecularSequence',
    coordinateSystem: 0,
    structureVariant: [{ variantType: { coding: [{ system: 'http://loinc.org', code: 'LA6692-3' }] } }],
  };

  it('never refuse a write', async () => {
    const p = api.newProject();
    const res = await p.post('/MolecularSequence', sequence);
    expect(res.status, res.text).toBe(201);
  });

  it('are reported by $validate as not checked', async () => {
    const p = api.newProject();
    const issues = await validate(p, sequence);
    expect(issues).toHaveLength(1);
    expect(issues[0]).toMatchObject({ severity: 'information', code: 'informational', expression: ['MolecularSequence.structureVariant[0].variantType'] });
    expect(issues[0].details?.text).toContain('http://loinc.org/vs/LL379-9 was not checked');
  });
});

describe('value sets over UCUM', () => {
  const synthesis = (unit: string) => ({
    resourceType: 'EffectEvidenceSynthesis',
    status: 'draft',
    population: { reference: 'Group/g' },
    exposure: { reference: 'EvidenceVariable/e' },
    exposureAlternative: { reference: 'EvidenceVariable/a' },
    outcome: { reference: 'EvidenceVariable/o' },
    effectEstimate: [{ unitOfMeasure: { coding: [{ system: 'http://unitsofmeasure.org', code: unit }] } }],
  });

  it('accepts any valid UCUM unit, also one the shipped UCUM list lacks', async () => {
    const p = api.newProject();
    const res = await p.post('/EffectEvidenceSynthesis', synthesis('mg/dL'));
    expect(res.status, res.text).toBe(201);
  });

  it('refuses a unit that is not UCUM', async () => {
    const p = api.newProject();
    const res = await p.post('/EffectEvidenceSynthesis', synthesis('foo/bar'));
    expect(res.status).toBe(400);
    expect(issuesOf(res.body)[0].expression).toEqual(['EffectEvidenceSynthesis.effectEstimate[0].unitOfMeasure']);
  });
});

describe('extensible and preferred bindings', () => {
  const observation = {
    resourceType: 'Observation',
    status: 'final',
    code: { text: 'weight' },
    category: [{ coding: [{ system: 'http://terminology.hl7.org/CodeSystem/observation-category', code: 'not-a-category' }] }],
  };

  it('are written without complaint', async () => {
    const p = api.newProject();
    expect((await p.post('/Observation', observation)).status).toBe(201);
  });

  it('give a warning in $validate', async () => {
    const p = api.newProject();
    const issues = await validate(p, observation);
    expect(issues).toHaveLength(1);
    expect(issues[0]).toMatchObject({ severity: 'warning', code: 'code-invalid', expression: ['Observation.category[0]'] });
    expect(issues[0].details?.text).toContain('http://hl7.org/fhir/ValueSet/observation-category');
  });

  it('say nothing when the code is in the value set', async () => {
    const p = api.newProject();
    const fine = { ...observation, category: [{ coding: [{ system: 'http://terminology.hl7.org/CodeSystem/observation-category', code: 'vital-signs' }] }] };
    expect((await validate(p, fine)).map((i) => i.details?.text)).toEqual(['All OK']);
  });
});

describe('identical results', () => {
  const invalid = {
    ...condition(status({ system: CLINICAL, code: 'bogus' })),
    verificationStatus: { coding: [{ system: 'http://terminology.hl7.org/CodeSystem/condition-ver-status', code: 'sure' }] },
  };

  it('a write, $validate and a transaction Bundle entry list the same errors', async () => {
    const p = api.newProject();
    const write = await p.post('/Condition', invalid);
    expect(write.status).toBe(400);
    const written = issuesOf(write.body);
    expect(written).toHaveLength(2);
    const validated = (await validate(p, invalid)).filter((i) => i.severity === 'error');
    expect(validated).toEqual(written);
    const bundle = await p.post('/', {
      resourceType: 'Bundle',
      type: 'transaction',
      entry: [{ resource: invalid, request: { method: 'POST', url: 'Condition' } }],
    });
    expect(bundle.status).toBe(400);
    const unprefixed = issuesOf(bundle.body).map((i) => ({
      ...i,
      details: { text: i.details?.text?.replace(/^Bundle\.entry\[0\]: /, '') },
      expression: i.expression?.slice(1),
    }));
    expect(unprefixed).toEqual(written);
  });

  it('a structurally invalid resource: the write and $validate list the same errors', async () => {
    const p = api.newProject();
    const broken = { resourceType: 'Condition', subject: { reference: 'Patient/p' }, clinicalStatus: 'active', onsetDateTime: 'yesterday' };
    const write = await p.post('/Condition', broken);
    expect(write.status).toBe(400);
    expect(await validate(p, broken)).toEqual(issuesOf(write.body));
  });
});
