/**
 * The two servers of bench/side-by-side.ts (from the environment, or a Flint this tree starts) and
 * the data written to each through its own FHIR API: the same shapes on both, ids as each server
 * assigned them.
 */
import type { ChildProcess } from 'node:child_process';
import { clientCredentialsToken, launchFlint, newProjectClient, type BenchClient } from './flint-process.js';
import { FAMILIES, LOINC } from './search-data.js';
import { pidsFromEnv } from './side-by-side-turns.js';

/** A server under test: its FHIR base, a project client's token and what was written to it. */
export interface Side {
  readonly name: string;
  readonly base: string;
  readonly fhir: string;
  readonly token: string;
  /** Its server's processes, stopped while another side is measured (side-by-side-turns.ts). */
  readonly pids: readonly number[];
  patientIds: string[];
}

export const MRN_SYSTEM = 'http://side-by-side.example.org/mrn';
/** Tells this run's identifiers from an earlier run's on the same server. */
export const RUN_TAG = Date.now().toString(36);

const rand = (n: number) => Math.floor(Math.random() * n);
export const pick = <T>(list: readonly T[]): T => list[rand(list.length)];

/** The nth Patient of a run: a family from FAMILIES, so a three-letter prefix finds a share of them. */
export function patient(n: number): Record<string, unknown> {
  return {
    resourceType: 'Patient',
    identifier: [{ system: MRN_SYSTEM, value: `${RUN_TAG}-${n}` }],
    name: [{ family: `${pick(FAMILIES)}${rand(997)}`, given: ['Alex', 'Sam'] }],
    gender: pick(['male', 'female']),
    birthDate: `19${50 + rand(50)}-0${1 + rand(9)}-1${rand(10)}`,
    address: [{ line: [`${1 + rand(999)} Main St`], city: 'Springfield', postalCode: '12345' }],
    telecom: [{ system: 'phone', value: `555-${1000 + rand(9000)}` }],
  };
}

/** An Observation about `patientId` with the LOINC code `code` (a random one if not given). */
export function observation(patientId: string, code = pick(LOINC)): Record<string, unknown> {
  return {
    resourceType: 'Observation',
    status: 'final',
    code: { coding: [{ system: 'http://loinc.org', code }] },
    subject: { reference: `Patient/${patientId}` },
    effectiveDateTime: new Date(Date.UTC(2020, 0, 1) + rand(1800) * 86_400_000).toISOString(),
    valueQuantity: { value: 40 + rand(100), unit: 'mmHg', system: 'http://unitsofmeasure.org', code: 'mm[Hg]' },
  };
}

/** Runs `task(0..count-1)` from `width` loops at once. */
async function inParallel(count: number, width: number, task: (n: number) => Promise<void>): Promise<void> {
  let next = 0;
  const loop = async () => {
    while (next < count) await task(next++);
  };
  await Promise.all(Array.from({ length: width }, loop));
}

async function create(side: Side, resource: Record<string, unknown>): Promise<string> {
  const res = await fetch(`${side.fhir}/${resource.resourceType as string}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${side.token}`, 'content-type': 'application/fhir+json' },
    body: JSON.stringify(resource),
  });
  const body = (await res.json()) as { id?: string };
  if (res.status !== 201 || !body.id) throw new Error(`${side.name}: seed create failed: ${res.status} ${JSON.stringify(body).slice(0, 300)}`);
  return body.id;
}

/** The codes every seeded Patient has an Observation of (see seed). */
export const seededCodes = (patients: number, observations: number): readonly string[] =>
  LOINC.slice(0, Math.max(1, Math.min(LOINC.length, Math.floor(observations / patients))));

/**
 * Writes `patients` Patients and `observations` Observations through the API: Observation n is about
 * Patient n mod `patients` with code LOINC[n div `patients`], so that each Patient has one of each of
 * the seededCodes (a search by subject and one of them finds a row).
 */
export async function seed(side: Side, patients: number, observations: number): Promise<number> {
  const started = performance.now();
  side.patientIds = new Array<string>(patients);
  await inParallel(patients, 16, async (n) => {
    side.patientIds[n] = await create(side, patient(n));
  });
  await inParallel(observations, 16, async (n) => {
    await create(side, observation(side.patientIds[n % patients], LOINC[Math.floor(n / patients) % LOINC.length]));
  });
  return (performance.now() - started) / 1000;
}

/**
 * Side `letter` (A or B) from SIDE_<letter>_URL, _CLIENT_ID, _CLIENT_SECRET (and _NAME). With
 * SIDE_<letter>_INIT=1 the client is a super admin's: a new project is made by Project/$init (both
 * Flint and Medplum have it) and its own ClientApplication is used, as an app's would be;
 * SIDE_<letter>_INIT=ownerless makes it without an owner (Medplum cannot make the owner's User
 * offline: it checks the password against a web service; Flint needs an owner for a client's token).
 */
export async function sideFromEnv(letter: 'A' | 'B'): Promise<Side | undefined> {
  const env = (key: string) => process.env[`SIDE_${letter}_${key}`];
  const base = env('URL')?.replace(/\/$/, '');
  if (!base) return undefined;
  const given: BenchClient = { id: env('CLIENT_ID') ?? '', secret: env('CLIENT_SECRET') ?? '' };
  const name = env('NAME') ?? `server ${letter}`;
  const init = env('INIT');
  const client = init ? await newProjectClient(base, await clientCredentialsToken(base, given), `side-by-side ${RUN_TAG}`, init !== 'ownerless') : given;
  return { name, base, fhir: `${base}/fhir/R4`, token: await clientCredentialsToken(base, client), pids: pidsFromEnv(letter), patientIds: [] };
}

const FLINT_ADMIN: BenchClient = { id: 'side-by-side-admin', secret: 'side-by-side-admin-secret-0123456789' };

/**
 * Flint of this tree on FLINT_DATABASE_URL (and FLINT_REDIS_URL if set) and BENCH_PORT, started as
 * `npm start` runs it, in a new project. Its statistics keeper is off (STATISTICS_INTERVAL_MS=0) unless BENCH_FLINT_STATISTICS=1:
 * neither server's tables are analyzed during the run.
 */
export async function startFlintSide(): Promise<{ side: Side; child: ChildProcess } | undefined> {
  const databaseUrl = process.env.FLINT_DATABASE_URL;
  if (!databaseUrl) return undefined;
  const port = Number(process.env.BENCH_PORT ?? 18400);
  const child = await launchFlint(port, {
    DATABASE_URL: databaseUrl,
    LOG_LEVEL: 'warn',
    ...(process.env.FLINT_REDIS_URL ? { REDIS_URL: process.env.FLINT_REDIS_URL } : {}),
    SUPER_ADMIN_CLIENT_ID: FLINT_ADMIN.id,
    SUPER_ADMIN_CLIENT_SECRET: FLINT_ADMIN.secret,
    ...(process.env.BENCH_FLINT_STATISTICS === '1' ? {} : { STATISTICS_INTERVAL_MS: '0' }),
  });
  const base = `http://127.0.0.1:${port}`;
  const client = await newProjectClient(base, await clientCredentialsToken(base, FLINT_ADMIN), `side-by-side ${RUN_TAG}`);
  const side: Side = { name: 'Flint', base, fhir: `${base}/fhir/R4`, token: await clientCredentialsToken(base, client), pids: child.pid ? [child.pid] : [], patientIds: [] };
  return { side, child };
}
