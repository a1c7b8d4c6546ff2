/**
 * `npx tsx bench/create-statements.ts` (PostgreSQL, BENCH_DATABASE_URL): the database's CPU time
 * per create of the statements creates send (src/storage/sql.ts), without HTTP or a server: one
 * client sends BENCH_CREATES (default 4,000) creates of a typical Patient and of a typical
 * Observation, one statement per group of G creates for each G of BENCH_GROUPS (default 1,4,16),
 * and prints the CPU time of the database's backends per create (read from /proc, so a shared
 * machine disturbs it little). `BENCH_DATABASE_URLS` (comma-separated) measures several
 * databases in turn, e.g. one with an index dropped; `BENCH_TREES` (comma-separated source
 * trees, default `.`) the statements of several trees in turn, in this one process, e.g.
 * `/work/main,.`: each tree's src/storage/sql.ts with its own indexer. Prints only.
 */
import { randomUUID } from 'node:crypto';
import { loadavg } from 'node:os';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Database } from '../src/db/database.js';
import type { Resource } from '../src/fhir/types.js';
import { typicalObservation, typicalPatient } from './fixtures.js';
import { cpuSince, cpuSnapshot } from './process-cpu.js';

const URLS = (process.env.BENCH_DATABASE_URLS ?? process.env.BENCH_DATABASE_URL ?? '').split(',').filter(Boolean);
if (URLS.length === 0) throw new Error('BENCH_DATABASE_URL names the PostgreSQL database to write to');
const CREATES = Number(process.env.BENCH_CREATES ?? 4000);
const GROUPS = (process.env.BENCH_GROUPS ?? '1,4,16').split(',').map(Number);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 2);
const TREES = (process.env.BENCH_TREES ?? '.').split(',').filter(Boolean);

interface Statements {
  insertFirstVersion(db: Database, resource: Resource): Promise<unknown>;
  insertFirstVersions(db: Database, resources: Resource[]): Promise<unknown>;
}
const statementsOf = new Map<string, Statements>();
for (const tree of TREES) statementsOf.set(tree, (await import(pathToFileURL(resolve(tree, 'src/storage/sql.ts')).href)) as Statements);

function stamped(resource: Resource, projectId: string): Resource {
  return { ...resource, id: randomUUID(), meta: { versionId: randomUUID(), lastUpdated: new Date().toISOString(), project: projectId } };
}

async function perCreate(url: string, sql: Statements, make: () => Resource, group: number): Promise<{ database: number; client: number }> {
  const db = await Database.open({ databaseUrl: url, dataDir: '', databasePoolSize: 1, databasePreparedStatements: 1 });
  try {
    // Warm: the connections exist and have planned the statement.
    for (let i = 0; i < 20; i++) await write(db, sql, make, group);
    const before = await cpuSnapshot(process.pid, url);
    for (let done = 0; done < CREATES; done += group) await write(db, sql, make, group);
    const used = await cpuSince(process.pid, url, before);
    return { database: (used.database * 1e6) / CREATES, client: (used.server * 1e6) / CREATES };
  } finally {
    await db.close();
  }
}

function write(db: Database, sql: Statements, make: () => Resource, group: number): Promise<unknown> {
  return group === 1 ? sql.insertFirstVersion(db, make()) : sql.insertFirstVersions(db, Array.from({ length: group }, make));
}

const projectId = randomUUID();
const patients: string[] = [];
const kinds: [string, () => Resource][] = [
  ['Patient', () => {
    const patient = stamped(typicalPatient(), projectId);
    patients.push(patient.id!);
    return patient;
  }],
  ['Observation', () => stamped(typicalObservation(patients[Math.floor(Math.random() * patients.length)] ?? 'none'), projectId)],
];
console.log(`load average at start ${loadavg()[0].toFixed(1)}; ${CREATES} creates per row, one client`);
console.log('| database | tree | resource | creates per statement | database CPU µs/create | client CPU µs/create |');
console.log('|---|---|---|---:|---:|---:|');
for (let round = 0; round < ROUNDS; round++) {
  for (const [name, make] of kinds) {
    for (const group of GROUPS) {
      for (const url of URLS) {
        for (const [tree, sql] of statementsOf) {
          const { database, client } = await perCreate(url, sql, make, group);
          console.log(`| ${new URL(url).pathname.slice(1)} | ${tree} | ${name} | ${group} | ${Math.round(database)} | ${Math.round(client)} |`);
        }
      }
    }
  }
}
console.log(`load average at the end ${loadavg()[0].toFixed(1)}`);
