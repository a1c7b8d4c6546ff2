/**
 * `npx tsx bench/account-inheritance.ts`: what a create of an Observation costs a non-admin member
 * (whose writes inherit the accounts of the Observation's patient) on a server started in this
 * process, on the embedded database or on PostgreSQL (BENCH_DATABASE_URL): statements per create,
 * and this process's CPU time per create (server and client share it; compare runs of the same
 * machine state). BENCH_CREATES creates (default 400) after 50 unmeasured ones.
 */
import { cpuUsage } from 'node:process';
import { pino } from 'pino';
import { loadConfig } from '../src/config.js';
import { startServer } from '../src/server.js';
import { typicalObservation, typicalPatient } from './fixtures.js';
import { clientCredentialsToken, newProjectClient } from './flint-process.js';

const DATABASE_URL = process.env.BENCH_DATABASE_URL || undefined;
const CREATES = Number(process.env.BENCH_CREATES ?? 400);
const ADMIN = { id: 'accounts-admin', secret: 'accounts-admin-secret-0123456789' };
const DB_ENV = DATABASE_URL ? { DATABASE_URL } : { DATABASE_URL: '', DATA_DIR: 'memory://' };

async function post(url: string, auth: string, body: unknown): Promise<{ id: string; secret?: string }> {
  const res = await fetch(url, { method: 'POST', headers: { authorization: auth, 'content-type': 'application/fhir+json' }, body: JSON.stringify(body) });
  if (res.status !== 201) throw new Error(`POST ${url}: ${res.status} ${await res.text()}`);
  return (await res.json()) as { id: string; secret?: string };
}

/** A non-admin member ClientApplication of the admin's project, and its bearer token. */
async function memberAuth(base: string, adminAuth: string, projectId: string): Promise<string> {
  const client = await post(`${base}/fhir/R4/ClientApplication`, adminAuth, { resourceType: 'ClientApplication', name: 'member' });
  const profile = { reference: `ClientApplication/${client.id}` };
  await post(`${base}/fhir/R4/ProjectMembership`, adminAuth, { resourceType: 'ProjectMembership', project: { reference: `Project/${projectId}` }, user: profile, profile, admin: false });
  return `Bearer ${await clientCredentialsToken(base, { id: client.id, secret: client.secret! })}`;
}

async function main(): Promise<void> {
  const server = await startServer(
    loadConfig({ PORT: '0', BASE_URL: 'http://localhost/', LOG_LEVEL: 'silent', SUPER_ADMIN_CLIENT_ID: ADMIN.id, SUPER_ADMIN_CLIENT_SECRET: ADMIN.secret, ...DB_ENV }),
    { log: pino({ level: 'silent' }) },
  );
  try {
    const base = server.url.replace(/\/$/, '');
    const adminClient = await newProjectClient(base, await clientCredentialsToken(base, ADMIN), 'Accounts');
    const adminAuth = `Bearer ${await clientCredentialsToken(base, adminClient)}`;
    const projectId = (await (await fetch(`${base}/auth/me`, { headers: { authorization: adminAuth } })).json()) as { project: { id: string } };
    const auth = await memberAuth(base, adminAuth, projectId.project.id);
    const patients: string[] = [];
    for (let i = 0; i < 10; i++) patients.push((await post(`${base}/fhir/R4/Patient`, auth, typicalPatient())).id);
    const create = (i: number) => post(`${base}/fhir/R4/Observation`, auth, typicalObservation(patients[i % patients.length]));
    for (let i = 0; i < 50; i++) await create(i);
    const statements = server.services.db.statementCount;
    const cpu = cpuUsage();
    const started = performance.now();
    for (let i = 0; i < CREATES; i++) await create(i);
    const elapsed = performance.now() - started;
    const used = cpuUsage(cpu);
    console.log(
      `${DATABASE_URL ? 'PostgreSQL' : 'PGlite'}: ${((server.services.db.statementCount - statements) / CREATES).toFixed(2)} statements/create, ` +
        `${((used.user + used.system) / CREATES).toFixed(0)} µs CPU/create, ${(elapsed / CREATES).toFixed(2)} ms/create (sequential)`,
    );
  } finally {
    await server.close();
  }
}

await main();
