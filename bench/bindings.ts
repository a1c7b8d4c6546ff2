/**
 * In-process cost of the terminology binding check that every create runs (src/terminology/
 * binding-check.ts), after warm-up, on the embedded database: a Patient and an Observation (no
 * required binding on Coding or CodeableConcept: the walk only), and a Condition (two required
 * bindings, decided from the verdicts kept for the terminology revision). The `$validate` form
 * (extensible and preferred bindings too) is measured beside it.
 * Run: npx tsx bench/bindings.ts
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { Database } from '../src/db/database.js';
import { migrate } from '../src/db/migrate.js';
import type { Resource } from '../src/fhir/types.js';
import { bindingCheck } from '../src/terminology/binding-check.js';
import { typicalObservation, typicalPatient } from './fixtures.js';

const condition: Resource = {
  resourceType: 'Condition',
  clinicalStatus: { coding: [{ system: 'http://terminology.hl7.org/CodeSystem/condition-clinical', code: 'active' }] },
  verificationStatus: { coding: [{ system: 'http://terminology.hl7.org/CodeSystem/condition-ver-status', code: 'confirmed' }] },
  code: { coding: [{ system: 'http://snomed.info/sct', code: '38341003' }], text: 'Hypertension' },
  subject: { reference: 'Patient/example-1' },
};

async function measure(db: Database, name: string, resource: Resource, warnings: boolean): Promise<void> {
  const context = { projectId: '00000000-0000-4000-8000-000000000001', db, warnings };
  const found = await bindingCheck(resource, context);
  if (found.some((issue) => issue.severity === 'error')) throw new Error(`${name}: ${JSON.stringify(found)}`);
  for (let i = 0; i < 20_000; i++) await bindingCheck(resource, context);
  const runs = 20_000;
  const start = performance.now();
  for (let i = 0; i < runs; i++) await bindingCheck(resource, context);
  const micros = ((performance.now() - start) * 1000) / runs;
  console.log(`${name.padEnd(14)} ${warnings ? '$validate' : 'write    '} ${micros.toFixed(2)} µs per check`);
}

const dataDir = mkdtempSync(join(tmpdir(), 'flint-bindings-bench-'));
const db = await Database.open({ databaseUrl: undefined, dataDir, databasePoolSize: 1, databasePreparedStatements: 0 });
try {
  await migrate(db);
  for (const warnings of [false, true]) {
    await measure(db, 'Patient', typicalPatient(), warnings);
    await measure(db, 'Observation', typicalObservation('example-1'), warnings);
    await measure(db, 'Condition', condition, warnings);
  }
} finally {
  await db.close();
  rmSync(dataDir, { recursive: true, force: true });
}
