/**
 * `npx tsx bench/create-stages.ts`: the server's CPU per create, stage by stage, in one process
 * without HTTP or a database: parse of the body, structure validation, the write checks
 * (bindings, profiles), stamping, and the group statement (stored JSON, index rows, SQL text),
 * for a typical Patient and Observation. Prints µs per stage after a warm-up.
 */
import { randomUUID } from 'node:crypto';
import type { SqlExecutor } from '../src/db/database.js';
import type { Resource } from '../src/fhir/types.js';
import { registerBuiltins } from '../src/builtins.js';
import { validateResource } from '../src/validation/validator.js';
import { assertResourceChecks } from '../src/validation/resource-checks.js';
import { buildIndexRows } from '../src/indexing/indexer.js';
import { firstVersionsStatement } from '../src/storage/sql.js';
import { typicalObservation, typicalPatient } from './fixtures.js';

registerBuiltins();
const noDb = { query: async () => [], execute: async () => 0 } as unknown as SqlExecutor;
const projectId = randomUUID();

function stamp(input: Resource): Resource {
  const { resourceType, id: _id, meta, ...rest } = input;
  return { resourceType, id: randomUUID(), meta: { ...meta, versionId: randomUUID(), lastUpdated: new Date().toISOString(), project: projectId }, ...rest };
}

async function time(label: string, runs: number, step: () => unknown): Promise<void> {
  for (let i = 0; i < runs / 4; i++) await step();
  // CPU time, not wall time: a shared machine takes the processor away between steps.
  const start = process.cpuUsage();
  for (let i = 0; i < runs; i++) await step();
  const used = process.cpuUsage(start);
  console.log(`${label.padEnd(40)} ${((used.user + used.system) / runs).toFixed(2)} µs`);
}

for (const [name, make] of [['Patient', typicalPatient], ['Observation', () => typicalObservation(randomUUID())]] as const) {
  const body = JSON.stringify(make());
  const parsed = JSON.parse(body) as Resource;
  const stamped = stamp(parsed);
  const runs = Number(process.env.BENCH_RUNS ?? 20_000);
  await time(`${name}: JSON.parse`, runs, () => JSON.parse(body));
  await time(`${name}: validateResource`, runs, () => validateResource(parsed, { expectedType: name }));
  await time(`${name}: assertResourceChecks`, runs, () => assertResourceChecks(parsed, { db: noDb, projectId }));
  await time(`${name}: stamp`, runs, () => stamp(parsed));
  await time(`${name}: JSON.stringify`, runs, () => JSON.stringify(stamped));
  await time(`${name}: buildIndexRows`, runs, () => buildIndexRows(stamped));
  await time(`${name}: firstVersionsStatement (1)`, runs, () => firstVersionsStatement(noDb, [stamped]));
}
