/**
 * Cost of building search index rows for one resource: `npx tsx bench/indexing.ts`.
 * Prints µs per resource for the indexer as shipped (fast path + fhirpath.js fallback) and with
 * every expression through fhirpath.js, for a typical Patient and Observation.
 */
import type { Resource } from '../src/fhir/types.js';
import { buildIndexRows } from '../src/indexing/indexer.js';
import { typicalObservation, typicalPatient } from './fixtures.js';
import { collectRows } from '../src/indexing/collect.js';
import { buildPlan, type ParamPlan } from '../src/indexing/plan.js';

const patient: Resource = { ...typicalPatient(), id: 'bench-patient', meta: { project: 'p1' } };
const observation: Resource = { ...typicalObservation('bench-patient'), id: 'bench-observation', meta: { project: 'p1' } };

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
