import { describe, expect, it } from 'vitest';
import { requiredBindingCodes, requiredBindings } from '../../src/fhir/required-bindings.js';

describe('requiredBindingCodes', () => {
  it('expands a value set that includes a whole code system', () => {
    expect(requiredBindingCodes('http://hl7.org/fhir/ValueSet/administrative-gender')).toEqual([
      'male',
      'female',
      'other',
      'unknown',
    ]);
  });

  it('ignores a version on the canonical url', () => {
    expect(requiredBindingCodes('http://hl7.org/fhir/ValueSet/administrative-gender|4.0.1')).toEqual([
      'male',
      'female',
      'other',
      'unknown',
    ]);
  });

  it('flattens a code system hierarchy', () => {
    // observation-status nests `corrected` under `amended`.
    const codes = requiredBindingCodes('http://hl7.org/fhir/ValueSet/observation-status');
    expect(codes).toEqual(expect.arrayContaining(['final', 'amended', 'corrected', 'entered-in-error']));
  });

  it('expands a value set that lists concepts of a code system', () => {
    const codes = requiredBindingCodes('http://hl7.org/fhir/ValueSet/request-resource-types');
    expect(codes).toEqual(expect.arrayContaining(['Appointment', 'Task']));
    expect(codes).not.toContain('Patient');
  });

  it('expands listed concepts of a code system the definitions do not enumerate', () => {
    expect(requiredBindingCodes('http://hl7.org/fhir/ValueSet/ucum-units')).toEqual(expect.arrayContaining(['g', 'K']));
  });

  it('expands a value set that includes other value sets', () => {
    // yesnodontknow = v2-0136 (Y, N) + data-absent-reason#asked-unknown
    expect(requiredBindingCodes('http://hl7.org/fhir/ValueSet/yesnodontknow')).toEqual(['N', 'Y', 'asked-unknown']);
  });

  it('expands a value set built from v3 code systems', () => {
    expect(requiredBindingCodes('http://terminology.hl7.org/ValueSet/v3-ConfidentialityClassification')).toEqual([
      'U',
      'L',
      'M',
      'N',
      'R',
      'V',
    ]);
  });

  it('counts the admin types as resource types', () => {
    const codes = requiredBindingCodes('http://hl7.org/fhir/ValueSet/resource-types');
    expect(codes).toEqual(expect.arrayContaining(['Patient', 'Observation', 'Project', 'Bot']));
  });

  it('is undefined for a value set defined by a filter', () => {
    expect(requiredBindingCodes('http://hl7.org/fhir/ValueSet/inactive')).toBeUndefined();
  });

  it('is undefined for a code system the definitions do not enumerate', () => {
    expect(requiredBindingCodes('http://hl7.org/fhir/ValueSet/mimetypes')).toBeUndefined();
    expect(requiredBindingCodes('http://hl7.org/fhir/ValueSet/all-languages')).toBeUndefined();
    expect(requiredBindingCodes('http://hl7.org/fhir/ValueSet/currencies')).toBeUndefined();
  });

  it('uses a stored expansion that is complete', () => {
    // example-expansion is a LOINC filter, expanded in the definitions with its total.
    expect(requiredBindingCodes('http://hl7.org/fhir/ValueSet/example-expansion')).toHaveLength(8);
  });

  it('is undefined for an unknown value set', () => {
    expect(requiredBindingCodes('http://example.org/ValueSet/nothing')).toBeUndefined();
  });

  it('returns each code once', () => {
    const codes = requiredBindingCodes('http://hl7.org/fhir/ValueSet/all-types') ?? [];
    expect(codes.length).toBeGreaterThan(200);
    expect(new Set(codes).size).toBe(codes.length);
  });
});

describe('requiredBindings', () => {
  it('lists code elements with a required binding and their codes', () => {
    const gender = requiredBindings().find((binding) => binding.path === 'Patient.gender');
    expect(gender).toEqual({
      path: 'Patient.gender',
      types: ['code'],
      valueSet: 'http://hl7.org/fhir/ValueSet/administrative-gender',
      codes: ['male', 'female', 'other', 'unknown'],
    });
  });

  it('leaves out elements whose binding is not required', () => {
    expect(requiredBindings().some((binding) => binding.path === 'Patient.maritalStatus')).toBe(false);
  });
});
