/**
 * Cost of building search index rows for one resource: `npx tsx bench/indexing.ts`.
 * Prints µs per resource for the indexer as shipped (fast path + fhirpath.js fallback) and with
 * every expression through fhirpath.js, for a typical Patient and Observation.
 */
import type { Resource } from '../src/fhir/types.js';
import { buildIndexRows } from '../src/search/indexer.js';
import { collectRows } from '../src/search/indexing/collect.js';
import { buildPlan, type ParamPlan } from '../src/search/indexing/plan.js';

const patient: Resource = {
  resourceType: 'Patient',
  id: 'bench-patient',
  meta: { project: 'p1', tag: [{ system: 'http://example.org/tags', code: 'bench' }] },
  identifier: [{ system: 'http://hospital.example.org/mrn', value: '12345678', type: { text: 'MRN' } }],
  active: true,
  name: [{ use: 'official', family: 'Müller', given: ['Anna', 'Maria'], prefix: ['Dr.'] }],
  gender: 'female',
  birthDate: '1984-06-12',
  address: [{ use: 'home', line: ['Bahnhofstrasse 1'], city: 'Zürich', postalCode: '8001', country: 'CH' }],
  telecom: [
    { system: 'phone', value: '+41 44 123 45 67', use: 'home' },
    { system: 'email', value: 'anna.mueller@example.org' },
  ],
  generalPractitioner: [{ reference: 'Practitioner/pr-1' }],
};

const observation: Resource = {
  resourceType: 'Observation',
  id: 'bench-observation',
  meta: { project: 'p1' },
  status: 'final',
  category: [
    { coding: [{ system: 'http://terminology.hl7.org/CodeSystem/observation-category', code: 'vital-signs' }] },
  ],
  code: { coding: [{ system: 'http://loinc.org', code: '29463-7', display: 'Body weight' }], text: 'Weight' },
  subject: { reference: 'Patient/bench-patient' },
  effectiveDateTime: '2024-03-05T10:00:00+02:00',
  valueQuantity: { value: 72.5, unit: 'kg', system: 'http://unitsofmeasure.org', code: 'kg' },
};

function measure(label: string, index: (resource: Resource) => unknown, resource: Resource): number {
  const warmup = 2_000;
  for (let i = 0; i < warmup; i++) index(resource);
  const rounds = 20_000;
  const start = process.hrtime.bigint();
  for (let i = 0; i < rounds; i++) index(resource);
  const micros = Number(process.hrtime.bigint() - start) / 1000 / rounds;
  console.log(`${label.padEnd(44)} ${micros.toFixed(1).padStart(8)} µs`);
  return micros;
}

function withPlan(plan: readonly ParamPlan[]): (resource: Resource) => unknown {
  return (resource) => collectRows(resource, plan);
}

for (const resource of [patient, observation]) {
  const type = resource.resourceType;
  measure(`${type}: indexer (fast path + fallback)`, buildIndexRows, resource);
  measure(`${type}: fhirpath.js only`, withPlan(buildPlan(type, 'fhirpath')), resource);
}
