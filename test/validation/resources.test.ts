import { describe, expect, it } from 'vitest';
import { OperationOutcomeError } from '../../src/fhir/outcome.js';
import { validateResource } from '../../src/validation/index.js';
import { onlyIssue, typicalPatient, validationIssues } from './helpers.js';

describe('valid resources', () => {
  it('accepts a typical Patient', () => {
    expect(validationIssues(typicalPatient())).toEqual([]);
  });

  it('accepts a Patient with only a resourceType', () => {
    expect(validationIssues({ resourceType: 'Patient' })).toEqual([]);
  });

  it('accepts an Observation with a choice value and components', () => {
    const observation = {
      resourceType: 'Observation',
      status: 'final',
      code: { text: 'Blood pressure' },
      effectiveDateTime: '2024-05-01T09:30:00+02:00',
      component: [
        { code: { text: 'Systolic' }, valueQuantity: { value: 120, unit: 'mmHg' } },
        { code: { text: 'Diastolic' }, valueQuantity: { value: 80.5, unit: 'mmHg' } },
      ],
    };
    expect(validationIssues(observation)).toEqual([]);
  });

  it('accepts the Medplum admin types', () => {
    const resources = [
      { resourceType: 'Project', name: 'Demo', strictMode: true, setting: [{ name: 'flag', valueBoolean: true }] },
      { resourceType: 'User', firstName: 'Ada', lastName: 'Lovelace', email: 'ada@example.com' },
      {
        resourceType: 'ProjectMembership',
        project: { reference: 'Project/1' },
        user: { reference: 'User/1' },
        profile: { reference: 'Practitioner/1' },
        admin: true,
      },
      { resourceType: 'ClientApplication', name: 'App', secret: 'abc', redirectUris: ['https://app.example.com/cb'] },
      {
        resourceType: 'AccessPolicy',
        name: 'Read patients',
        resource: [{ resourceType: 'Patient', readonly: true, hiddenFields: ['telecom'] }],
      },
      { resourceType: 'Bot', name: 'Hello', runtimeVersion: 'awslambda', timeout: 10 },
    ];
    for (const resource of resources) expect(validationIssues(resource), resource.resourceType).toEqual([]);
  });

  it('narrows the type of the validated value', () => {
    const body: unknown = typicalPatient();
    validateResource(body);
    expect(body.resourceType).toBe('Patient');
  });
});

describe('resourceType', () => {
  it('rejects a body that is not an object, without an expression', () => {
    for (const body of [[], 'Patient', 42, null, undefined]) {
      const found = onlyIssue(body);
      expect(found).toMatchObject({ severity: 'error', code: 'structure' });
      expect(found.expression).toBeUndefined();
    }
  });

  it('rejects a missing resourceType', () => {
    expect(onlyIssue({ id: 'a' })).toMatchObject({ code: 'structure', expression: ['resourceType'] });
  });

  it('rejects a resourceType that is not a string', () => {
    expect(onlyIssue({ resourceType: ['Patient'] })).toMatchObject({ code: 'structure', expression: ['resourceType'] });
  });

  it('rejects an unknown resource type', () => {
    const found = onlyIssue({ resourceType: 'Patiant' });
    expect(found).toMatchObject({ code: 'structure', expression: ['resourceType'] });
    expect(found.details?.text).toContain('"Patiant"');
  });

  it('rejects an abstract resource type', () => {
    expect(onlyIssue({ resourceType: 'DomainResource' })).toMatchObject({ code: 'structure', expression: ['resourceType'] });
  });

  it('rejects a resourceType that differs from the expected type', () => {
    const found = onlyIssue({ resourceType: 'Observation', status: 'final', code: { text: 'x' } }, { expectedType: 'Patient' });
    expect(found).toMatchObject({ code: 'invalid', expression: ['resourceType'] });
    expect(found.details?.text).toContain('must match');
  });

  it('accepts a resourceType equal to the expected type', () => {
    expect(validationIssues(typicalPatient(), { expectedType: 'Patient' })).toEqual([]);
  });

  it('throws an OperationOutcomeError with status 400', () => {
    expect(() => validateResource({ resourceType: 'Nope' })).toThrow(OperationOutcomeError);
  });
});

