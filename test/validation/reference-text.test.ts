import { describe, expect, it } from 'vitest';
import { useTestServer } from '../helpers/server.js';

/**
 * A relative Reference.reference must be `Type/id` or `Type/id/_history/version`: any other
 * relative text names no resource, and a write holding one is refused with the element's path.
 * Absolute URLs, `#contained`, `urn:` placeholders and conditional references keep their forms.
 */
const api = await useTestServer();

const patientReferring = (reference: string, extra: Record<string, unknown> = {}) => ({
  resourceType: 'Patient',
  generalPractitioner: [{ display: 'first' }, { reference }],
  ...extra,
});

const REFUSED = [
  'Patient/../x',
  'Patient/..',
  'Patient/.',
  'Practitioner//x',
  'Practitioner/',
  '/Practitioner/x',
  'Practitioner/x/y',
  'Practitioner/x y',
  'Practitioner/x/_history/..',
  `Practitioner/${'a'.repeat(65)}`,
  'practitioner/x',
];

const ACCEPTED = [
  'Practitioner/x',
  'Practitioner/A-1.b',
  'Practitioner/x/_history/2',
  'http://other.example.org/fhir/Practitioner/../x',
  'urn:uuid:1f1a2b3c-0000-4000-8000-000000000001',
  'Practitioner?identifier=http://npi|123',
];

describe('relative references on write', () => {
  for (const reference of REFUSED) {
    it(`refuses ${JSON.stringify(reference)} with 400 at the element`, async () => {
      const p = api.newProject();
      const res = await p.post('/Patient', patientReferring(reference));
      expect(res.status, res.text).toBe(400);
      expect(res.body.resourceType).toBe('OperationOutcome');
      const issue = res.body.issue[0];
      expect(issue.code).toBe('value');
      expect(issue.expression).toEqual(['Patient.generalPractitioner[1].reference']);
      expect(issue.details.text).toContain(JSON.stringify(reference));
      expect(issue.details.text).toContain('Type/id');
    });
  }

  for (const reference of ACCEPTED) {
    it(`accepts ${JSON.stringify(reference)}`, async () => {
      const p = api.newProject();
      const res = await p.post('/Patient', patientReferring(reference));
      expect(res.status, res.text).toBe(201);
    });
  }

  it('accepts a reference to a contained resource', async () => {
    const p = api.newProject();
    const contained = [{ resourceType: 'Practitioner', id: 'gp', name: [{ family: 'Inside' }] }];
    const res = await p.post('/Patient', patientReferring('#gp', { contained }));
    expect(res.status, res.text).toBe(201);
  });

  it("accepts an AccessPolicy's references holding its variables, filled in per member", async () => {
    const p = api.newProject();
    const policy = {
      resourceType: 'AccessPolicy',
      name: 'own data',
      compartment: { reference: '%patient' },
      resource: [{ resourceType: 'Observation', compartment: { reference: 'Patient/%profile.id' } }],
    };
    const res = await p.post('/AccessPolicy', policy);
    expect(res.status, res.text).toBe(201);
    const elsewhere = await p.post('/Patient', patientReferring('Practitioner/%profile.id'));
    expect(elsewhere.status, elsewhere.text).toBe(400);
  });

  it('refuses one in an update, a patch and a contained resource alike', async () => {
    const p = api.newProject();
    const created = await p.post('/Patient', { resourceType: 'Patient' });
    const id = created.body.id as string;
    const put = await p.put(`/Patient/${id}`, { ...patientReferring('Patient/../x'), id });
    expect(put.status, put.text).toBe(400);
    const patch = await p.patch(`/Patient/${id}`, [{ op: 'add', path: '/managingOrganization', value: { reference: 'Organization/../y' } }], {
      'Content-Type': 'application/json-patch+json',
    });
    expect(patch.status, patch.text).toBe(400);
    expect(patch.body.issue[0].expression).toEqual(['Patient.managingOrganization.reference']);
    const contained = [{ resourceType: 'RelatedPerson', id: 'rp', patient: { reference: 'Patient/./x' } }];
    const nested = await p.post('/Patient', { resourceType: 'Patient', contained, link: [{ other: { reference: '#rp' }, type: 'seealso' }] });
    expect(nested.status, nested.text).toBe(400);
    expect(nested.body.issue[0].expression).toEqual(['Patient.contained[0].patient.reference']);
  });
});

describe('absolute references to this server on write', () => {
  /** This server's FHIR base as it names itself (BASE_URL). */
  const base = api.server.services.config.fhirBaseUrl;

  for (const local of ['Patient/../x', 'Practitioner//x', 'Practitioner/', 'Practitioner/x/y', 'Practitioner/x/_history/..', 'practitioner/x']) {
    it(`refuses "<base>/${local}" with 400 at the element`, async () => {
      const p = api.newProject();
      const res = await p.post('/Patient', patientReferring(`${base}/${local}`));
      expect(res.status, res.text).toBe(400);
      const issue = res.body.issue[0];
      expect(issue.code).toBe('value');
      expect(issue.expression).toEqual(['Patient.generalPractitioner[1].reference']);
      expect(issue.details.text).toContain(JSON.stringify(`${base}/${local}`));
      expect(issue.details.text).toContain(`${base}/Type/id`);
    });
  }

  for (const local of ['Practitioner/x', 'Practitioner/x/_history/2', 'Practitioner?identifier=http://npi|123']) {
    it(`accepts "<base>/${local}"`, async () => {
      const p = api.newProject();
      const res = await p.post('/Patient', patientReferring(`${base}/${local}`));
      expect(res.status, res.text).toBe(201);
    });
  }

  it('reports one in $validate as an error at the element', async () => {
    const p = api.newProject();
    const res = await p.post('/Patient/$validate', patientReferring(`${base}/Patient/../x`));
    expect(res.status, res.text).toBe(200);
    const errorsFound = res.body.issue.filter((issue: { severity: string }) => issue.severity === 'error');
    expect(errorsFound.map((issue: { expression: string[] }) => issue.expression)).toEqual([['Patient.generalPractitioner[1].reference']]);
  });
});
