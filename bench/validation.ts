/**
 * Time of validateResource on typical resources, after warm-up.
 * Run: npx tsx bench/validation.ts
 */
import { performance } from 'node:perf_hooks';
import { validateResource } from '../src/validation/index.js';

const patient = {
  resourceType: 'Patient',
  id: 'example-1',
  meta: { versionId: '1', lastUpdated: '2024-05-01T10:00:00.000Z' },
  identifier: [{ system: 'http://hospital.example.org/mrn', value: 'MRN-12345' }],
  active: true,
  name: [{ use: 'official', family: 'Chalmers', given: ['Peter', 'James'] }],
  telecom: [
    { system: 'phone', value: '(03) 5555 6473', use: 'work' },
    { system: 'email', value: 'peter@example.org' },
  ],
  gender: 'male',
  birthDate: '1974-12-25',
  address: [{ use: 'home', line: ['534 Erewhon St'], city: 'PleasantVille', state: 'Vic', postalCode: '3999', country: 'AU' }],
};

const observation = {
  resourceType: 'Observation',
  id: 'obs-1',
  status: 'final',
  category: [
    { coding: [{ system: 'http://terminology.hl7.org/CodeSystem/observation-category', code: 'vital-signs' }] },
  ],
  code: { coding: [{ system: 'http://loinc.org', code: '29463-7', display: 'Body Weight' }], text: 'Weight' },
  subject: { reference: 'Patient/example-1' },
  effectiveDateTime: '2024-05-01T09:30:00+02:00',
  issued: '2024-05-01T09:35:12.123Z',
  valueQuantity: { value: 72.5, unit: 'kg', system: 'http://unitsofmeasure.org', code: 'kg' },
  interpretation: [{ coding: [{ system: 'http://terminology.hl7.org/CodeSystem/v3-ObservationInterpretation', code: 'N' }] }],
};

function measure(name: string, resource: unknown): void {
  for (let i = 0; i < 20_000; i++) validateResource(resource);
  const runs = 200_000;
  const start = performance.now();
  for (let i = 0; i < runs; i++) validateResource(resource);
  const micros = ((performance.now() - start) * 1000) / runs;
  console.log(`${name.padEnd(12)} ${micros.toFixed(2)} µs per validate`);
}

const loadStart = performance.now();
validateResource(patient);
validateResource(observation);
console.log(`first validation (loads and compiles definitions): ${(performance.now() - loadStart).toFixed(0)} ms`);
measure('Patient', patient);
measure('Observation', observation);
