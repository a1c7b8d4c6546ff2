import { randomUUID } from 'node:crypto';
import type { ProjectClient } from '../helpers/server.js';

/** Shared data of the profile tests: shipped vital-signs Observations and a project profile on Patient. */

export const BODY_WEIGHT = 'http://hl7.org/fhir/StructureDefinition/bodyweight';
export const BP = 'http://hl7.org/fhir/StructureDefinition/bp';
export const BIRTH_PLACE = 'http://hl7.org/fhir/StructureDefinition/patient-birthPlace';
export const MRN = 'https://example.org/mrn';

const vitalSigns = { coding: [{ system: 'http://terminology.hl7.org/CodeSystem/observation-category', code: 'vital-signs' }] };

/** An Observation that conforms to HL7's bodyweight profile. */
export function bodyWeight(extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    resourceType: 'Observation',
    meta: { profile: [BODY_WEIGHT] },
    status: 'final',
    category: [vitalSigns],
    code: { coding: [{ system: 'http://loinc.org', code: '29463-7', display: 'Body weight' }] },
    subject: { reference: 'Patient/example' },
    effectiveDateTime: '2026-11-01T10:00:00Z',
    valueQuantity: { value: 72.5, unit: 'kg', system: 'http://unitsofmeasure.org', code: 'kg' },
    ...extra,
  };
}

/** An Observation that conforms to HL7's bp profile. */
export function bloodPressure(): Record<string, unknown> {
  const component = (code: string, value: number) => ({
    code: { coding: [{ system: 'http://loinc.org', code }] },
    valueQuantity: { value, unit: 'mmHg', system: 'http://unitsofmeasure.org', code: 'mm[Hg]' },
  });
  return {
    resourceType: 'Observation',
    meta: { profile: [BP] },
    status: 'final',
    category: [vitalSigns],
    code: { coding: [{ system: 'http://loinc.org', code: '85354-9' }] },
    subject: { reference: 'Patient/example' },
    effectiveDateTime: '2026-11-01T10:00:00Z',
    component: [component('8480-6', 120), component('8462-4', 80)],
  };
}

/**
 * A project profile on Patient with a differential only: one name, a fixed gender, a pattern on
 * maritalStatus, identifiers sliced by system (closed, an MRN required), extensions sliced by url
 * (open) with birthPlace at most once.
 */
export function patientProfile(url = `https://example.org/fhir/StructureDefinition/strict-patient-${randomUUID()}`): Record<string, unknown> {
  return constraintOn('Patient', url, [
    { id: 'Patient.extension', path: 'Patient.extension', slicing: { discriminator: [{ type: 'value', path: 'url' }], rules: 'open' } },
    { id: 'Patient.extension:birthPlace', path: 'Patient.extension', sliceName: 'birthPlace', min: 0, max: '1', type: [{ code: 'Extension', profile: [BIRTH_PLACE] }] },
    { id: 'Patient.identifier', path: 'Patient.identifier', min: 1, slicing: { discriminator: [{ type: 'value', path: 'system' }], rules: 'closed' } },
    { id: 'Patient.identifier:mrn', path: 'Patient.identifier', sliceName: 'mrn', min: 1, max: '1' },
    { id: 'Patient.identifier:mrn.system', path: 'Patient.identifier.system', min: 1, fixedUri: MRN },
    { id: 'Patient.name', path: 'Patient.name', min: 1, max: '1' },
    { id: 'Patient.gender', path: 'Patient.gender', fixedCode: 'female' },
    {
      id: 'Patient.maritalStatus',
      path: 'Patient.maritalStatus',
      patternCodeableConcept: { coding: [{ system: 'http://terminology.hl7.org/CodeSystem/v3-MaritalStatus', code: 'M' }] },
    },
  ]);
}

/** A profile of a core resource type whose differential is the root and `elements`. */
export function constraintOn(type: string, url: string, elements: Record<string, unknown>[]): Record<string, unknown> {
  return {
    resourceType: 'StructureDefinition',
    url,
    name: `Constrained${type}`,
    status: 'active',
    kind: 'resource',
    abstract: false,
    type,
    baseDefinition: `http://hl7.org/fhir/StructureDefinition/${type}`,
    derivation: 'constraint',
    differential: { element: [{ id: type, path: type }, ...elements] },
  };
}

/** A Patient that conforms to patientProfile(url). */
export function strictPatient(url: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    resourceType: 'Patient',
    meta: { profile: [url] },
    identifier: [{ system: MRN, value: '12345' }],
    name: [{ family: 'Chalmers', given: ['Janet'] }],
    gender: 'female',
    maritalStatus: { coding: [{ system: 'http://terminology.hl7.org/CodeSystem/v3-MaritalStatus', code: 'M', display: 'Married' }], text: 'married' },
    ...extra,
  };
}

/** Stores a project profile and returns its url. */
export async function storeProfile(client: ProjectClient, profile = patientProfile()): Promise<string> {
  const res = await client.post('/StructureDefinition', profile);
  if (res.status !== 201) throw new Error(`storing the profile failed: ${res.status} ${res.text}`);
  return profile.url as string;
}

/** Every issue's text, for assertions that name a rule and a profile. */
export function texts(body: { issue?: { details?: { text?: string } }[] }): string[] {
  return (body.issue ?? []).map((found) => found.details?.text ?? '');
}
