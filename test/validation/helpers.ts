import { expect } from 'vitest';
import { OperationOutcomeError } from '../../src/fhir/outcome.js';
import type { OperationOutcomeIssue } from '../../src/fhir/types.js';
import { validateResource, type ValidateOptions } from '../../src/validation/index.js';

/** The issues validateResource reports for a body; [] when it is valid. Anything but a 400 outcome fails the test. */
export function validationIssues(resource: unknown, options?: ValidateOptions): OperationOutcomeIssue[] {
  try {
    validateResource(resource, options);
    return [];
  } catch (error) {
    if (!(error instanceof OperationOutcomeError)) throw error;
    expect(error.status).toBe(400);
    expect(error.outcome.issue.length).toBeGreaterThan(0);
    return error.outcome.issue;
  }
}

/** The single issue of an invalid body. */
export function onlyIssue(resource: unknown, options?: ValidateOptions): OperationOutcomeIssue {
  const issues = validationIssues(resource, options);
  expect(issues, JSON.stringify(issues)).toHaveLength(1);
  return issues[0] as OperationOutcomeIssue;
}

/** A Patient with the usual content, valid. */
export function typicalPatient(): Record<string, unknown> {
  return {
    resourceType: 'Patient',
    id: 'example-1',
    meta: { versionId: '1', lastUpdated: '2024-05-01T10:00:00.000Z' },
    identifier: [{ system: 'http://hospital.example.org/mrn', value: 'MRN-12345' }],
    active: true,
    name: [{ use: 'official', family: 'Chalmers', given: ['Peter', 'James'] }],
    telecom: [{ system: 'phone', value: '(03) 5555 6473', use: 'work' }],
    gender: 'male',
    birthDate: '1974-12-25',
    address: [{ use: 'home', line: ['534 Erewhon St'], city: 'PleasantVille', postalCode: '3999' }],
  };
}
