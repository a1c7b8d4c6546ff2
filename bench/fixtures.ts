import { randomUUID } from 'node:crypto';
import type { Resource } from '../src/fhir/types.js';

/** The "typical Patient" of the benchmark figures: identifier, name, gender, birthDate, address, telecom. */
export function typicalPatient(): Resource {
  return {
    resourceType: 'Patient',
    identifier: [{ system: 'http://hospital.example.org/mrn', value: randomUUID() }],
    active: true,
    name: [{ use: 'official', family: 'Müller', given: ['Anna', 'Maria'] }],
    gender: 'female',
    birthDate: '1984-06-12',
    address: [{ use: 'home', line: ['Bahnhofstrasse 1'], city: 'Zürich', postalCode: '8001', country: 'CH' }],
    telecom: [
      { system: 'phone', value: '+41 44 123 45 67', use: 'home' },
      { system: 'email', value: 'anna.mueller@example.org' },
    ],
  };
}

/** An Observation with a subject reference, a coded value and a quantity. */
export function typicalObservation(patientId: string): Resource {
  return {
    resourceType: 'Observation',
    status: 'final',
    category: [
      { coding: [{ system: 'http://terminology.hl7.org/CodeSystem/observation-category', code: 'vital-signs' }] },
    ],
    code: { coding: [{ system: 'http://loinc.org', code: '29463-7', display: 'Body weight' }], text: 'Weight' },
    subject: { reference: `Patient/${patientId}` },
    effectiveDateTime: '2024-03-05T10:00:00+02:00',
    valueQuantity: { value: 72.5, unit: 'kg', system: 'http://unitsofmeasure.org', code: 'kg' },
  };
}
