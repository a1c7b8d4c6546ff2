/**
 * Time of validateResource on typical resources, after warm-up.
 * Run: npx tsx bench/validation.ts
 */
import { performance } from 'node:perf_hooks';
import { validateResource } from '../src/validation/index.js';
import { typicalObservation, typicalPatient } from './fixtures.js';

const patient = { ...typicalPatient(), id: 'example-1', meta: { versionId: '1', lastUpdated: '2024-05-01T10:00:00.000Z' } };
const observation = { ...typicalObservation('example-1'), id: 'obs-1' };
/** A Patient that runs the invariants with more to check: narrative (txt-1/txt-2), contained (dom-2..5, ref-1), extensions. */
const richPatient = {
  ...patient,
  text: {
    status: 'generated',
    div: '<div xmlns="http://www.w3.org/1999/xhtml"><p>Anna Maria <b>Müller</b>, born 1984-06-12</p><table><tr><td>MRN</td><td>12345</td></tr></table></div>',
  },
  contained: [{ resourceType: 'Organization', id: 'clinic', name: 'Clinic' }],
  managingOrganization: { reference: '#clinic' },
  extension: [{ url: 'http://example.org/fhir/StructureDefinition/nickname', valueString: 'Annie' }],
  contact: [{ name: { family: 'Müller', given: ['Hans'] }, telecom: [{ system: 'phone', value: '+41 44 123 45 68' }] }],
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
measure('rich Patient', richPatient);
