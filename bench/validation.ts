/**
 * Time of validateResource on typical resources, after warm-up.
 * Run: npx tsx bench/validation.ts
 */
import { performance } from 'node:perf_hooks';
import { validateResource } from '../src/validation/index.js';
import { typicalObservation, typicalPatient } from './fixtures.js';

const patient = { ...typicalPatient(), id: 'example-1', meta: { versionId: '1', lastUpdated: '2024-05-01T10:00:00.000Z' } };
const observation = { ...typicalObservation('example-1'), id: 'obs-1' };

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
