/**
 * `npx tsx bench/create-pairs.ts` (PostgreSQL): the database's CPU time per create of two source
 * trees' create statements (src/storage/sql.ts with each tree's indexer), measured side by side:
 * each tree writes to a database of its own (BENCH_TREES and BENCH_DATABASE_URLS, comma-separated,
 * in the same order; fresh databases migrated alike, or one tree named twice on databases whose
 * schemas differ), and the trees take turns in chunks of
 * BENCH_CHUNK creates (default 400), so both see the same load over time and databases of the same
 * size. bench/create-statements.ts runs one setting after the other on one database, where the
 * later setting meets a larger database and another moment's load: on a shared machine that
 * order alone moved figures by more than the differences sought. Per tree and resource: the
 * backend's CPU per create, summed over BENCH_ROUNDS (default 10) turns of BENCH_CREATES creates
 * (default 2,000) each, groups of BENCH_GROUP (default 4). Prints only.
 */
import { randomUUID } from 'node:crypto';
import { loadavg } from 'node:os';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Database } from '../src/db/database.js';
import type { Resource } from '../src/fhir/types.js';
import { typicalObservation, typicalPatient } from './fixtures.js';
import { cpuSeconds } from './process-cpu.js';

const TREES = (process.env.BENCH_TREES ?? '').split(',').filter(Boolean);
const URLS = (process.env.BENCH_DATABASE_URLS ?? '').split(',').filter(Boolean);
if (TREES.length < 2 || TREES.length !== URLS.length) throw new Error('BENCH_TREES and BENCH_DATABASE_URLS name two or more trees and as many databases');
const CHUNK = Number(process.env.BENCH_CHUNK ?? 400);
const CREATES = Number(process.env.BENCH_CREATES ?? 2000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 10);
const GROUP = Number(process.env.BENCH_GROUP ?? 4);

interface Side {
  /** The tree and its database's name: one tree may be measured on databases of different schemas. */
  tree: string;
  db: Database;
  backend: number;
  insertFirstVersions(db: Database, resources: Resource[]): Promise<unknown>;
  seconds: Map<string, number>;
}

const SAME_BACKEND = { planOnce: true, pgValues: true };
const projectId = randomUUID();
const stamped = (resource: Resource): Resource => ({ ...resource, id: randomUUID(), meta: { versionId: randomUUID(), lastUpdated: new Date().toISOString(), project: projectId } });
const kinds: [string, () => Resource][] = [
  ['Patient', () => stamped(typicalPatient())],
  ['Observation', () => stamped(typicalObservation(randomUUID()))],
];

async function open(tree: string, url: string): Promise<Side> {
  const sql = (await import(pathToFileURL(resolve(tree, 'src/storage/sql.ts')).href)) as Pick<Side, 'insertFirstVersions'>;
  const db = await Database.open({ databaseUrl: url, dataDir: '', databasePoolSize: 1, databasePreparedStatements: 1 });
  // Creates go to the pool that plans once (sql.ts, FIRST_VERSIONS): its one connection is the backend measured.
  const [{ pid }] = await db.query<{ pid: number }>('SELECT pg_backend_pid() AS pid', [], SAME_BACKEND);
  return { tree: `${tree} ${new URL(url).pathname.slice(1)}`, db, backend: pid, insertFirstVersions: sql.insertFirstVersions, seconds: new Map() };
}

async function chunk(side: Side, kind: string, make: () => Resource): Promise<void> {
  // The pool replaces a connection idle for 10 s (the other trees' turns under load): ask again.
  [{ pid: side.backend }] = await side.db.query<{ pid: number }>('SELECT pg_backend_pid() AS pid', [], SAME_BACKEND);
  const before = cpuSeconds(side.backend);
  for (let done = 0; done < CHUNK; done += GROUP) await side.insertFirstVersions(side.db, Array.from({ length: GROUP }, make));
  side.seconds.set(kind, (side.seconds.get(kind) ?? 0) + cpuSeconds(side.backend) - before);
}

const sides = await Promise.all(TREES.map((tree, i) => open(tree, URLS[i])));
console.log(`load average at start ${loadavg()[0].toFixed(1)}; ${ROUNDS} rounds of ${CREATES} creates per tree and resource, chunks of ${CHUNK}, groups of ${GROUP}`);
console.log('| round | resource | ' + sides.map((side) => `${side.tree} µs/create`).join(' | ') + ' |');
console.log('|---|---|' + sides.map(() => '---:').join('|') + '|');
for (let round = 0; round < ROUNDS; round++) {
  for (const [kind, make] of kinds) {
    const start = new Map(sides.map((side) => [side, side.seconds.get(kind) ?? 0]));
    // Warm-up of the statement text on each connection before the first chunk counts.
    if (round === 0) for (const side of sides) for (let i = 0; i < 10; i++) await side.insertFirstVersions(side.db, Array.from({ length: GROUP }, make));
    for (let done = 0; done < CREATES; done += CHUNK) {
      // Alternate which tree goes first, so neither always follows the other.
      const order = (done / CHUNK) % 2 === 0 ? sides : [...sides].reverse();
      for (const side of order) await chunk(side, kind, make);
    }
    const per = sides.map((side) => Math.round((((side.seconds.get(kind) ?? 0) - start.get(side)!) * 1e6) / CREATES));
    console.log(`| ${round + 1} | ${kind} | ${per.join(' | ')} |`);
  }
}
const totals = kinds.map(([kind]) => `${kind}: ` + sides.map((side) => `${side.tree} ${Math.round(((side.seconds.get(kind) ?? 0) * 1e6) / (CREATES * ROUNDS))}`).join(', '));
console.log(`\nMean database CPU µs per create over all rounds: ${totals.join('; ')}. Load average at the end ${loadavg()[0].toFixed(1)}.`);
await Promise.all(sides.map((side) => side.db.close()));