describe('nested resources', () => {
  it('validates a contained resource against its own type', () => {
    const patient = { resourceType: 'Patient', contained: [{ resourceType: 'Organization', id: 'o1', active: 'yes' }] };
    expect(onlyIssue(patient)).toMatchObject({ code: 'structure', expression: ['Patient.contained[0].active'] });
  });

  it('requires a resourceType on a contained resource', () => {
    const patient = { resourceType: 'Patient', contained: [{ id: 'o1', name: 'Acme' }] };
    expect(onlyIssue(patient)).toMatchObject({ code: 'structure', expression: ['Patient.contained[0].resourceType'] });
  });

  it('reports required elements of a contained resource', () => {
    const patient = { resourceType: 'Patient', contained: [{ resourceType: 'Observation', id: 'o', code: { text: 'x' } }] };
    expect(onlyIssue(patient)).toMatchObject({ code: 'required', expression: ['Patient.contained[0].status'] });
  });

  it('validates a Bundle entry resource', () => {
    const bundle = {
      resourceType: 'Bundle',
      type: 'collection',
      entry: [{ resource: typicalPatient() }, { resource: { ...typicalPatient(), birthDate: '1974-02-30' } }],
    };
    expect(onlyIssue(bundle)).toMatchObject({ code: 'value', expression: ['Bundle.entry[1].resource.birthDate'] });
  });

  it('rejects an unknown type of Bundle entry resource', () => {
    const bundle = { resourceType: 'Bundle', type: 'collection', entry: [{ resource: { resourceType: 'Resource' } }] };
    expect(onlyIssue(bundle)).toMatchObject({ code: 'structure', expression: ['Bundle.entry[0].resource.resourceType'] });
  });

  it('validates a Parameters parameter resource', () => {
    const parameters = { resourceType: 'Parameters', parameter: [{ name: 'p', resource: { resourceType: 'Patient', foo: 1 } }] };
    expect(onlyIssue(parameters)).toMatchObject({ code: 'structure', expression: ['Parameters.parameter[0].resource.foo'] });
  });

  it('rejects a nested resource that is not an object', () => {
    const bundle = { resourceType: 'Bundle', type: 'collection', entry: [{ resource: 'Patient/1' }] };
    expect(onlyIssue(bundle)).toMatchObject({ code: 'structure', expression: ['Bundle.entry[0].resource'] });
  });
});

describe('several problems', () => {
  it('reports one issue per problem, in document order', () => {
    const patient = { ...typicalPatient(), gender: 'male ', birthDate: 'yesterday', foo: true, active: 1 };
    expect(validationIssues(patient).map((found) => [found.code, found.expression?.[0]])).toEqual([
      ['structure', 'Patient.active'],
      ['value', 'Patient.gender'],
      ['value', 'Patient.birthDate'],
      ['structure', 'Patient.foo'],
    ]);
  });

  it('reports problems in different resources of a Bundle', () => {
    const bundle = {
      resourceType: 'Bundle',
      type: 'batch',
      entry: [{ resource: { resourceType: 'Observation' } }, { resource: { resourceType: 'Patient', id: 'a b' } }],
    };
    expect(validationIssues(bundle).map((found) => found.expression?.[0])).toEqual([
      'Bundle.entry[0].resource.status',
      'Bundle.entry[0].resource.code',
      'Bundle.entry[1].resource.id',
    ]);
  });

  it('caps the listed issues and says how many more there were', () => {
    const patient = { resourceType: 'Patient', name: Array.from({ length: 150 }, () => ({ family: 1 })) };
    const issues = validationIssues(patient);
    expect(issues).toHaveLength(101);
    expect(issues[100]).toMatchObject({ code: 'too-costly' });
    expect(issues[100]?.details?.text).toContain('50 more');
  });
});
